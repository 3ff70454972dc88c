"""The Ch 7 reproduction (reproductions/scale_free_prior.py): the short version in the normal suite,
the full one (30 graphs per family) marked slow."""

import numpy as np
import pytest

from tests.reproduction_scripts import load_reproduction

sfp = load_reproduction("scale_free_prior")


def check(out, tmp_path, min_auc):
    assert (tmp_path / "sfp.md").read_text().startswith("# Scale-free prior reproduction")
    assert (tmp_path / "sfp.png").stat().st_size > 10_000
    for kind, cur in out["curves"].items():
        for m in sfp.METHODS:
            fpr, tpr = cur[m][:, 0], cur[m][:, 1]
            assert fpr[0] <= 0.01, (kind, m)  # the strongest strength: (almost) no false edge
            assert tpr[-1] >= 0.8, (kind, m)  # the weakest: most true edges found
            assert sfp.auc(cur[m]) >= min_auc, (kind, m)
    conv = out["conv"]
    # Fig 7.3: dual decomposition converges, the subgradient method far more slowly
    assert conv["dd"][49] < 1e-6
    assert conv["sg"][49] > 1e3 * conv["dd"][49]
    # ... and the minimum-norm point in between: descending, behind DD (the seed's order)
    assert conv["mnp"][49] > 10 * conv["dd"][49] and conv["mnp"][49] < conv["sg"][49]
    assert conv["mnp"][-1] < conv["mnp"][9] < conv["mnp"][0]
    for _sec, edges, s in out["runtime"].values():
        assert edges > 0 and s in sfp.GRID


def test_short_reproduction(tmp_path):
    out = sfp.main(["--short", "--out", str(tmp_path / "sfp")])
    check(out, tmp_path, min_auc=0.85)


@pytest.mark.slow
def test_full_reproduction(tmp_path):
    out = sfp.main(["--out", str(tmp_path / "sfp")])
    check(out, tmp_path, min_auc=0.9)
    assert all(len(v) == len(sfp.GRID) for cur in out["curves"].values() for v in cur.values())
    assert np.isfinite([v[0] for v in out["runtime"].values()]).all()


gene = load_reproduction("gene_network")


def check_gene(out, target):
    A = np.triu(out["A"], 1)
    chance = A.sum() / (A.shape[0] * (A.shape[0] - 1) / 2)  # precision of a random edge set
    for m in gene.METHODS:
        r = out[m]
        assert abs(r["edges"] - target) <= target // 2, (m, r["edges"])
        assert r["true"] == int((r["E"] & A).sum())
    for m in ("l1", "reweighted l1"):
        assert out[m]["true"] / out[m]["edges"] > 5 * chance, m


def test_gene_network_short(tmp_path):
    out = gene.main(["--short", "--out", str(tmp_path / "gene")])
    assert (tmp_path / "gene.png").stat().st_size > 10_000
    check_gene(out, 20)


@pytest.mark.slow
def test_gene_network_full(tmp_path):
    check_gene(gene.main(["--out", str(tmp_path / "gene")]), 50)
