"""Pools fit their weights with any applicable solver by name and reach the same weights.

The log pool's problem (``ConditionalLogLinear`` on the simplex, engineer H2) offers ``term_grad``
and a projection; SAGA, SAG, SVRG and S2GD have a compiled path for it (the others run the generic
Python path). Reference:
the Newton fit, cross-checked by scipy SLSQP on an objective written out here.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize as so
from scipy.special import logsumexp

import solvers
from aggregators.logpool import LogPool
from solvers.problems.loglinear import ConditionalLogLinear


def _agents(n=80, A=4, K=5, seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.dirichlet(np.ones(K) * 0.7, size=n)
    y = np.array([rng.choice(K, p=p) for p in truth])
    lp = np.empty((n, A, K))
    for a in range(A):
        noise = rng.normal(scale=0.4 + 0.5 * a, size=(n, K))
        z = np.log(truth + 1e-3) * (0.5 + 0.3 * a) + noise
        lp[:, a] = z - logsumexp(z, axis=1, keepdims=True)
    return lp, y


@pytest.fixture(scope="module")
def pool_data():
    lp, y = _agents()
    ref = LogPool(solver="newton", tol=1e-14).fit(lp, y, kind="log_probs").weights_

    def nll(w):
        s = np.einsum("nak,a->nk", lp, w)
        return float(np.mean(logsumexp(s, axis=1) - s[np.arange(len(y)), y]))

    A = lp.shape[1]
    r = so.minimize(
        nll,
        np.full(A, 1 / A),
        method="SLSQP",
        bounds=[(0, None)] * A,
        constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    assert np.abs(r.x - ref).max() < 1e-5  # Newton and SLSQP agree
    return lp, y, ref


GENERIC = ["saga", "svrg", "s2gd", "sag", "gd", "proximal_gradient", "nesterov", "heavy_ball"]


@pytest.mark.parametrize("name", GENERIC)
def test_log_pool_fits_with_incremental_solvers(pool_data, name):
    lp, y, ref = pool_data
    problem = ConditionalLogLinear.from_log_probs(lp, y)
    assert name in solvers.available(problem)
    opts = {"max_iter": 1000} if name in ("saga", "svrg", "s2gd", "sag") else {"max_iter": 20000}
    pool = LogPool(solver=name, tol=1e-9, solver_options=opts).fit(lp, y, kind="log_probs")
    assert pool.fit_result_.method == name
    if name in ("saga", "sag", "svrg", "s2gd"):  # compiled paths for the log-linear problem
        assert pool.fit_result_.extra["compiled"]
    assert pool.fit_result_.converged, pool.fit_result_.message
    np.testing.assert_allclose(pool.weights_, ref, atol=1e-6)


def test_log_pool_sgd_gets_close(pool_data):
    lp, y, ref = pool_data
    problem = ConditionalLogLinear.from_log_probs(lp, y)
    opts = {"max_iter": 40, "average": True, "step": 1 / problem.L}
    pool = LogPool(solver="sgd", tol=0.0, solver_options=opts).fit(lp, y, kind="log_probs")
    fstar = problem.value(ref)
    # SGD is sublinear: it gets the objective, not the (flat-direction) weights, to 1e-3
    assert problem.value(pool.weights_) - fstar < 1e-3 * abs(fstar)


def test_solvers_without_constraint_support_are_not_offered(pool_data):
    lp, y, _ = pool_data
    problem = ConditionalLogLinear.from_log_probs(lp, y)
    avail = solvers.available(problem)
    for name in ("finito", "miso", "prox_finito", "sdca"):
        assert name not in avail
    with pytest.raises(ValueError, match="does not apply"):
        solvers.minimize(problem, "finito")


class _Without:
    """The same problem without the capability ``hidden``: the solvers take their generic Python path."""

    def __init__(self, p, hidden):
        self._p, self._hidden = p, hidden

    def __getattr__(self, name):
        if name == self._hidden:
            raise AttributeError(name)
        return getattr(self._p, name)


@pytest.mark.parametrize("snapshot", ["last", "average", "random"])
def test_compiled_loglinear_svrg_takes_the_generic_paths_iterates(pool_data, snapshot):
    lp, y, _ = pool_data
    p = ConditionalLogLinear.from_log_probs(lp, y)
    a = solvers.minimize(p, "svrg", tol=0.0, max_iter=4, snapshot=snapshot, seed=5)
    b = solvers.minimize(_Without(p, "features_ndk"), "svrg", tol=0.0, max_iter=4, snapshot=snapshot, seed=5)
    assert a.extra["compiled"] and not b.extra["compiled"]
    np.testing.assert_allclose(a.x, b.x, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["saga", "sag"])
def test_compiled_loglinear_table_methods_take_the_generic_paths_iterates(pool_data, name):
    lp, y, _ = pool_data
    p = ConditionalLogLinear.from_log_probs(lp, y)
    a = solvers.minimize(p, name, tol=0.0, max_iter=3, seed=7)
    b = solvers.minimize(_Without(p, "features_ndk"), name, tol=0.0, max_iter=3, seed=7)
    assert a.extra["compiled"] and not b.extra["compiled"]
    np.testing.assert_allclose(a.x, b.x, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("name", ["saga", "sag", "svrg", "s2gd"])
def test_linear_pool_compiled_stochastic_paths(pool_data, name):
    """Linear pool (mixture likelihood on the simplex): the compiled path takes the generic path's
    iterates, and the pool fitted with it reaches the Newton (constrained) weights. The mixture has
    no global smoothness constant (``-log`` on the simplex), so the step is given."""
    from aggregators.linear import LinearPool
    from solvers.problems.mixture import MixtureLikelihood

    lp, y, _ = pool_data
    p = MixtureLikelihood.from_log_probs(lp, y)
    step = 0.05
    a = solvers.minimize(p, name, tol=0.0, max_iter=3, seed=4, step=step)
    b = solvers.minimize(_Without(p, "mixture_rows"), name, tol=0.0, max_iter=3, seed=4, step=step)
    assert a.extra["compiled"] and not b.extra["compiled"]
    np.testing.assert_allclose(a.x, b.x, rtol=1e-11, atol=1e-13)
    ref = LinearPool(solver="newton", tol=1e-13).fit(lp, y, kind="log_probs").weights_
    pool = LinearPool(solver=name, tol=1e-9, solver_options={"max_iter": 3000, "step": step}).fit(
        lp, y, kind="log_probs"
    )
    assert pool.fit_result_.extra["compiled"] and pool.fit_result_.converged, pool.fit_result_.message
    np.testing.assert_allclose(pool.weights_, ref, atol=1e-6)


@pytest.mark.parametrize("schedule,average", [("inverse_sqrt", False), ("constant", True)])
def test_compiled_sgd_on_pool_problems_takes_the_generic_paths_iterates(pool_data, schedule, average):
    from solvers.problems.mixture import MixtureLikelihood

    lp, y, _ = pool_data
    for p, hidden in (
        (ConditionalLogLinear.from_log_probs(lp, y), "features_ndk"),
        (MixtureLikelihood.from_log_probs(lp, y), "mixture_rows"),
    ):
        opts = dict(tol=0.0, max_iter=4, seed=9, step=0.05, schedule=schedule, average=average)
        a = solvers.minimize(p, "sgd", **opts)
        b = solvers.minimize(_Without(p, hidden), "sgd", **opts)
        assert a.extra["compiled"] and not b.extra["compiled"]
        np.testing.assert_allclose(a.x, b.x, rtol=1e-11, atol=1e-13)
