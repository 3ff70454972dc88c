"""Metrics against closed forms and independent computations (scipy, explicit loops)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import entropy

from aggregators.metrics import brier_score, check_aggregate, kl_divergence, log_loss, perplexity, reliability
from aggregators.validation import PredictionError


def agg(n=50, k=4, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), size=n)
    y = np.array([rng.choice(k, p=r) for r in p])
    return np.log(p), y


def test_uniform_closed_forms():
    k = 64
    lp = np.full((10, k), -np.log(k))
    y = np.arange(10) % k
    assert log_loss(lp, y) == pytest.approx(np.log(k), rel=1e-14)
    assert perplexity(lp, y) == pytest.approx(64.0, rel=1e-12)  # the seed's dummy baseline (section 2.7.3)
    assert brier_score(lp, y) == pytest.approx((1 - 1 / k) ** 2 + (k - 1) / k**2, rel=1e-12)
    assert kl_divergence(np.full(k, 1 / k), lp) == pytest.approx(0.0, abs=1e-14)


def test_log_loss_perplexity_brier_against_loops():
    lp, y = agg()
    p = np.exp(lp)
    ll = -np.mean([np.log(p[n, y[n]]) for n in range(len(y))])
    assert log_loss(lp, y) == pytest.approx(ll, rel=1e-13)
    assert perplexity(lp, y) == pytest.approx(np.exp(ll), rel=1e-13)
    br = np.mean([sum((p[n, c] - (c == y[n])) ** 2 for c in range(4)) for n in range(len(y))])
    assert brier_score(lp, y) == pytest.approx(br, rel=1e-13)
    assert brier_score(np.log(np.eye(4)[y] * (1 - 3e-12) + 1e-12), y) == pytest.approx(0.0, abs=1e-20)


def test_zero_probability_on_a_label_gives_infinite_loss():
    with np.errstate(divide="ignore"):
        lp = np.log(np.array([[1.0, 0.0], [0.5, 0.5]]))
    assert log_loss(lp, [1, 0]) == np.inf and perplexity(lp, [1, 0]) == np.inf
    assert log_loss(lp, [0, 0]) == pytest.approx(np.log(2) / 2)


def test_kl_against_scipy_entropy():
    lp, _ = agg(n=7, k=6, seed=2)
    t = np.random.default_rng(3).dirichlet(np.ones(6), size=7)
    ref = np.mean([entropy(t[n], np.exp(lp[n])) for n in range(7)])
    assert kl_divergence(t, lp) == pytest.approx(ref, rel=1e-12)
    # one target for all items; 1-D aggregate = one item
    assert kl_divergence(t[0], lp[0]) == pytest.approx(entropy(t[0], np.exp(lp[0])), rel=1e-12)
    # zeros in the target contribute nothing; zeros in P under target mass give inf
    t0 = np.array([0.5, 0.5, 0.0])
    with np.errstate(divide="ignore"):
        assert kl_divergence(t0, np.log([0.25, 0.25, 0.5])) == pytest.approx(np.log(2))
        assert kl_divergence([0.5, 0.25, 0.25], np.log([0.5, 0.5, 0.0])) == np.inf


def test_reliability_against_loop():
    lp, y = agg(n=300, k=3, seed=5)
    r = reliability(lp, y, n_bins=5)
    p = np.exp(lp)
    conf, pred = p.max(1), p.argmax(1)
    for b in range(5):
        lo, hi = b / 5, (b + 1) / 5
        m = (conf >= lo) & ((conf < hi) if b < 4 else (conf <= hi))
        assert r.counts[b] == m.sum()
        if m.any():
            assert r.confidence[b] == pytest.approx(conf[m].mean(), rel=1e-12)
            assert r.accuracy[b] == pytest.approx((pred[m] == y[m]).mean(), rel=1e-12)
        else:
            assert np.isnan(r.confidence[b]) and np.isnan(r.accuracy[b])
    assert r.counts.sum() == 300
    assert r.counts[0] == 0  # top-label confidence of 3 classes is >= 1/3 > 0.2
    ece = sum(r.counts[b] / 300 * abs(r.accuracy[b] - r.confidence[b]) for b in range(5) if r.counts[b])
    assert r.ece == pytest.approx(ece, rel=1e-12)
    d = r.to_dict()
    json.dumps(d)
    assert d["confidence"][0] is None and len(d["bin_edges"]) == 6


def test_reliability_of_calibrated_predictor_is_small():
    # labels drawn from the prediction itself: accuracy tracks confidence
    lp, y = agg(n=20000, k=3, seed=6)
    assert reliability(lp, y, n_bins=10).ece < 0.02


@pytest.mark.parametrize(
    "bad,code",
    [
        (np.full((3, 1, 2), -np.log(2)), "bad_shape"),
        (np.array([[0.0, np.nan]]), "nan"),
        (np.array([[np.inf, 0.0]]), "inf"),
        (np.log([[0.5, 0.6]]), "not_normalised"),
        (np.array([[-np.inf, -np.inf]]), "zero_row"),
        ([[0.0, 1.0], [0.0]], "not_numeric_or_ragged"),
    ],
)
def test_aggregate_validation(bad, code):
    with pytest.raises(PredictionError) as ei:
        check_aggregate(bad)
    assert ei.value.code == code


def test_label_and_target_validation():
    lp, y = agg(n=5, k=4)
    with pytest.raises(PredictionError) as ei:
        log_loss(lp, [0, 1, 2, 3, 4])
    assert ei.value.code == "unknown_class" and ei.value.item == 4
    with pytest.raises(PredictionError):
        brier_score(lp, [0, 1])
    for t in [np.ones(3) / 3, [0.5, 0.6, -0.1, 0.0], [0.5, 0.6, 0.0, 0.0], [np.nan, 1, 0, 0]]:
        with pytest.raises(PredictionError):
            kl_divergence(t, lp)
    with pytest.raises(PredictionError):
        reliability(lp, y, n_bins=0)
