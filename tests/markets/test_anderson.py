"""The Anderson-accelerated fixed point (issue [core-at-scale] section 1): it takes far fewer passes
than the plain iteration, its step is the least-squares extrapolation, and it serves market
training. (Its equilibrium against the seed's fixed point and the dense Newton to 1e-10 on small
shapes: ``test_newton_cg.py::test_newton_cg_equilibrium_matches_dense_newton_and_fixed_point``;
from far starts on extreme markets: ``test_equilibrium.py::test_newton_from_far_starts_on_extreme_markets``.)"""

import numpy as np
import pytest

from markets import equilibrium, train_market
from markets.kernels.anderson import MEMORY
from markets.kernels.line_search import MAX_LOG_STEP
from solvers.kernels.anderson import anderson_size, anderson_step, anderson_update, image_slot, plain_image
from solvers.special import logsumexp

from .conftest import random_beliefs


@pytest.mark.parametrize("eta", [2.0, 10.0, 30.0])
def test_anderson_takes_far_fewer_passes_than_the_seeds_iteration(eta, rng):
    """One order: the fixed point's Jacobian has the eigenvalue 1 - 1/eta K - A times, which one
    Anderson step removes; the plain iteration needs about log(1/tol) eta passes."""
    lp = random_beliefs(rng, 20, 10, 200)
    aa = equilibrium(lp, eta, method="anderson")
    fp = equilibrium(lp, eta, method="fixed_point")
    assert aa.all_converged and fp.all_converged
    assert aa.n_iter.max() <= 40
    assert aa.n_iter.mean() <= 0.5 * fp.n_iter.mean()


@pytest.mark.parametrize("K", [9, 64])
def test_anderson_step_is_the_least_squares_extrapolation(K, rng):
    """Against a direct NumPy Anderson (type II): with steps f_j = G(u_j) - u_j, the new point is
    G(u_k) - dG gamma with gamma = argmin |f_k - dF gamma| (lstsq), normalised. K = 64 takes the
    vectorised log, exp and sums (from 16 entries); ``anderson_update`` with the image written by the
    caller (as the Rényi aggregate does) gives the same point as ``anderson_step``."""
    m = MEMORY
    scr = np.zeros(anderson_size(K, m))
    scr2 = np.zeros(anderson_size(K, m))
    n2, pos2 = -1, 0
    us, gs = [], []
    n_hist, pos = -1, 0
    u = rng.normal(size=K)
    u -= logsumexp(u)
    for _ in range(8):
        T = np.exp(rng.normal(size=K))  # any positive spending defines G(u)
        g = np.empty(K)
        plain_image(u, T, 1.3, g)
        np.testing.assert_allclose(g, np.log(T / 1.3) - logsumexp(np.log(T / 1.3)), atol=1e-14)
        us.append(u.copy())
        gs.append(g)
        new = u.copy()
        n_hist, pos = anderson_step(new, T, 1.3, n_hist, pos, m, scr, MAX_LOG_STEP)
        new2 = u.copy()
        image_slot(scr2, K, m)[:] = g
        n2, pos2 = anderson_update(new2, n2, pos2, m, scr2, MAX_LOG_STEP)
        np.testing.assert_allclose(new2, new, atol=1e-13)
        assert (n2, pos2) == (n_hist, pos)
        F = np.array(gs) - np.array(us)
        G = np.array(gs)
        h = min(len(us) - 1, m)
        if h == 0:
            ref = g.copy()
        else:
            dF = np.diff(F, axis=0)[-h:].T
            dG = np.diff(G, axis=0)[-h:].T
            gam = np.linalg.lstsq(dF, F[-1], rcond=None)[0]
            ref = g - dG @ gam
        ref -= logsumexp(ref)
        np.testing.assert_allclose(new, ref, atol=1e-8)
        assert n_hist == h
        u = new


@pytest.mark.parametrize("mode", ["batch", "online"])
def test_training_with_anderson_equals_training_with_the_fixed_point(mode, rng):
    lp = random_beliefs(rng, 25, 5, 12)
    y = rng.integers(0, 12, 25)
    kw = dict(mode=mode, batch_size=6, max_epochs=2, wealth_tol=0, record_steps=True, tol=1e-13)
    a = train_market(lp, y, [2.0, 10.0, "log", 3.0, 30.0], method="anderson", **kw)
    b = train_market(lp, y, [2.0, 10.0, "log", 3.0, 30.0], method="fixed_point", **kw)
    assert a.all_equilibria_converged and b.all_equilibria_converged
    np.testing.assert_allclose(a.step_history, b.step_history, rtol=1e-9, atol=1e-11)
    assert a.n_equilibrium_iter < b.n_equilibrium_iter


def test_anderson_refuses_exponential_agents(rng):
    lp = random_beliefs(rng, 2, 3, 4)
    with pytest.raises(ValueError, match="method"):
        equilibrium(lp, [2.0, "exp", 10.0], method="anderson")
