"""The diagonal Newton step in log-prices: the global phase of Newton-CG on the general path.

At the start of a mixed market (agents of several orders) the clearing residual
``max_k |T_k - Wsum c_k| / c_k`` is large (10-10^5 on the grid of ``benchmarks/bench_markets_grid.py``)
and Newton-CG spends its first two or three steps, about 1.6 evaluations' worth each, getting into
its quadratic region. Good ``k``'s spending ``T_k = sum_i W_i Q_ik`` moves with its own log-price
as ``d T_k / d u_k = D_k - sum_i W_i (1 - g_i) Q_ik^2``, where ``D_k = sum_i W_i g_i Q_ik`` is the
diagonal of ``-S`` (:func:`markets.kernels.newton_cg.general_diagonal`; seed 000 Eq. 2.34-2.36): for a
good no single agent dominates, about ``D_k``. Clearing good ``k`` alone in log space,
``log T_k(u_k + s) = log(Wsum c_k) + s``, with ``T_k`` of constant elasticity ``D_k / T_k`` (exact
for one order ``g``, where ``T_k`` is proportional to ``c_k^(1-g)`` at fixed ``z_i``), gives

    s_k = log(T_k / (Wsum c_k)) * T_k / D_k,

the seed's fixed point (``s_k = log(T_k / (Wsum c_k))``, Storkey et al. 2012) over-relaxed per good
by the inverse of its buyers' wealth-averaged order ``T_k / D_k`` (1 for log agents, 30 for
``eta = 30``). Its cost is one evaluation and one pass over ``Q`` (no CG products).

Measured (session 37, the grid's mixed markets ``eta = 2, 10, 30, log``, three families, K 256-4,096,
A 10-1,000, one item each, ``tol = 1e-10``): while the residual is above 1 and each step at least
halves it, two to four such steps replace two Newton steps (logit 1,024 x 100: 6 Newton steps
against 2 diagonal steps and 4 Newton steps; Dirichlet 1,024 x 1,000: 7 against 4 and 3); below a
residual of 1 Newton's quadratic rate wins. A step that does not lower the residual is undone and
Newton takes over from the point before it (Dirichlet 1,024 x 10 overshoots on its second step).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.kernels.fastlog import log_into
from solvers.kernels.simplex_log import normalise_log_with
from solvers.kernels.vmax import vmax_abs

from .line_search import MAX_LOG_STEP

JACOBI_UNTIL = 1.0
"""The diagonal steps run while the clearing residual is above this (module docstring)."""
JACOBI_RATE = 0.5
"""... and while each step multiplies it by at most this."""


@njit(cache=True, error_model="numpy")
def jacobi_log_step(u, T, Wsum, dg, un, x):
    """``un = u + s`` normalised, ``s_k = log(T_k / (Wsum c_k)) T_k / D_k`` (module docstring) with
    ``dg = D``, the whole step scaled so that no log-price moves by more than
    :data:`markets.kernels.line_search.MAX_LOG_STEP`. ``x``: a scratch of K floats. Returns False
    (``un`` untouched) where some ``T_k`` or ``D_k`` is not positive (then the step is not defined)."""
    K = u.shape[0]
    if not (Wsum > 0.0):
        return False
    for k in range(K):
        if not (T[k] > 0.0 and dg[k] > 0.0):
            return False
    log_into(T, x)
    lw = np.log(Wsum)
    for k in range(K):
        un[k] = (x[k] - lw - u[k]) * (T[k] / dg[k])
    m = vmax_abs(un[:K])
    t = 1.0 if m <= MAX_LOG_STEP else MAX_LOG_STEP / m
    for k in range(K):
        un[k] = u[k] + t * un[k]
    normalise_log_with(un, x)
    return True
