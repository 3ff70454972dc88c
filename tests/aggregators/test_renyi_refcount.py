"""The Rényi kernels compiled without reference counting (:mod:`solvers.kernels.refcount`) leave no
array behind: numba's allocation counters (every array numba allocates, e.g. the workspaces these
kernels run in, and every view it hands back) balance before and after repeated calls of every path
that runs them (per-item Newton in the fast and stable forms, the item block, two classes, the fused
fixed point and adjoint, the separate adjoint with agents at weight zero, serial and threaded drivers;
a reference counted up and never down would keep its array alive and the counters apart), and the
answers do not drift from call to call."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from numba.core.runtime import _nrt_python as _nrt
from numba.core.runtime import rtsys
from scipy.special import logsumexp

from aggregators.renyi_fixed_point import solve_fixed_point
from aggregators.renyi_gradient import RenyiProblem, renyi_loglik_grad
from solvers.kernels.refcount import NO_REFCOUNT


def data(n, a, k, seed):
    rng = np.random.default_rng(seed)
    lp = rng.normal(size=(n, a, k)) * 2.0
    lp -= logsumexp(lp, axis=2, keepdims=True)
    return lp, rng.integers(0, k, n)


@pytest.fixture(autouse=True)
def _stats():
    was = _nrt.memsys_stats_enabled()
    _nrt.memsys_enable_stats()
    yield
    if not was:
        _nrt.memsys_disable_stats()


def _live():
    gc.collect()
    s = rtsys.get_allocation_stats()
    return s.alloc - s.free, s.mi_alloc - s.mi_free


CASES = [
    # n, agents, classes, gamma: per-item Woodbury / CG, the item block, two classes, stable γ, threaded
    (50, 10, 64, 0.5),
    (30, 40, 300, 0.5),
    (64, 4, 8, 0.4),
    (80, 6, 2, 0.3),
    (20, 12, 32, 1e-4),
    (700, 120, 64, 0.5),
]


def test_the_option_is_in_effect_on_this_numba():
    assert NO_REFCOUNT == {"_nrt": False}


@pytest.mark.parametrize("n,a,k,g", CASES)
def test_no_array_or_reference_is_left_behind(n, a, k, g):
    lp, y = data(n, a, k, seed=n + a + k)
    rng = np.random.default_rng(k)
    w = rng.dirichlet(np.ones(a))
    w[rng.choice(a, a // 4, replace=False)] = 0.0  # agents at weight zero: the gathered and fused paths
    w /= w.sum()
    gam = np.full(a, g)
    labels = y.astype(np.int64)

    def every_path():
        fp = solve_fixed_point(lp, w, gam, tol=1e-10)
        renyi_loglik_grad(lp, y, w, gam, want=("w", "gamma"), solved=fp.log_q)
        W = np.empty((n, a))
        solve_fixed_point(lp, w, gam, tol=1e-10, adjoint=(labels, W))
        RenyiProblem(lp, y, g).value_and_grad(w)
        return fp.log_q

    first = every_path()  # compiles, fills the reused workspaces
    before = _live()
    for _ in range(3):
        again = every_path()
    assert _live() == before
    np.testing.assert_array_equal(again, first)  # and the answers do not drift between calls
