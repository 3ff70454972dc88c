"""Per-item weights (``sample_weight``) of the log-pool and linear-pool problems: every member the
solvers read equals the one of the problem on repeated items; weighted problems hide the arrays the
compiled stochastic kernels read (which cannot weight terms), and a stochastic solver still reaches
the repeated problem's optimum."""

import numpy as np
import pytest

import solvers
from solvers.errors import InputError
from solvers.problems.loglinear import ConditionalLogLinear
from solvers.problems.mixture import MixtureLikelihood


def _data(seed=0, N=50, A=6, K=5):
    rng = np.random.default_rng(seed)
    lp = rng.normal(size=(N, A, K)) * rng.uniform(0.3, 2.0, size=(1, A, 1))
    lp -= np.log(np.exp(lp).sum(axis=2, keepdims=True))
    y = rng.integers(0, K, N)
    c = rng.integers(0, 4, N)
    c[0] = 0
    return lp, y, c


def _pair(kind):
    lp, y, c = _data()
    rep = np.repeat(np.arange(len(y)), c)
    if kind == "loglinear":
        return ConditionalLogLinear.from_log_probs(lp, y, sample_weight=c), ConditionalLogLinear.from_log_probs(
            lp[rep], y[rep]
        )
    return MixtureLikelihood.from_log_probs(lp, y, c), MixtureLikelihood.from_log_probs(lp[rep], y[rep])


@pytest.mark.parametrize("kind", ["loglinear", "mixture"])
def test_weighted_members_equal_repeated(kind):
    w_prob, r_prob = _pair(kind)
    rng = np.random.default_rng(1)
    x = rng.dirichlet(np.ones(w_prob.dim))
    v = rng.normal(size=w_prob.dim)
    fw, gw = w_prob.value_and_grad(x)
    fr, gr = r_prob.value_and_grad(x)
    assert abs(fw - fr) < 1e-12 and abs(w_prob.value(x) - fr) < 1e-12
    np.testing.assert_allclose(gw, gr, rtol=0, atol=1e-12)
    np.testing.assert_allclose(w_prob.hvp(x, v), r_prob.hvp(x, v), rtol=0, atol=1e-12)
    np.testing.assert_allclose(w_prob.hessian(x), r_prob.hessian(x), rtol=0, atol=1e-12)
    # the terms' mean is the objective's gradient
    tg = np.mean([w_prob.term_grad(i, x) for i in range(w_prob.n_terms)], axis=0)
    np.testing.assert_allclose(tg, gw, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(w_prob.screen(3), r_prob.screen(3))
    sub = [0, 2, 3]
    xs = x[sub] / x[sub].sum()
    assert abs(w_prob.restrict(sub).value(xs) - r_prob.restrict(sub).value(xs)) < 1e-12


def test_weighted_problems_hide_the_compiled_kernels_arrays():
    w_ll, r_ll = _pair("loglinear")
    assert w_ll.features_ndk is None and r_ll.features_ndk is not None
    assert w_ll.features.shape == (50, 5, 6)  # the documented view stays (bound majorization reads it)
    w_mx, r_mx = _pair("mixture")
    assert w_mx.mixture_rows is None and r_mx.mixture_rows is not None


@pytest.mark.parametrize("kind, method", [("loglinear", "newton"), ("mixture", "em"), ("mixture", "newton")])
def test_weighted_optimum_equals_repeated(kind, method):
    w_prob, r_prob = _pair(kind)
    a = solvers.minimize(w_prob, method, tol=1e-13)
    b = solvers.minimize(r_prob, method, tol=1e-13)
    np.testing.assert_allclose(a.x, b.x, rtol=0, atol=1e-7)
    assert abs(a.fun - b.fun) < 1e-12


@pytest.mark.parametrize("bad", [np.ones(3), -np.ones(50), np.full(50, np.nan), np.zeros(50)])
def test_bad_problem_weights_raise(bad):
    lp, y, _ = _data()
    with pytest.raises(InputError) as e:
        ConditionalLogLinear.from_log_probs(lp, y, sample_weight=bad)
    assert e.value.field == "sample_weight"
    with pytest.raises(InputError) as e:
        MixtureLikelihood.from_log_probs(lp, y, bad)
    assert e.value.field == "sample_weight"
