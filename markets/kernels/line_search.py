"""The safeguarded step shared by both Newton drivers: mirror-gradient fall-back, capped first
trial and a rounding-aware Armijo line search on the potential Phi."""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.kernels.fastexp import exp_scaled
from solvers.kernels.simplex_log import normalise_log_with
from solvers.kernels.vmax import vmax_abs

from .isoelastic import iso_pass
from .potential import evaluate, evaluate_into


@njit(cache=True, error_model="numpy")
def _mirror_direction(u, T, Wsum, d):
    """The mirror-gradient fall-back ``d_k = (T_k - Wsum c_k) / c_k``: always an ascent
    direction of Phi (``grad . d = sum_k (T_k - Wsum c_k)^2 / c_k``)."""
    for k in range(u.shape[0]):
        ck = np.exp(u[k])
        d[k] = (T[k] - Wsum * ck) / ck


@njit(cache=True, fastmath={"reassoc", "contract"}, error_model="numpy")
def _slope(u, T, Wsum, d, x):
    """Directional derivative of Phi in ``u`` along ``d`` (the gradient is the excess spending);
    ``x`` a scratch of K floats (the vectorised exp)."""
    exp_scaled(u, 1.0, x)
    gd = 0.0
    for k in range(u.shape[0]):
        gd += (T[k] - Wsum * x[k]) * d[k]
    return gd


MAX_LOG_STEP = 10.0
"""Largest change of any log-price in one line-search trial. In ``u`` the potential is not concave:
far from the answer a full Newton (or mirror) step can overshoot by hundreds into a region where a
good's price is negligible, the Armijo test still passes, and Newton then climbs back about one unit
per iteration (found by hypothesis: an online-training step with a nearly bankrupt eta = 0.5 agent,
warm-started at the previous epoch's prices, stepped a log-price from -8.9 to -375 and did not
converge in 100 iterations). Scaling the direction keeps it an ascent direction, and near the
answer Newton steps are far shorter, so the local quadratic rate is unchanged."""


@njit(cache=True, error_model="numpy")
def first_step(d):
    """The line search's first trial step: 1, or less so that no log-price moves by more than
    :data:`MAX_LOG_STEP`."""
    m = vmax_abs(d)
    return 1.0 if m <= MAX_LOG_STEP else MAX_LOG_STEP / m


@njit(cache=True, error_model="numpy")
def trial(u, d, t, un, x):
    """``un = u + t d``, normalised (``x``: a scratch of K floats for the vectorised exp)."""
    for k in range(u.shape[0]):
        un[k] = u[k] + t * d[k]
    normalise_log_with(un, x)


@njit(cache=True, error_model="numpy")
def _ascent_ok(phin, phi, resn, res, t, gd, K):
    """Armijo test on Phi, rounding-aware: a step whose gain is within rounding of zero is
    accepted if it lowers the clearing residual (Phi is flat to working precision near the top).
    Phi sums K terms, so its rounding grows with K: ``max(1e-13, 8 K eps) (1 + |Phi|)`` (with 1e-13
    alone, Newton-CG at K = 4,096 saw every step near the answer lose 2e-13 of Phi and stalled
    at a clearing error of 2.6e-10 for 100 iterations)."""
    gain = phin - phi
    noise = max(1e-13, 8.0 * K * 2.220446049250313e-16) * (1.0 + abs(phi))
    return gain >= 1e-4 * t * gd or (abs(gain) <= noise and resn < res)


@njit(cache=True, error_model="numpy")
def _eval_at(lean, u, W, Wsum, T, cp, PgT, g, z, s, L, kind, inv_eta, Pg, Q, B, D):
    """Potential, residual and negative-position count at ``u`` by the lean one-order pass
    (``lean``: reads ``PgT, g, z, s``) or by the general
    :func:`markets.kernels.potential.evaluate_into` (reads ``L, kind, inv_eta, Pg, Q, B``; fills
    the diagonal and ``h`` into ``D`` (3, K) unless it is None); both fill the spending ``T``."""
    if lean:
        phi, res = iso_pass(PgT, g, W, Wsum, u, z, s, T, cp, True)
        return phi, res, 0
    if D is None:  # a compile-time branch: every driver but the tracked Newton-CG passes None
        return evaluate(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp)
    return evaluate_into(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp, D)


@njit(cache=True, error_model="numpy")
def safeguarded_step(ok, u, d, un, phi, res, lean, W, Wsum, T, cp, PgT, g, z, s, L, kind, inv_eta, Pg, Q, B, x, D):
    """One iteration of the safeguarded phase shared by both Newton drivers: the Newton direction
    ``d`` if ``ok`` (else, or if its line search fails, the mirror-gradient direction), Armijo
    backtracking on Phi from the capped first trial :func:`first_step`. Returns
    ``(accepted, phi, res, n_negative)``: at the trial point ``un`` if accepted (the caller moves
    ``u`` there), else at ``u`` (buffers restored; no progress is possible at working precision). ``x``: a scratch of
    K floats; ``D``: (3, K) for the diagonal and ``h`` of the general path at the point returned
    (:func:`markets.kernels.potential.evaluate_into`), or None (each its own specialisation: with a
    choice at run time, an item of two agents and two goods took 1.2-1.5x as long on the dense
    path, session 38, and 1.1x on Newton-CG at 64 goods, session 39)."""
    nneg = 0
    for attempt in range(2):
        if not ok or attempt == 1:
            _mirror_direction(u, T, Wsum, d)
        gd = _slope(u, T, Wsum, d, x)
        if not (gd > 0.0):
            if attempt == 0:
                continue
            break
        t = first_step(d)
        for _ls in range(60):
            trial(u, d, t, un, x)
            phin, resn, nn = _eval_at(lean, un, W, Wsum, T, cp, PgT, g, z, s, L, kind, inv_eta, Pg, Q, B, D)
            if _ascent_ok(phin, phi, resn, res, t, gd, u.shape[0]):
                return True, phin, resn, nn
            t *= 0.5
        # restore the buffers at u (the line search overwrote them) before the fall-back
        phi, res, nneg = _eval_at(lean, u, W, Wsum, T, cp, PgT, g, z, s, L, kind, inv_eta, Pg, Q, B, D)
        if not ok:
            break
    return False, phi, res, nneg
