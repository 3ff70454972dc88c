"""Seed 002 Figs 36-44 (reproductions/consensus_admm.py): a short version here, the full one slow."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

_PATH = Path(__file__).resolve().parents[2] / "reproductions" / "consensus_admm.py"
_spec = importlib.util.spec_from_file_location("consensus_admm_reproduction", _PATH)
repro = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(repro)


def _check(out):
    rate = {name: repro._rate(row["best"]) for name, row in out["topologies"].items()}
    # linear convergence at every topology's best beta (Thm 13); the full run's chain: 0.065 decades/round
    assert min(rate.values()) > 0.05, rate
    # the seed's ranking at the best beta: complete bipartite and master-slave fastest, then (3,3)-biregular,
    # all of them faster than the sparse ones (trees, ring)
    for fast in ("complete_bipartite", "master_slave"):
        for slow in ("bucky_tree", "ring", "chain"):
            assert rate[fast] > 1.2 * rate[slow], rate
    assert rate["biregular"] > rate["ring"]
    assert rate["chain"] <= min(rate.values()) * 1.01  # the chain is the slowest (seed, Fig. 40)
    # a fixed beta converges linearly for every beta of Figs 38-39, faster as beta grows towards its best
    fig38 = [repro._rate(r) for r in out["fig38"].values()]
    assert min(fig38) > 0.01
    text = repro.report(out)
    assert "Fig. 36" in text and "Figs 43-44" in text


def test_short_reproduction():
    _check(repro.run(short=True, dask=False))


@pytest.mark.slow
def test_full_reproduction(tmp_path):
    out = repro.run(short=False, grid=30, dask=True)
    _check(out)
    assert out["dask"]["max_vector_diff"] < 1e-9
    repro.plots(out, tmp_path)
    assert len(list(tmp_path.glob("*.png"))) == 4
    # eq. 152 near the grid's best at alpha = 100 (seed: within 2%); at alpha = 1 it is 7x off here
    # (53 vs 7.3, reproductions/consensus_admm.md), which the test does not hide by a loose bound
    assert 0.75 < out["ridge"][100.0]["sqrt"] / out["ridge"][100.0]["best"] < 1.33
    assert np.isfinite(out["topologies"]["master_slave"]["best_beta_right_first"])
