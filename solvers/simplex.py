"""The probability simplex: Euclidean projection, softmax parametrisation, mirror (EG) map, FW gap.

The simplex is ``Δ = {w in R^d : w_i >= 0, sum_i w_i = 1}``, the feasible set of every pool weight
vector (seed 000, Eq. 2.4-2.5 and 2.8).

- :func:`project_simplex`: exact Euclidean projection ``argmin_{z in Δ} ||z - x||``, by sorting
  (Held, Wolfe & Crowder 1974; Duchi et al. 2008, Fig. 1), O(d log d). Rows of a 2-D array are
  projected independently.
- :func:`softmax` / :func:`softmax_jacobian_vp`: the unconstrained parametrisation
  ``w = softmax(theta)`` (pull a simplex problem back to R^d; the chain rule is
  ``grad_theta = w * (g - <w, g>)``).
- :func:`mirror_step`: one exponentiated-gradient step, the mirror-descent step of the negative
  entropy on Δ: ``w_i <- w_i exp(-eta g_i) / Z`` (computed in log space).
- :func:`fw_gap`: the Frank-Wolfe gap ``<g, w> - min_i g_i``; for a convex ``f`` with gradient ``g``
  at a feasible ``w`` it bounds ``f(w) - min_Δ f`` from above, and is zero exactly at a KKT point.
  Every simplex solver of the core stops on it.
- :func:`solve_simplex_qp`: the small dense QP ``min ½ zᵀHz + cᵀz`` on Δ by a primal active-set
  method (the subproblem of projected Newton and projected quasi-Newton).
- :func:`simplex_metric_projection`: ``argmin_{x in Δ} ½ (x - v)ᵀH(x - v)``, the projection in the
  metric of ``H`` that bound majorization takes: the same QP with ``c = -Hv``, solved by
  :func:`solve_simplex_qp` (one QP driver; the second active-set loop it replaced differed in
  round-off only: bound majorization's ``f`` after 30 iterations moved by 1-3 ulp).

Why two projections: :func:`project_simplex` (NumPy, vectorised over rows, checked input) and the
compiled ``project_simplex_inplace`` of :mod:`solvers.kernels_incremental.loglinear_saga` (called per
step inside the numba epoch loops, where a NumPy call is impossible) are the same sort-based
algorithm with the same arithmetic (a test checks they agree bit for bit); the NumPy one does not
call the kernel because a numba dispatch plus a copy costs more than the NumPy code for the small
rows of the API and cannot project the rows of a 2-D array at once.
"""

from __future__ import annotations

import numpy as np

from .errors import InputError


def project_simplex(x: np.ndarray, radius: float = 1.0) -> np.ndarray:
    """Euclidean projection of ``x`` (1-D, or each row of a 2-D array) onto ``{z >= 0, sum z = radius}``.

    Sort-based exact algorithm: with ``u`` sorted in decreasing order, ``rho`` the largest ``j``
    with ``u_j - (sum_{r<=j} u_r - radius)/j > 0`` and ``tau = (sum_{r<=rho} u_r - radius)/rho``,
    the projection is ``max(x - tau, 0)``.
    """
    if radius <= 0:
        raise InputError("radius", f"must be positive; got {radius!r}")
    a = np.asarray(x, dtype=np.float64)
    if a.ndim not in (1, 2):
        raise InputError("x", f"must be 1-D or 2-D; got shape {a.shape}")
    if not np.isfinite(a).all():
        raise InputError("x", "must be finite")
    two_d = a.ndim == 2
    a2 = a if two_d else a[None, :]
    u = -np.sort(-a2, axis=1)
    css = np.cumsum(u, axis=1) - radius
    j = np.arange(1, a2.shape[1] + 1)
    cond = u - css / j > 0
    rho = a2.shape[1] - 1 - np.argmax(cond[:, ::-1], axis=1)  # last index where cond holds
    tau = css[np.arange(a2.shape[0]), rho] / (rho + 1)
    out = np.maximum(a2 - tau[:, None], 0.0)
    return out if two_d else out[0]


def softmax(theta: np.ndarray) -> np.ndarray:
    """``w = exp(theta - logsumexp(theta))``: maps R^d onto the relative interior of the simplex."""
    t = np.asarray(theta, dtype=np.float64)
    e = np.exp(t - t.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def log_softmax(theta: np.ndarray) -> np.ndarray:
    t = np.asarray(theta, dtype=np.float64)
    m = t.max(axis=-1, keepdims=True)
    return t - m - np.log(np.exp(t - m).sum(axis=-1, keepdims=True))


def softmax_jacobian_vp(w: np.ndarray, g: np.ndarray) -> np.ndarray:
    """``J(theta)^T g`` for ``w = softmax(theta)``: ``w * (g - <w, g>)`` (the chain rule)."""
    return w * (g - np.dot(w, g))


def mirror_step(w: np.ndarray, g: np.ndarray, eta: float) -> np.ndarray:
    """Exponentiated-gradient (entropic mirror-descent) step ``w * exp(-eta g)`` renormalised.

    Zero weights stay zero (the entropy mirror map never leaves a face it starts on).
    """
    with np.errstate(divide="ignore"):
        lw = np.log(np.asarray(w, dtype=np.float64)) - eta * np.asarray(g, dtype=np.float64)
    return softmax(lw)


def fw_gap(w: np.ndarray, g: np.ndarray) -> float:
    """Frank-Wolfe gap ``<g, w> - min_i g_i >= f(w) - f*`` for convex f on the simplex."""
    return float(np.dot(g, w) - np.min(g))


def _equality_qp(HFF: np.ndarray, top: np.ndarray, border: float, last: float) -> tuple[np.ndarray, float]:
    """Solve the bordered KKT system ``[[HFF, border 1], [1ᵀ, 0]] [z; nu] = [top; last]`` of an
    equality-constrained QP on the free set (least squares when it is singular); returns ``(z, nu)``."""
    k = top.shape[0]
    K = np.zeros((k + 1, k + 1))
    K[:k, :k] = HFF
    K[:k, k] = border
    K[k, :k] = 1.0
    rhs = np.concatenate([top, [last]])
    try:
        sol = np.linalg.solve(K, rhs)
    except np.linalg.LinAlgError:
        sol = np.linalg.lstsq(K, rhs, rcond=None)[0]
    return sol[:k], float(sol[k])


def solve_simplex_qp(
    H: np.ndarray,
    c: np.ndarray,
    z0: np.ndarray | None = None,
    *,
    tol: float = 1e-12,
    max_iter: int | None = None,
) -> tuple[np.ndarray, int]:
    """Minimise ``½ zᵀ H z + cᵀ z`` over the simplex by a primal active-set method.

    ``H`` must be symmetric positive semi-definite; a tiny ridge ``1e-13 * max(diag H)`` keeps the
    equality-constrained KKT systems solvable when it is singular. ``z0`` is a feasible start
    (default: the vertex with the smallest ``c_i``). Returns ``(z, iterations)``; exact zeros are
    returned for the coordinates that end on the boundary.

    Each iteration solves the equality QP on the free set ``F``
    (``H_FF z_F + c_F = nu 1``, ``1ᵀ z_F = 1``); a step that would leave the simplex stops at the
    first blocking coordinate, which joins the active set; at a feasible stationary point the
    coordinate with the most negative multiplier ``(Hz + c)_i - nu`` is freed, until none is.
    """
    H = np.asarray(H, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    d = c.shape[0]
    if H.shape != (d, d):
        raise InputError("H", f"must have shape ({d}, {d}); got {H.shape}")
    ridge = 1e-13 * max(float(np.max(np.abs(np.diag(H)))) if d else 0.0, 1e-300)
    Hr = H + ridge * np.eye(d)
    if z0 is None:
        z = np.zeros(d)
        z[int(np.argmin(c))] = 1.0
    else:
        z = np.array(z0, dtype=np.float64, copy=True)
        z[z < 0] = 0.0
        s = z.sum()
        z = z / s if s > 0 else np.full(d, 1.0 / d)
    free = z > 0
    scale = max(1.0, float(np.max(np.abs(c))), float(np.max(np.abs(np.diag(H)))) if d else 1.0)
    max_iter = max_iter or (4 * d + 50)
    it = 0
    for it in range(1, max_iter + 1):
        F = np.flatnonzero(free)
        nF = F.size
        zF, nu = _equality_qp(Hr[np.ix_(F, F)], -c[F], -1.0, 1.0)
        if np.all(zF >= 0):
            z = np.zeros(d)
            z[F] = zF
            lam = Hr @ z + c - nu
            lam[F] = 0.0
            i = int(np.argmin(lam))
            if lam[i] >= -tol * scale:
                return z, it
            free[i] = True
            continue
        # step towards zF until the first coordinate hits zero
        cur = z[F]
        dec = zF < cur
        ratios = np.full(nF, np.inf)
        ratios[dec] = cur[dec] / (cur[dec] - zF[dec])
        j = int(np.argmin(ratios))
        alpha = min(1.0, max(0.0, ratios[j]))
        newF = cur + alpha * (zF - cur)
        newF[j] = 0.0
        newF[newF < 0] = 0.0
        z = np.zeros(d)
        z[F] = newF
        z /= z.sum()
        free[F[j]] = False
        free &= z > 0
    return z, it


def simplex_metric_projection(
    H: np.ndarray, v: np.ndarray, x_start: np.ndarray | None = None, max_iter: int | None = None
) -> np.ndarray:
    """``argmin_{x in simplex} 1/2 (x - v)^T H (x - v)``: :func:`solve_simplex_qp` with ``c = -H v``.

    ``H`` symmetric positive (semi)definite, ``(d, d)`` or its diagonal ``(d,)``; ``x_start`` a feasible
    warm start (default the barycentre).
    """
    H = np.diag(H) if H.ndim == 1 else np.asarray(H, dtype=np.float64)
    d = len(v)
    start = np.full(d, 1.0 / d) if x_start is None else x_start
    return solve_simplex_qp(H, -(H @ np.asarray(v, dtype=np.float64)), start, max_iter=max_iter)[0]
