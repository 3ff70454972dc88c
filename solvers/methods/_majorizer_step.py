"""The step of bound majorization: minimise the quadratic majorizer ``g^T D + 1/2 D^T H D`` over Lambda.

Unconstrained, the bound-Newton point ``x - H^{-1} g`` (Cholesky; the minimum-norm pseudo-inverse
step when ``H`` is singular); on the simplex, that point projected in the metric of ``H``
(:func:`solvers.simplex.simplex_metric_projection`); for any other convex set, a user
``projection(H, v, x)``. ``H`` may be a full matrix or a diagonal (``curvature="diag"``).

Not a solver module (leading underscore: not auto-imported by :mod:`solvers.methods`).
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from ..errors import InputError
from ..simplex import simplex_metric_projection

__all__ = ["add_lam", "minimise_majorizer", "newton_point"]


def newton_point(x: np.ndarray, g: np.ndarray, H: np.ndarray) -> np.ndarray:
    """``x - H^{-1} g`` (Cholesky; minimum-norm pseudo-inverse step if ``H`` is singular)."""
    if H.ndim == 1:
        return x - g / np.where(H > 0, H, np.inf)
    try:
        c = linalg.cho_factor(H, check_finite=False)
        return x - linalg.cho_solve(c, g, check_finite=False)
    except linalg.LinAlgError:
        e, V = np.linalg.eigh(H)
        keep = e > 1e-12 * max(e.max(), 1e-300)
        return x - V[:, keep] @ ((V[:, keep].T @ g) / e[keep])


def minimise_majorizer(x, g, H, constraint, projection):
    """The minimiser over Lambda of the majorizer at ``x`` (see the module docstring)."""
    v = newton_point(x, g, H)
    if constraint == "none":
        return v
    if projection is not None:
        return projection(H, v, x)
    if constraint == "simplex":
        return simplex_metric_projection(H, v, x)
    raise InputError("problem", f"bound majorization handles constraints 'none' and 'simplex', not {constraint!r}")


def add_lam(S: np.ndarray, lam: float) -> np.ndarray:
    """``H = S + lam I`` (``S`` full or diagonal; a copy)."""
    if S.ndim == 1:
        return S + lam
    H = S.copy()
    H[np.diag_indices_from(H)] += lam
    return H
