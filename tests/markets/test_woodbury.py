"""The Woodbury direction of the general path (:mod:`markets.kernels.woodbury`) is the dense Newton
direction (:func:`markets.kernels.potential.newton_direction`, a Cholesky factorisation of the K x K
matrix), and the equilibrium reached with it is the fixed point's and the dense Newton's."""

import numpy as np
import pytest

from markets import equilibrium
from markets.kernels.newton_cg import general_diagonal
from markets.kernels.woodbury import WOODBURY_MAX_ROWS, _gram, woodbury_direction, woodbury_rows, woodbury_scratch_size

from .conftest import random_beliefs
from .test_newton_cg import MIXES, general_point

OWN_ORDERS = [1.01, 1.3, 1.7, 2.2, 2.9, 1.1, 1.5, 2.5, 1.2, 2.0]
"""Ten agents each of its own eta in 1.01-3 (the grid's ``spread-low``): the largest Woodbury system."""


@pytest.mark.parametrize("mix", [*MIXES, "own_orders"])
@pytest.mark.parametrize("K", [2, 3, 20, 70])
def test_woodbury_direction_is_the_dense_newton_direction(mix, K, rng):
    spec = OWN_ORDERS if mix == "own_orders" else MIXES[mix]
    utils = spec if isinstance(spec, list) else [spec] * 5
    kind, inv_eta, W, u, Q, T, d = general_point(utils, K, rng)
    dg, h = np.empty(K), np.empty(K)
    n_exp = general_diagonal(kind, inv_eta, W, Q, u, dg, h)
    reg = abs(W.sum()) + n_exp  # as the Newton loops'
    b = T - W.sum() * np.exp(u)  # the Newton right-hand side, as newton_direction's
    rows = woodbury_rows(kind, inv_eta, W)
    assert rows == 2 + sum(1 for k, g in zip(kind, inv_eta) if k == 1 and g != 1.0)
    d_w = np.full(K, np.nan)
    S = np.full(woodbury_scratch_size(rows), np.nan)  # scratch: its contents must not matter
    V = np.full((rows + 2, K), np.nan)
    assert woodbury_direction(kind, inv_eta, W, Q, np.exp(u), dg, h, reg, b, d_w, V, np.empty((0, 0)), S)
    np.testing.assert_allclose(d_w, d, rtol=1e-9, atol=1e-10 * np.abs(d).max())
    d_2 = np.full(K, np.nan)  # the same scratch again, as a Newton loop's next step reuses it
    assert woodbury_direction(kind, inv_eta, W, Q, np.exp(u), dg, h, reg, b, d_2, V, np.empty((0, 0)), S)
    np.testing.assert_array_equal(d_2, d_w)


def test_woodbury_declines_a_non_positive_diagonal(rng):
    K, A = 6, 3
    kind, inv_eta, W = np.ones(A, np.int64), np.full(A, 0.5), np.ones(A)
    Q = rng.dirichlet(np.ones(K), A)
    dg = np.ones(K)
    dg[2] = 0.0
    d = np.empty(K)
    S = np.empty(woodbury_scratch_size(A + 2))
    assert not woodbury_direction(
        kind,
        inv_eta,
        W,
        Q,
        np.full(K, 1 / K),
        dg,
        Q.sum(0),
        3.0,
        np.ones(K),
        d,
        np.empty((A + 4, K)),
        np.empty((0, 0)),
        S,
    )


@pytest.mark.parametrize("utils", [[2.0, 10.0, 30.0, "log"] * 2, [2.0, "log", 10.0], [30.0, 10.0, "log", "log", 1.05]])
@pytest.mark.parametrize("K", [300, 1100])
def test_equilibrium_with_woodbury_steps_is_the_fixed_points(utils, K, rng):
    """Few agents, many goods: ``newton_cg`` and ``auto`` take the Woodbury direction
    (``woodbury_rows <= WOODBURY_MAX_ROWS``); their equilibrium is the seed's fixed point's."""
    A = len(utils)
    assert len([u for u in utils if u != "log"]) + 2 <= WOODBURY_MAX_ROWS
    lp = random_beliefs(rng, 3, A, K)
    W = rng.uniform(0.2, 1.0, A)
    fp = equilibrium(lp, utils, W, method="fixed_point", tol=1e-12, max_iter=100_000)
    for m in ("newton_cg", "auto"):
        r = equilibrium(lp, utils, W, method=m, tol=1e-12)
        assert r.all_converged
        np.testing.assert_allclose(r.log_prices, fp.log_prices, atol=1e-9)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, 11, 12, 13])
def test_gram_pass_adds_v_v_transpose(n, rng):
    """``_gram`` (blocks of two rows by two since session 54, with a last odd row) adds ``V[:n] V[:n]^T`` to
    ``E`` and leaves the rows of ``V`` it is not given alone."""
    K = 37
    V = rng.standard_normal((n + 1, K))
    E0 = rng.standard_normal((n, n))
    E = E0.copy()
    _gram(V, n, K, E)
    np.testing.assert_allclose(E, E0 + V[:n] @ V[:n].T, rtol=1e-13, atol=1e-12)
