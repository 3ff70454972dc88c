"""Task 1 (Algorithm 2.2): the generator, the count-weighted Rényi fit it uses, and the reproduction."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

from aggregators.logpool import LogPool
from aggregators.renyi_pool import RenyiPool
from aggregators.synthetic import (
    DEFAULT_BETAS,
    CountedRenyiProblem,
    discretised_normal,
    fit_counted_pool,
    make_biased_agents_task,
)
from aggregators.validation import apply_floor, as_log_probs
from tests.reproduction_scripts import load_reproduction

ROOT = Path(__file__).resolve().parents[2]


def load_script():
    return load_reproduction("task1_bias")


SMALL = dict(n_agents=5, n_classes=16, n_validation=60, mean=8.0, sd=16 / 7, n_accept=2000)


# -- the generator --------------------------------------------------------------------------------
def test_target_is_the_discretised_normal():
    p = discretised_normal()
    k = np.arange(64)
    ref = norm.cdf(k + 0.5, 32, 64 / 7) - norm.cdf(k - 0.5, 32, 64 / 7)
    np.testing.assert_allclose(p, ref / ref.sum(), rtol=1e-12)
    mean = p @ k
    assert abs(mean - 32) < 0.05 and abs(np.sqrt(p @ (k - mean) ** 2) - 64 / 7) < 0.05  # sd, not variance
    with pytest.raises(ValueError):
        discretised_normal(1)


def test_seed_defaults_and_structure():
    t = make_biased_agents_task(3)
    assert (t.n_agents, t.n_classes, t.validation.size, t.n_accept) == (10, 64, 100, 10_000)
    np.testing.assert_array_equal(t.betas, DEFAULT_BETAS)
    np.testing.assert_allclose(DEFAULT_BETAS, np.arange(0, 4.01, 0.5))
    assert ((t.bias >= 0) & (t.bias <= 1)).all()
    for beta in (0.0, 4.0):
        c = t.counts(beta)
        assert (c.sum(axis=1) == 10_000).all()
    np.testing.assert_allclose(t.accept_probs(2.0).max(axis=1), 1.0)
    np.testing.assert_allclose(t.accept_probs(2.0), t.bias**2 / (t.bias**2).max(axis=1, keepdims=True), rtol=1e-12)
    lp = t.log_probs(1.0)
    assert lp.shape == (100, 10, 64) and (lp[0] == lp[-1]).all()


def test_first_kept_points_follow_the_streams():
    t = make_biased_agents_task(1, **SMALL)
    acc = t.accept_probs(1.5)
    i = 2
    kept = [y for y, u in zip(t.streams[i], t.uniforms[i]) if u < acc[i, y]][: t.n_accept]  # explicit loop
    np.testing.assert_array_equal(t.counts(1.5)[i], np.bincount(kept, minlength=16))


def test_shared_base_makes_unbiased_agents_identical():
    t = make_biased_agents_task(2, shared_base=True, **SMALL)
    c = t.counts(0.0)
    assert (c == c[0]).all()
    ti = make_biased_agents_task(2, shared_base=False, **SMALL)
    assert not (ti.counts(0.0) == ti.counts(0.0)[0]).all()


def test_biased_agent_distribution_matches_theory():
    # an agent's kept points are distributed as P*(y) f*(y) / Z: check with many kept points
    t = make_biased_agents_task(5, n_agents=2, n_classes=8, mean=4, sd=2.0, n_accept=200_000, betas=[2.0])
    expected = t.target * t.accept_probs(2.0)
    expected /= expected.sum(axis=1, keepdims=True)
    emp = t.agent_probs(2.0)
    assert np.abs(emp - expected).sum(axis=1).max() < 0.02  # total variation ~ sqrt(K/n) scale


def test_smoothing_and_zero_counts():
    t = make_biased_agents_task(0, betas=[4.0], n_accept=500, n_classes=64, n_agents=3)
    assert (t.counts(4.0) == 0).any()  # zero counts do happen
    with np.errstate(divide="ignore"):
        assert np.isneginf(t.log_probs(4.0)).any()
    ts = make_biased_agents_task(0, betas=[4.0], n_accept=500, n_classes=64, n_agents=3, smoothing=0.5)
    p = ts.agent_probs(4.0)
    np.testing.assert_allclose(p, (t.counts(4.0) + 0.5) / (500 + 32), rtol=1e-12)


def test_generator_rejects_bad_parameters():
    for bad in [dict(n_agents=0), dict(n_classes=1), dict(n_accept=2.5), dict(smoothing=-1), dict(betas=[-1.0])]:
        with pytest.raises(ValueError):
            make_biased_agents_task(0, **bad)


# -- the count-weighted fit --------------------------------------------------------------------------
def small_problem(beta=2.0):
    t = make_biased_agents_task(0, shared_base=True, **SMALL)
    L = apply_floor(as_log_probs(t.log_probs(beta)[:1])).log_probs[0]
    return t, L, np.bincount(t.validation, minlength=16)


@pytest.mark.parametrize("gamma", [0.0, 0.01, 0.3, 1.0])
def test_counted_gradient_against_finite_differences(gamma):
    _, L, c = small_problem()
    p = CountedRenyiProblem(L, c, gamma)
    rng = np.random.default_rng(1)
    w = rng.dirichlet(np.ones(5))
    f, g = p.value_and_grad(w)
    for _ in range(3):
        d = rng.normal(size=5)
        d -= d.mean()  # a direction inside the simplex
        h = 1e-6
        fd = (p.value(w + h * d) - p.value(w - h * d)) / (2 * h)
        assert g @ d == pytest.approx(fd, rel=1e-5, abs=1e-8)
    assert f == pytest.approx(-(c @ p.aggregate(w)) / c.sum(), rel=1e-14)


@pytest.mark.parametrize("gamma", [0.0, 0.3, 1.0])
def test_counted_fit_equals_the_estimators_on_repeated_items(gamma):
    t, L, c = small_problem()
    w, lq, res = fit_counted_pool(L, c, gamma, tol=1e-10)
    Lr = t.log_probs(2.0)
    est = (LogPool() if gamma == 0.0 else RenyiPool(gamma=gamma, tol=1e-10)).fit(Lr, t.validation)
    # same objective: the same optimal log-likelihood, and (strictly concave here) the same aggregate
    assert -res.fun == pytest.approx(est.score(Lr, t.validation), abs=1e-8)
    np.testing.assert_allclose(lq, est.predict(Lr[:1])[0], atol=2e-3)
    np.testing.assert_allclose(w, est.weights_, atol=2e-3)


# -- the reproduction -------------------------------------------------------------------------------
def test_task1_fast(tmp_path):
    mod = load_script()
    res = mod.run(2, seed=0, betas=[0.0, 2.0, 4.0], gammas=[1e-3, 1e-2, 1e-1, 1.0], **SMALL)
    assert res.kl.shape == (2, 3, 4) and (res.kl >= 0).all() and (res.kl_log >= 0).all()
    bg = res.best_gamma()
    # beta = 0 with the literal (shared) base set: identical agents, every gamma ties
    assert np.isnan(bg[:, 0]).all()
    np.testing.assert_allclose(res.kl[:, 0, :], np.broadcast_to(res.kl[:, 0, :1], (2, 4)), atol=1e-9)
    np.testing.assert_allclose(res.kl_log[:, 0], res.kl[:, 0, 0], atol=1e-9)
    # finding 1: more bias is worse (best achievable KL grows with beta)
    sm = res.summary()
    assert sm["kl_best"][0] < sm["kl_best"][1] < sm["kl_best"][2]
    # the log pool is the gamma -> 0 end of the family: closest to the smallest gamma
    assert np.abs(res.kl_log - res.kl[:, :, 0]).max() < np.abs(res.kl_log - res.kl[:, :, -1]).max()
    uni = mod.uniform_weight_table(2, seed=0, betas=[0.0, 4.0], **SMALL)
    assert uni[0, 0] == pytest.approx(uni[0, 1], abs=1e-12)  # identical agents: linear = log
    assert uni[1, 1] > uni[1, 0]  # under strong bias the uniform log pool is worse than the linear one
    text = mod.format_report(res)
    assert "Fig. 2.1b" in text and text.count("\n") > 10
    png = mod.plot(res, tmp_path / "t1.png")
    assert png.stat().st_size > 1000


@pytest.mark.slow
def test_task1_full(tmp_path):
    mod = load_script()
    res = mod.run(100, seed=0)
    sm = res.summary()
    print(mod.format_report(res))
    mod.plot(res, tmp_path / "task1.png")
    # finding 1: more bias is worse
    assert np.all(np.diff(sm["kl_best"]) > 0)
    # the log pool takes a large hit under strong bias (seed: "a significant hit on performance")
    assert sm["kl_log"][-1] > 2 * sm["kl_best"][-1]
