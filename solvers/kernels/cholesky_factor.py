"""Cholesky factorisation of a small dense SPD matrix for compiled per-item Newton steps.

One factorisation for the Rényi aggregator's Newton step (:mod:`aggregators.renyi_kernels`) and the
market equilibrium's Newton direction (:mod:`markets.kernels.direction`); the triangular solve that
follows is :func:`solvers.kernels.cholesky.cho_solve`. K is small (the number of classes): no LAPACK
call, no allocation.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def cho_factor(H, C, min_pivot, clamp):
    """Lower Cholesky factor ``C`` of the symmetric positive-definite ``H`` (only the lower
    triangle of ``H`` is read, only the lower triangle of ``C`` is written). Returns True on
    success.

    A pivot ``s`` is *bad* when it is not ``> min_pivot * |H_jj|`` or not ``> 0`` (rounding has
    made the matrix numerically indefinite). Two policies:

    * ``clamp`` False: stop and return False (the caller falls back to another direction; the
      markets' Newton step, with ``min_pivot = 1e-14``; ``C`` is then partly written);
    * ``clamp`` True: replace a pivot ``s <= 0`` by ``1e-300`` and go on (the Rényi Newton step,
      whose line search then rejects the huge step; ``min_pivot`` is not used).
    """
    K = H.shape[0]
    for j in range(K):
        s = H[j, j]
        for p in range(j):
            s -= C[j, p] * C[j, p]
        if not (s > min_pivot * abs(H[j, j])) or not (s > 0.0):
            if not clamp:
                return False
            if s <= 0.0:
                s = 1e-300
        d = np.sqrt(s)
        C[j, j] = d
        inv = 1.0 / d
        for i in range(j + 1, K):
            t = H[i, j]
            for p in range(j):
                t -= C[i, p] * C[j, p]
            # the Rényi step has always divided, the markets' step multiplied by the reciprocal:
            # both kept, so that neither's results change in the last bit
            C[i, j] = t / d if clamp else t * inv
    return True
