"""The market simulation with real, biased classifiers (reproductions/market_simulation.py)."""

import importlib.util
import os

import numpy as np
import pytest

_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "reproductions", "market_simulation.py")
_spec = importlib.util.spec_from_file_location("market_simulation", _PATH)
sim = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sim)


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


def test_short_simulation_runs_and_is_consistent():
    table = sim.main(short=True)
    (names, nll, acc), = table.values()
    assert np.isfinite(nll).all() and ((acc >= 0) & (acc <= 1)).all()
    r = dict(zip(names, nll[0]))
    # every market is a proper aggregate: no worse than the uniform guess on the 3 wine classes
    for n, v in r.items():
        if "market" in n:
            assert v < np.log(3)


@pytest.mark.slow
def test_full_simulation(tmp_path):
    table = sim.main(["--plot", str(tmp_path / "w.png")])
    assert len(table) == 6 and (tmp_path / "w.png").exists()
