"""Cyclic coordinate descent epochs for ``(1/2)|b - A x|^2 + t1 |x|_1 + (t2/2)|x|^2`` (lasso, elastic net).

Each coordinate step is the exact minimisation over ``x_j`` with the residual ``R = b - A x`` kept up to date
(Friedman, Hastie & Tibshirani 2010, the method of scikit-learn's ``cd_fast`` and of celer/skglm's inner
solvers):

    x_j+ = S(L_j x_j + A_j^T R, t1) / (L_j + t2),   R -= (x_j+ - x_j) A_j,   L_j = |A_j|^2,

with ``S`` the soft threshold. A column with ``L_j = 0`` is left at 0 (its gradient is 0). The matrix is a
tuple ``M = (A, data, indices, indptr)``: a dense Fortran-ordered ``A`` (columns contiguous; the CSC arrays
empty) or a CSC matrix (``A`` empty), told apart per column by ``A.shape[1] > 0`` (:func:`storage` builds
``M``). :func:`cd_sweeps` runs ``n_epochs`` sweeps over the columns
``ws`` (a working set, in place: no copy of the columns), updating ``x`` and ``R``; :func:`column_dots` gives
``A_ws^T R`` (the working set's duality gap) and :func:`residual` ``b - A_ws x_ws`` (an extrapolated point).
Used by :mod:`solvers.methods.coordinate_descent`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..kernels_incremental.losses import soft

__all__ = ["cd_sweeps", "column_dots", "residual", "storage"]


def storage(A_dense=None, csc=None):
    """``M`` for a dense Fortran-ordered matrix or a ``scipy.sparse.csc_matrix``."""
    none_i, none_f = np.zeros(1, dtype=np.int64), np.zeros(0)
    if csc is not None:
        return (np.zeros((0, 0), order="F"), csc.data, csc.indices.astype(np.int64), csc.indptr.astype(np.int64))
    return (A_dense, none_f, none_i, none_i)


@njit(cache=True, fastmath=True)
def _dot(M, j, R):
    A, data, indices, indptr = M
    c = 0.0
    if A.shape[1] > 0:
        for i in range(A.shape[0]):
            c += A[i, j] * R[i]
    else:
        for p in range(indptr[j], indptr[j + 1]):
            c += data[p] * R[indices[p]]
    return c


@njit(cache=True, fastmath=True)
def _axpy(M, j, R, v):
    """``R += v A_j``."""
    A, data, indices, indptr = M
    if A.shape[1] > 0:
        for i in range(A.shape[0]):
            R[i] += v * A[i, j]
    else:
        for p in range(indptr[j], indptr[j + 1]):
            R[indices[p]] += v * data[p]


@njit(cache=True)
def _step(xj, Lj, c, t1, t2):
    return soft(Lj * xj + c, t1) / (Lj + t2)


@njit(cache=True)
def cd_sweeps(M, ws, R, x, L, t1, t2, n_epochs):
    """``n_epochs`` cyclic sweeps over the columns ``ws``; returns the largest ``|x_j+ - x_j|`` of the last."""
    biggest = 0.0
    for _ in range(n_epochs):
        biggest = 0.0
        for j in ws:
            if L[j] == 0.0:
                continue
            d = _step(x[j], L[j], _dot(M, j, R), t1, t2) - x[j]
            if d != 0.0:
                _axpy(M, j, R, -d)
                x[j] += d
                biggest = max(biggest, abs(d))
    return biggest


@njit(cache=True)
def column_dots(M, ws, R):
    """``A[:, ws]^T R`` without copying the columns."""
    out = np.empty(len(ws))
    for k in range(len(ws)):
        out[k] = _dot(M, ws[k], R)
    return out


@njit(cache=True)
def residual(M, ws, x_ws, b):
    """``b - A[:, ws] x_ws`` without copying the columns."""
    R = b.copy()
    for k in range(len(ws)):
        if x_ws[k] != 0.0:
            _axpy(M, ws[k], R, -x_ws[k])
    return R
