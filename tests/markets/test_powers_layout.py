"""The powers of the lean path (``iso_powers``: transpose, then exp in place; session 47) and the
staged item of the general path without a floor (``_floored`` copies it): the same numbers as
before the reordering, and the equilibria with and without a floor still agree with the seed's
fixed point."""

from __future__ import annotations

import numpy as np
import pytest

from markets import equilibrium
from markets.kernels.isoelastic import iso_powers, transpose_rows
from solvers.kernels.fastexp import exp_scaled


@pytest.mark.parametrize("A,K", [(1, 1), (2, 2), (3, 7), (100, 10), (10, 100), (33, 65), (2, 4096)])
def test_iso_powers_bit_for_bit_and_close_to_numpy(A, K):
    rng = np.random.default_rng(A * 1000 + K)
    L = rng.normal(-3.0, 4.0, (A, K))
    L[0, 0] = -np.inf  # a zero belief: power 0
    g = 0.1
    PgT = np.full((K, A), np.nan)
    iso_powers(L, g, PgT, np.empty(A * K))
    flat = np.empty(A * K)
    exp_scaled(L.reshape(-1), g, flat)  # the order used until session 47: exp, then transpose
    assert np.array_equal(PgT, flat.reshape(A, K).T)
    ref = np.exp(g * L).T
    assert PgT[0, 0] == 0.0
    np.testing.assert_array_max_ulp(PgT, ref, maxulp=2)


def test_transpose_rows():
    rng = np.random.default_rng(3)
    for A, K in [(1, 5), (5, 1), (37, 41)]:
        x = rng.normal(size=A * K)
        out = np.empty((K, A))
        transpose_rows(x, A, K, out)
        assert np.array_equal(out, x.reshape(A, K).T)


@pytest.mark.parametrize("utilities", [10.0, 2.0, [2.0, 10.0, 30.0, "log"] * 3])
def test_no_floor_equilibria_match_the_fixed_point_and_the_floored_call(utilities):
    """``floor=None`` now copies each item into the chunk's buffer (general path) or transposes it
    first (lean path): the answer is unchanged, the fixed point agrees, and on beliefs with nothing
    below the floor the floored call gives the same prices bit for bit."""
    rng = np.random.default_rng(5)
    n, A, K = 40, 12, 9
    L = np.log(rng.dirichlet(np.full(K, 2.0), size=(n, A)))
    assert L.min() > np.log(1e-9)  # nothing floored: the two calls solve the same market
    w = rng.uniform(0.2, 1.0, A)
    a = equilibrium(L, utilities, w, floor=None, tol=1e-12, check=False)
    b = equilibrium(L, utilities, w, tol=1e-12, check=False)
    c = equilibrium(L, utilities, w, floor=None, tol=1e-12, check=False, method="fixed_point", max_iter=100000)
    assert a.all_converged and b.all_converged and c.all_converged
    assert np.array_equal(a.log_prices, b.log_prices)
    np.testing.assert_allclose(a.log_prices, c.log_prices, atol=1e-9, rtol=0)
