"""The data rows of the linear and softmax models, and what the compiled kernels read of them.

:func:`as_rows` validates ``X`` once (dense C-contiguous float64, or CSR with int32 indices so that
the numba kernels compile one signature); :class:`Rows` is the dense-or-CSR view the kernels take as
``*rows.args()``, extended by :class:`~solvers.problems.linear_models.LinearTerms` and
:class:`~solvers.problems.softmax_regression.MultinomialTerms`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from ..kernels_incremental.losses import DUMMY2, DUMMY_F, DUMMY_I

__all__ = ["Rows", "as_rows", "check_penalties", "row_sqnorms", "rows_of"]


@dataclass(frozen=True)
class Rows:
    """Dense rows ``X`` (a ``(0, 0)`` dummy when sparse) or the CSR arrays (dummies when dense)."""

    X: np.ndarray
    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    sparse: bool

    def args(self) -> tuple:
        return (self.X, self.data, self.indices, self.indptr, self.sparse)

    def csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(data, indices, indptr)``: what the sparse-only kernels take as ``*rows.csr()``."""
        return (self.data, self.indices, self.indptr)


def row_sqnorms(A) -> np.ndarray:
    """Squared row norms ``|a_i|^2`` of dense or CSR rows."""
    if sp.issparse(A):
        return np.asarray(A.multiply(A).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", A, A)


def check_penalties(**coefs: float) -> None:
    """Each regularisation coefficient (``l2=``, ``l1=``) must be a finite number >= 0."""
    for name, v in coefs.items():
        if not np.isfinite(v) or v < 0:
            raise InputError(name, f"must be a finite number >= 0; got {v}")


def rows_of(A) -> dict:
    """The :class:`Rows` fields of ``A`` (the output of :func:`as_rows`), as keyword arguments."""
    if sp.issparse(A):
        return dict(X=DUMMY2, data=A.data, indices=A.indices, indptr=A.indptr, sparse=True)
    return dict(X=A, data=DUMMY_F, indices=DUMMY_I, indptr=DUMMY_I, sparse=False)


def as_rows(X) -> np.ndarray | sp.csr_matrix:
    """``X`` as a finite float64 C-contiguous array or a canonical CSR matrix (int32 indices when they fit)."""
    if sp.issparse(X):
        A = sp.csr_matrix(X, dtype=np.float64)
        A.sum_duplicates()
        A.sort_indices()
        if A.nnz < 2**31 and (A.indices.dtype != np.int32 or A.indptr.dtype != np.int32):
            # one index type, so the compiled kernels have one signature (compiled once)
            A = sp.csr_matrix((A.data, A.indices.astype(np.int32), A.indptr.astype(np.int32)), shape=A.shape)
        if not np.all(np.isfinite(A.data)):
            raise InputError("X", "contains NaN or infinite values")
        return A
    A = np.ascontiguousarray(np.asarray(X, dtype=np.float64))
    if A.ndim != 2:
        raise InputError("X", f"must be a 2-D array (n_samples, n_features); got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise InputError("X", "contains NaN or infinite values")
    return A
