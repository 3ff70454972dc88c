"""Anderson acceleration of the seed's fixed point (type II, memory ``m``; Walker & Ni 2011).

The seed's update (Storkey et al. 2012; seed 000 section 2.8.1.2, Eq. 2.27-2.29 at the answer) is
``u <- G(u) = log(T(u) / sum_i W_i)`` normalised, with ``T`` the total spending. Its Jacobian at
the equilibrium is ``(1 - g) [I - diag(1/T) sum_i W_i Q_i Q_i^T]`` for one order ``g = 1/eta``
(``Q_i`` the effective beliefs of Eq. 2.35): eigenvalues in ``[0, 1 - g]``, all but at most A of
them equal to ``1 - g``. The plain iteration contracts by ``1 - g`` per pass (172 passes at
``eta = 10``); Anderson's least-squares combination of the last ``m`` steps (a GMRES-like method on
the fixed point) removes the clustered eigenvalue in one step and the spread ones at a Krylov rate,
and costs one pass plus O(K m) per iteration, never a K x K matrix.

Each iteration: ``f = G(u) - u``; with the last ``m`` differences ``dF`` of ``f`` and ``dG`` of
``G(u)``, ``gamma = argmin |f - dF gamma|`` and ``u <- G(u) - dG gamma`` (the step is
:func:`solvers.kernels.anderson.anderson_step`, shared with the Rényi aggregate).
Safeguards: an extrapolation that moves a log-price more than ``MAX_LOG_STEP`` away from the plain
step ``G(u)`` (or is not finite) is replaced by ``G(u)`` and the history cleared (on an extreme
market of the far-start test an extrapolation sent two log-prices to -4,198: their prices underflow
to 0, and the clearing residual, divided by the price, no longer sees them); a step whose clearing
residual is not finite or grows by more than ``GROWTH`` is replaced by the plain step (history
cleared), and so is a stall (no new lowest residual in ``m + 1`` steps: at eta = 200 on an extreme
market of that test Anderson hovered at a clearing error of 0.06 for 100,000 passes); after
``MAX_REJECTIONS`` of those the plain fixed point runs to the end, so the method converges wherever
the seed's does.
"""

from __future__ import annotations

from numba import njit

from solvers.kernels.anderson import anderson_step, plain_fallback, plain_image, track_best

from .isoelastic import iso_pass
from .line_search import MAX_LOG_STEP
from .potential import evaluate_spending

MEMORY = 5
"""Steps kept (``m``). Measured on the grid's three families, K 16-1,024, A 2-1,000, eta 2-30:
memory 3, 5 and 10 took 4-100, 4-25 and 4-18 passes (5 the best median)."""
GROWTH = 4.0
"""An accelerated step may raise the clearing residual by at most this factor."""
MAX_REJECTIONS = 3
"""Rejected accelerated steps after which the plain fixed point takes over for good."""


@njit(cache=True, error_model="numpy")
def _pass(lean, u, W, Wsum, T, cp, PgT, g, z, s, L, kind, inv_eta, Pg, Q, B):
    """The clearing residual at ``u`` after one pass: the lean one-order pass or the general
    evaluation (both fill the spending ``T``)."""
    if lean:
        return iso_pass(PgT, g, W, Wsum, u, z, s, T, cp, False)[1]
    return evaluate_spending(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp)[1]


@njit(cache=True, error_model="numpy")
def anderson_loop(lean, res, tol, max_iter, u, scr, W, Wsum, T, cp, PgT, g, z, s, L, kind, inv_eta, Pg, Q, B):
    """The accelerated fixed point from ``u`` whose pass (residual ``res``, spending ``T``) is done;
    the pass is the lean one (``PgT, g, z, s``) or the general one (``L, kind, inv_eta, Pg, Q, B``).
    ``scr`` holds :func:`anderson_size` ``(K, MEMORY)`` floats. Iterations count passes (a rejected
    step costs two). Returns ``(n_iter, residual)``."""
    K = u.shape[0]
    m = MEMORY
    n_hist, pos, rejected = -1, 0, 0
    best, stalled = res, 0
    it = 0
    while res > tol and it < max_iter:
        it += 1
        if rejected >= MAX_REJECTIONS:
            plain_image(u, T, Wsum, u)
            res = _pass(lean, u, W, Wsum, T, cp, PgT, g, z, s, L, kind, inv_eta, Pg, Q, B)
            continue
        n_hist, pos = anderson_step(u, T, Wsum, n_hist, pos, m, scr, MAX_LOG_STEP)
        resn = _pass(lean, u, W, Wsum, T, cp, PgT, g, z, s, L, kind, inv_eta, Pg, Q, B)
        if not (resn <= GROWTH * res):
            rejected += 1
            n_hist = -1
            plain_fallback(u, K, m, scr)
            it += 1
            resn = _pass(lean, u, W, Wsum, T, cp, PgT, g, z, s, L, kind, inv_eta, Pg, Q, B)
        res = resn
        best, stalled, rejected, n_hist = track_best(res, best, stalled, rejected, n_hist, m)
    return it, res
