"""The market simulation with real, biased classifiers (reproductions/market_simulation.py)."""

import itertools
import json

import numpy as np
import pytest
from scipy import stats

from tests.reproduction_scripts import load_reproduction

sim = load_reproduction("market_simulation")


def test_biased_subset_is_annealed_rejection():
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(4), 5000)
    idx0 = sim.biased_subset(y, 0.0, rng)
    counts0 = np.bincount(y[idx0], minlength=4) / 5000
    np.testing.assert_allclose(counts0, 0.5, atol=0.03)  # beta = 0: a random half, no bias
    rng = np.random.default_rng(1)
    f = np.random.default_rng(1).uniform(0, 1, 4)
    idx = sim.biased_subset(y, 3.0, rng)
    frac = np.bincount(y[idx], minlength=4) / 5000
    np.testing.assert_allclose(frac, 0.5 * (f / f.max()) ** 3, atol=0.03)


def _exact_wilcoxon_two_sided(d):
    """Brute force: the signed-rank statistic over all 2^n sign patterns (no ties, no zeros)."""
    r = stats.rankdata(np.abs(d))
    w_obs = r[d > 0].sum()
    w = np.array([sum(ri for ri, s in zip(r, signs) if s) for signs in itertools.product((0, 1), repeat=d.size)])
    return min(1.0, 2.0 * min((w <= w_obs).mean(), (w >= w_obs).mean()))


def test_paired_test_matches_independent_references():
    rng = np.random.default_rng(3)
    a = rng.normal(0.5, 0.1, 9)
    b = a + rng.normal(-0.03, 0.04, 9)  # distinct |differences|: the exact Wilcoxon distribution applies
    out = sim.paired_test(a, b)
    ref = stats.ttest_rel(a, b)
    d = a - b
    assert out["n"] == 9 and out["n_negative"] == int((d < 0).sum())
    np.testing.assert_allclose(out["mean"], d.mean(), rtol=1e-12)
    np.testing.assert_allclose(out["se"], d.std(ddof=1) / 3.0, rtol=1e-12)
    np.testing.assert_allclose(out["t"], ref.statistic, rtol=1e-10)
    np.testing.assert_allclose(out["p_t"], ref.pvalue, rtol=1e-8)
    np.testing.assert_allclose(out["p_wilcoxon"], _exact_wilcoxon_two_sided(d), rtol=1e-12)
    assert 0 < out["p_wilcoxon"] < 1 and 0 < out["p_t"] < 1
    # a NaN pair is dropped; one pair gives no test
    a2, b2 = np.append(a, np.nan), np.append(b, 0.3)
    np.testing.assert_allclose(sim.paired_test(a2, b2)["p_t"], ref.pvalue, rtol=1e-8)
    one = sim.paired_test(a[:1], b[:1])
    assert one["n"] == 1 and np.isnan(one["p_t"]) and np.isnan(one["p_wilcoxon"])


def test_paired_results_pair_by_seed_and_pool_settings():
    rng = np.random.default_rng(0)
    records, x, z = [], {}, {}
    for ds, beta in (("wine", 0.0), ("digits", 2.0)):
        for seed in (2, 0, 1):  # out of order on purpose: pairing is by seed
            x[ds, seed], z[ds, seed] = rng.random(), rng.random()
            records.append(
                {
                    "dataset": ds,
                    "beta": beta,
                    "seed": seed,
                    "methods": {
                        "isoelastic market eta=10": {"nll": x[ds, seed], "acc": 1.0},
                        "log market (linear pool)": {"nll": z[ds, seed], "acc": 1.0},
                    },
                }
            )
    row = sim.paired_results(records)[0]
    assert row["a"] == "isoelastic market eta=10" and row["b"] == "log market (linear pool)"
    for ds, beta in (("wine", 0.0), ("digits", 2.0)):
        xs, zs = [x[ds, s] for s in range(3)], [z[ds, s] for s in range(3)]
        np.testing.assert_allclose(row["settings"][f"{ds}, beta={beta:g}"]["p_t"], stats.ttest_rel(xs, zs).pvalue)
    allx = [x[k] for k in sorted(x, key=lambda k: (k[0] != "wine", k[1]))]
    allz = [z[k] for k in sorted(z, key=lambda k: (k[0] != "wine", k[1]))]
    np.testing.assert_allclose(row["pooled"]["p_t"], stats.ttest_rel(allx, allz).pvalue)
    assert row["pooled"]["n"] == 6


def test_short_simulation_runs_and_round_trips_json(tmp_path):
    path = tmp_path / "r.json"
    records = sim.main(["--short", "--json", str(path)])
    (rec,) = records
    nll = np.array([v["nll"] for v in rec["methods"].values()])
    acc = np.array([v["acc"] for v in rec["methods"].values()])
    assert np.isfinite(nll).all() and ((acc >= 0) & (acc <= 1)).all()
    # every market is a proper aggregate: no worse than the uniform guess on the 3 wine classes
    for n, v in rec["methods"].items():
        if "market" in n:
            assert v["nll"] < np.log(3)
    # the saved file rebuilds the same records (tables and tests are recomputed from it)
    saved = json.loads(path.read_text())
    assert saved["records"] == json.loads(json.dumps(records))
    assert sim.main(["--from-json", str(path)]) == saved["records"]


@pytest.mark.slow
def test_full_simulation(tmp_path):
    records = sim.main(["--plot", str(tmp_path / "w.png"), "--json", str(tmp_path / "r.json")])
    assert len(records) == 60 and (tmp_path / "w.png").exists() and (tmp_path / "r.json").exists()
