"""Markets with agents of order within 0.1 of the log agent's (eta in (1, 1.11) or (0.91, 1)): the
general path's Newton takes whole steps from evaluations without the potential while each at least
halves the clearing residual (:data:`markets.kernels.equilibrium.FAST_ACCEPT`), then the line search.
Their equilibrium is the seed's fixed point's (or, with exponential agents, the dense Newton's), every
item converged, on the Woodbury, CG and order-preconditioned directions; and the fixed point's pass,
which never reads the potential, reaches the same prices."""

import numpy as np
import pytest

from markets import equilibrium
from markets.kernels.potential import has_near_log

from .conftest import random_beliefs


def _near_log_spread(a, rng):
    """An eta per agent, log-uniform in 1.01-3 (the grid's ``spread-low``), a third of them below 1.11."""
    eta = np.exp(rng.uniform(np.log(1.01), np.log(3.0), a))
    eta[: max(1, a // 3)] = rng.uniform(1.01, 1.1, max(1, a // 3))
    return list(eta)


@pytest.mark.parametrize(("A", "K"), [(2, 40), (10, 300), (40, 64), (120, 48)])
def test_newton_with_near_log_agents_reaches_the_fixed_points_prices(A, K, rng):
    utils = _near_log_spread(A, rng)
    assert has_near_log(np.ones(A, np.int64), 1.0 / np.array(utils))
    lp = random_beliefs(rng, 4, A, K)
    W = rng.uniform(0.2, 1.0, A)
    fp = equilibrium(lp, utils, W, method="fixed_point", tol=1e-12, max_iter=200_000)
    assert fp.all_converged
    for m in ("newton_cg", "auto", "newton"):
        r = equilibrium(lp, utils, W, method=m, tol=1e-12)
        assert r.all_converged, m
        assert r.clearing_error.max() <= 1e-12
        np.testing.assert_allclose(r.log_prices, fp.log_prices, rtol=0, atol=1e-9)


def test_near_log_agents_beside_exponential_and_log_ones_match_the_dense_newton(rng):
    utils = ["exp", 1.05, "log", 0.95, 2.0, "exp", 1.02, 10.0]
    A, K = len(utils), 70
    lp = random_beliefs(rng, 5, A, K)
    W = rng.uniform(0.2, 1.0, A)
    dense = equilibrium(lp, utils, W, method="newton", tol=1e-12)
    r = equilibrium(lp, utils, W, method="newton_cg", tol=1e-12)
    assert dense.all_converged and r.all_converged
    np.testing.assert_allclose(r.log_prices, dense.log_prices, rtol=0, atol=1e-9)


def test_far_starts_fall_back_to_the_line_search_and_converge(rng):
    """Warm starts far from the answer (log-prices off by N(0, 3), beliefs of concentration 0.3), where
    a whole step may not halve the residual and the safeguarded line search then takes over: every
    item converges to the fixed point's prices."""
    A, K = 10, 200
    utils = _near_log_spread(A, rng)
    lp = random_beliefs(rng, 6, A, K, conc=0.3)
    W = rng.uniform(0.2, 1.0, A)
    start = rng.normal(0.0, 3.0, (6, K))
    fp = equilibrium(lp, utils, W, method="fixed_point", tol=1e-12, max_iter=200_000)
    r = equilibrium(lp, utils, W, method="newton_cg", tol=1e-12, start=start)
    assert r.all_converged
    np.testing.assert_allclose(r.log_prices, fp.log_prices, rtol=0, atol=1e-9)


def test_has_near_log_reads_the_orders():
    ISO, EXP = 1, 0
    kind = np.array([ISO, ISO, EXP], np.int64)
    assert not has_near_log(kind, np.array([1.0, 0.5, 0.0]))  # log and eta = 2: no
    assert has_near_log(kind, np.array([1.0, 1 / 1.05, 0.0]))
    assert has_near_log(kind, np.array([1 / 0.95, 0.5, 0.0]))
    assert not has_near_log(np.array([EXP, EXP], np.int64), np.array([0.95, 0.95]))  # not isoelastic
