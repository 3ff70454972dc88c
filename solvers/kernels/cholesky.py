"""Small dense triangular solves for compiled per-item Newton steps (K is small: no LAPACK call)."""

from __future__ import annotations

from numba import njit


@njit(cache=True, error_model="numpy")
def cho_solve(C, b, out):
    """Solve ``C Cᵀ x = b`` into ``out`` with ``C`` lower triangular; ``out`` may be ``b`` itself
    (each ``b[y]`` is read before ``out[y]`` is written)."""
    K = b.shape[0]
    for y in range(K):
        s = b[y]
        for k in range(y):
            s -= C[y, k] * out[k]
        out[y] = s / C[y, y]
    for y in range(K - 1, -1, -1):
        s = out[y]
        for k in range(y + 1, K):
            s -= C[k, y] * out[k]
        out[y] = s / C[y, y]
