"""Bayesian model averaging (Eq. 2.2) and the power heuristic (Eq. 2.3)."""

from __future__ import annotations

import numpy as np
import pytest

from aggregators import BMA, PowerBMA, simple_average
from aggregators.average import kfold_indices
from aggregators.bma import bma_log_weights, weighted_mixture
from aggregators.validation import PredictionError

from .test_average import make_agents


def test_bma_weights_are_the_posterior():
    lp, y = make_agents(n=5, a=3)
    est = BMA().fit(lp, y)
    like = np.array([np.prod(np.exp(lp[np.arange(5), i, y])) for i in range(3)])  # small n: no underflow
    np.testing.assert_allclose(est.weights_, like / like.sum(), rtol=1e-10)
    mix = np.log(np.einsum("i,nik->nk", like / like.sum(), np.exp(lp)))
    np.testing.assert_allclose(est.predict(lp), mix, atol=1e-12)


def test_bma_collapses_onto_the_best_agent():
    lp, y = make_agents(n=1000, a=6, noise=[0.9, 0.5, 1.0, 1.1, 1.2, 1.3])
    est = BMA().fit(lp, y)
    best = int(np.argmax(lp[np.arange(1000), :, y].sum(0)))
    assert int(np.argmax(est.weights_)) == best
    assert est.weights_[best] > 1 - 1e-6
    np.testing.assert_allclose(est.predict(lp), lp[:, best], atol=1e-5)
    assert np.isfinite(est.log_evidence_).all() and est.log_evidence_.max() < -100  # exp() would underflow


def test_power_bma_limits():
    lp, y = make_agents(n=100, a=5)
    np.testing.assert_allclose(PowerBMA(alpha=0.0).fit(lp, y).predict(lp), simple_average(lp), atol=1e-12)
    np.testing.assert_allclose(PowerBMA(alpha=1.0).fit(lp, y).predict(lp), BMA().fit(lp, y).predict(lp), atol=1e-12)
    big = PowerBMA(alpha=1e6).fit(lp, y)  # log space: no overflow at a huge power
    assert np.isfinite(big.weights_).all() and big.weights_.max() == pytest.approx(1.0)


def test_bma_log_weights_overflow_safe_and_minus_inf():
    lw = bma_log_weights([-1e5, -1e5 - np.log(3), -np.inf], 1.0)
    np.testing.assert_allclose(np.exp(lw), [0.75, 0.25, 0.0], atol=1e-12)
    np.testing.assert_allclose(np.exp(bma_log_weights([-1e5, -2e5], 0.0)), 0.5)
    for bad in [[np.nan, 0.0], [np.inf, 0.0], [-np.inf, -np.inf], [], [[0.0]]]:
        with pytest.raises(PredictionError):
            bma_log_weights(bad)
    for alpha in [-1.0, np.inf, "x"]:
        with pytest.raises(PredictionError):
            bma_log_weights([0.0, 1.0], alpha)


def _brute_force_alpha_curve(lp, y, grid, n_folds, seed):
    n = len(y)
    tot = np.zeros(len(grid))
    for tr, te in kfold_indices(n, n_folds, seed):
        ev = np.array([lp[tr, i, y[tr]].sum() for i in range(lp.shape[1])]) * n / len(tr)
        for g, a in enumerate(grid):
            w = np.exp(a * (ev - ev.max()))
            w /= w.sum()
            p = np.einsum("i,nik->nk", w, np.exp(lp[te]))
            tot[g] += np.log(p[np.arange(len(te)), y[te]]).sum()
    return tot / n


def test_power_bma_cv_curve_matches_brute_force():
    lp, y = make_agents(n=120, a=5, noise=[0.5, 0.6, 0.7, 0.8, 2.0])
    grid = [0.0, 0.001, 0.01, 0.1, 1.0]
    est = PowerBMA(alpha_grid=grid, n_folds=4, random_state=1).fit(lp, y)
    ref = _brute_force_alpha_curve(lp, y, grid, 4, 1)
    np.testing.assert_allclose(est.validation_curve_["score"], ref, atol=1e-10)
    assert est.alpha_ == grid[int(np.argmax(ref))]
    ev = np.array([lp[np.arange(120), i, y].sum() for i in range(5)])
    w = np.exp(est.alpha_ * (ev - ev.max()))
    np.testing.assert_allclose(est.weights_, w / w.sum(), rtol=1e-10)


def test_power_bma_chooses_interior_alpha_for_similar_agents():
    # several equally good agents with independent errors: averaging beats selecting, but the bad
    # agent should be down-weighted -> an intermediate alpha wins on held-out data
    lp, y = make_agents(n=400, a=6, noise=[0.8, 0.8, 0.8, 0.8, 3.0, 3.0], seed=4)
    est = PowerBMA().fit(lp, y)
    curve = est.validation_curve_["score"]
    assert 0 < est.alpha_ < 1.0
    assert curve.max() > curve[0] and curve.max() > curve[-1]
    assert est.weights_[4:].sum() < 0.05


def test_power_bma_errors():
    lp, y = make_agents(n=30, a=3)
    for bad in [dict(alpha=-1.0), dict(alpha_grid=[-1.0]), dict(alpha_grid=[]), dict(alpha_grid=[np.nan])]:
        with pytest.raises(PredictionError):
            PowerBMA(**bad).fit(lp, y)
    with pytest.raises(PredictionError):
        PowerBMA().fit(lp, None)


def test_weighted_mixture_drops_zero_weight_agents():
    lp, _ = make_agents(n=10, a=3)
    with np.errstate(divide="ignore"):
        lw = np.log(np.array([0.5, 0.5, 0.0]))
        np.testing.assert_allclose(weighted_mixture(lp, lw), simple_average(lp, [0, 1]), atol=1e-12)


def test_predict_before_fit_is_a_clear_error():
    from aggregators import TopKAverage

    lp, _ = make_agents(n=5, a=3)
    for est in (BMA(), PowerBMA(), TopKAverage()):
        with pytest.raises(ValueError, match="not fitted"):
            est.predict(lp)
