"""Cyclic coordinate descent epochs for ``(1/2)|b - A x|^2 + t1 |x|_1 + (t2/2)|x|^2`` (lasso, elastic net).

Each coordinate step is the exact minimisation over ``x_j`` with the residual ``R = b - A x`` kept up to date
(Friedman, Hastie & Tibshirani 2010, the method of scikit-learn's ``cd_fast`` and of celer/skglm's inner
solvers):

    x_j+ = S(L_j x_j + A_j^T R, t1) / (L_j + t2),   R -= (x_j+ - x_j) A_j,   L_j = |A_j|^2,

with ``S`` the soft threshold. A column with ``L_j = 0`` is left at 0 (its gradient is 0). One kernel for a
dense Fortran-ordered ``A`` (columns contiguous) and one for a CSC matrix; both run ``n_epochs`` sweeps over
the columns ``ws`` (a working set, in place: no copy of the columns) and update ``x`` and ``R`` in place;
``column_dots_*`` give ``A_ws^T R`` for the working set's duality gap, ``residual_*`` the residual
``b - A_ws x_ws`` of an extrapolated point. Used by
:mod:`solvers.methods.coordinate_descent` on its working sets.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["cd_epochs_dense", "cd_epochs_csc", "column_dots_dense", "column_dots_csc", "residual_dense", "residual_csc"]


@njit(cache=True)
def _step(xj, Lj, c, t1, t2):
    z = Lj * xj + c
    a = abs(z) - t1
    return 0.0 if a <= 0.0 else np.sign(z) * a / (Lj + t2)


@njit(cache=True, fastmath=True)
def cd_epochs_dense(A, ws, R, x, L, t1, t2, n_epochs):
    """``n_epochs`` cyclic sweeps over the columns ``ws`` of the dense ``A`` (n, d), Fortran order; returns the
    largest ``|x_j+ - x_j|`` of the last sweep."""
    n = A.shape[0]
    biggest = 0.0
    for _ in range(n_epochs):
        biggest = 0.0
        for j in ws:
            if L[j] == 0.0:
                continue
            c = 0.0
            for i in range(n):
                c += A[i, j] * R[i]
            new = _step(x[j], L[j], c, t1, t2)
            d = new - x[j]
            if d != 0.0:
                for i in range(n):
                    R[i] -= d * A[i, j]
                x[j] = new
                biggest = max(biggest, abs(d))
    return biggest


@njit(cache=True, fastmath=True)
def cd_epochs_csc(data, indices, indptr, ws, R, x, L, t1, t2, n_epochs):
    """The same sweeps for a CSC matrix given by ``data, indices, indptr``."""
    biggest = 0.0
    for _ in range(n_epochs):
        biggest = 0.0
        for j in ws:
            if L[j] == 0.0:
                continue
            c = 0.0
            for p in range(indptr[j], indptr[j + 1]):
                c += data[p] * R[indices[p]]
            new = _step(x[j], L[j], c, t1, t2)
            d = new - x[j]
            if d != 0.0:
                for p in range(indptr[j], indptr[j + 1]):
                    R[indices[p]] -= d * data[p]
                x[j] = new
                biggest = max(biggest, abs(d))
    return biggest


@njit(cache=True, fastmath=True)
def column_dots_dense(A, ws, R):
    """``A[:, ws]^T R`` without copying the columns."""
    n = A.shape[0]
    out = np.empty(len(ws))
    for k in range(len(ws)):
        j = ws[k]
        c = 0.0
        for i in range(n):
            c += A[i, j] * R[i]
        out[k] = c
    return out


@njit(cache=True, fastmath=True)
def column_dots_csc(data, indices, indptr, ws, R):
    """``A[:, ws]^T R`` for a CSC matrix."""
    out = np.empty(len(ws))
    for k in range(len(ws)):
        j = ws[k]
        c = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            c += data[p] * R[indices[p]]
        out[k] = c
    return out


@njit(cache=True, fastmath=True)
def residual_dense(A, ws, x_ws, b):
    """``b - A[:, ws] x_ws`` without copying the columns."""
    R = b.copy()
    n = A.shape[0]
    for k in range(len(ws)):
        j, v = ws[k], x_ws[k]
        if v != 0.0:
            for i in range(n):
                R[i] -= v * A[i, j]
    return R


@njit(cache=True, fastmath=True)
def residual_csc(data, indices, indptr, ws, x_ws, b):
    """``b - A[:, ws] x_ws`` for a CSC matrix."""
    R = b.copy()
    for k in range(len(ws)):
        j, v = ws[k], x_ws[k]
        if v != 0.0:
            for p in range(indptr[j], indptr[j + 1]):
                R[indices[p]] -= v * data[p]
    return R
