"""The equilibrium conditions at given prices, compiled: what ``equilibrium(..., check=True)`` reports.

For each item, every agent's optimal investment at the prices ``c = exp(u)`` is recomputed from the
closed forms of Table 2.4 / Eq. (2.31) (seed 003), independently of the solvers' potential and its
spending (:mod:`markets.kernels.potential`), and three conditions are measured:

- clearing: ``max_k |sum_i r_ik - (sum_i W_i) c_k| / c_k``;
- budget: ``max_i |sum_k r_ik - W_i|``;
- positions: the number of negative investments ``r_ik < 0`` (exponential agents may sell short).

The investments are those of :meth:`markets.utilities.Utility.investment` (the NumPy reference,
which :func:`markets.equilibrium.investments` still builds for generic utilities and tests):

- isoelastic agent of order ``g = 1/eta``: ``r_k = W q_k``, ``q = softmax(g log P + (1 - g) u)``
  (Eq. 2.35's effective belief); the logarithmic agent (``g = 1``) ``r_k = W P_k``;
- exponential agent: ``r_k = c_k (W + a_k - sum_j c_j a_j)`` with ``a = log P - u``.

NumPy built an ``(n, A, K)`` array of investments agent by agent (ten or so temporaries per agent and a
Python loop over agents): measured at 5-13 ns per belief entry, two to seven times the Newton solve it
checks (session 43: 100 agents x 1,024 goods 500 µs per item against 390 µs for ``auto``; 1,000 x 256
660 µs per item against 170). Here each agent's row is two or three passes in cache with the
vectorised :func:`solvers.kernels.fastexp.exp_scaled_inplace` (2 ulp), the items in parallel.

Prices that are NaN or ``+inf`` (a failed solve) give NaN clearing and budget errors and no count of
negative positions (0), rather than whatever the arithmetic would make of them. A good of price zero
(``u_k = -inf``, an equilibrium only with zero beliefs and no floor) gives the NumPy reference's
``x / 0``: NaN when no agent buys it, ``+inf`` when one does (a logarithmic agent buys ``W P_k``
whatever the price).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from solvers.kernels.fastexp import exp_scaled, exp_scaled_inplace
from solvers.kernels.floor_row import floor_row
from solvers.kernels.vmax import vmax
from solvers.kernels.vsum import vsum

from .potential import EXP


@njit(cache=True, fastmath={"nsz", "contract"}, error_model="numpy")
def _effective(row, u, g, e):
    """``e = g row + (1 - g) u``: the log of the effective belief before normalising (Eq. 2.35). Not
    re-associated: ``g (L - u) + u`` would turn a zero price (``u_k = -inf``) into NaN."""
    h = 1.0 - g
    for k in range(u.shape[0]):
        e[k] = g * row[k] + h * u[k]


@njit(cache=True, fastmath={"reassoc", "nsz", "contract"}, error_model="numpy")
def check_item(L, u, kind, inv_eta, W, floor, col, e, c, fr):
    """The three conditions of one item (module docstring): beliefs ``L`` (A, K, normalised log),
    log-prices ``u`` (K,); ``floor > 0``: each agent's row is first floored into ``fr`` by
    :func:`solvers.kernels.floor_row.floor_row` (the rule of :func:`markets.agents.floor_beliefs`, so
    the conditions are those of the floored beliefs the solver saw). Scratch ``col``, ``e``, ``c``,
    ``fr`` of K floats. Returns ``(clear, budget, neg)``."""
    A, K = L.shape
    for k in range(K):
        if u[k] != u[k] or u[k] == np.inf:
            return np.nan, np.nan, 0
    log_floor = np.log(floor) if floor > 0.0 else -np.inf
    exp_scaled(u, 1.0, c)
    for k in range(K):  # below exp(-708) the vectorised exp gives 0; libm's goes on into the subnormals
        if c[k] == 0.0 and u[k] > -np.inf:
            c[k] = np.exp(u[k])
    wsum = 0.0
    for i in range(A):
        wsum += W[i]
    for k in range(K):
        col[k] = 0.0
    budget = 0.0
    neg = 0
    for i in range(A):
        row = L[i]
        if floor > 0.0:
            floor_row(L[i], fr, floor, log_floor, e)
            row = fr
        w = W[i]
        spent = 0.0
        if kind[i] == EXP:
            s = 0.0
            for k in range(K):
                s += c[k] * (row[k] - u[k])
            for k in range(K):
                r = c[k] * ((w + (row[k] - u[k])) - s)
                col[k] += r
                spent += r
                neg += r < 0.0
        else:
            g = inv_eta[i]
            if g == 1.0:
                for k in range(K):
                    e[k] = row[k]
                exp_scaled_inplace(e, 1.0)
                scale = w
            else:
                _effective(row, u, g, e)
                m = vmax(e)
                exp_scaled_inplace(e, 1.0, m)
                scale = w / vsum(e)
            for k in range(K):
                r = scale * e[k]
                col[k] += r
                spent += r
            if scale < 0.0:  # only a negative wealth makes an isoelastic agent's positions negative
                for k in range(K):
                    neg += e[k] > 0.0
        b = abs(spent - w)
        if b > budget or b != b:
            budget = b
    clear = 0.0
    for k in range(K):
        d = abs(col[k] - wsum * c[k]) / c[k]
        if d > clear or d != d:
            clear = d
    return clear, budget, neg


@njit(cache=True, parallel=True, error_model="numpy")
def check_items(lp, U, kind, inv_eta, W, floor, clear, budget, nneg):
    """:func:`check_item` for every item of ``lp`` (n, A, K) at log-prices ``U`` (n, K), items in
    parallel (``floor``: 0 for none); fills ``clear``, ``budget`` (n,) and ``nneg`` (n,) int64."""
    n, A, K = lp.shape
    for j in prange(n):
        col = np.empty(K)
        e = np.empty(K)
        c = np.empty(K)
        fr = np.empty(K)
        cl, bu, ng = check_item(lp[j], U[j], kind, inv_eta, W, floor, col, e, c, fr)
        clear[j] = cl
        budget[j] = bu
        nneg[j] = ng
