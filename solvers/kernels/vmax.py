"""The largest element of a vector, by eight independent running maxima, for compiled loops.

The max-shift of every stable exponential pass (``exp(x - max x)``) was a loop
``m = max(m, x[y])``: one comparison after another, each waiting on the last (about 1.5 ns an
element here, the latency of a compare and select), and LLVM vectorises no floating-point max
reduction without the no-NaN flag, which it then did not use either (measured: 6.7 ms for
``1,000 × 4,096`` numbers with and without it). Eight running maxima over interleaved elements
cut the chain eight-fold: 2.3 ms, the time of reading the numbers (``/tmp/s26/mx2.py``, session 26).
In the Rényi adjoint's exponential pass at ``A = 1,000``, ``K = 4,096`` the shift was 6 of its 12 ms.

The result is the exact maximum (a max is not rounded, so the order does not matter). NaN is never
taken (``v > m`` is false for it), as in the loops it replaces; an empty vector or one of NaN and
``-inf`` only gives ``-inf``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .rows import at


@njit(cache=True, inline="always")
def vmax(x):
    """``max(x)`` of a 1-D array (``-inf`` if empty), eight independent comparisons at a time."""
    return vmax_row(x, 0)


@njit(cache=True, inline="always")
def vmax_row(x, i):
    """``max(x[i])`` of a 2-D array without a view of the row (:mod:`solvers.kernels.rows`); of a 1-D
    ``x``, ``max(x)`` (``i`` ignored)."""
    n = x.shape[-1]
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = -np.inf
    y = 0
    while y + 8 <= n:
        m0 = at(x, i, y) if at(x, i, y) > m0 else m0
        m1 = at(x, i, y + 1) if at(x, i, y + 1) > m1 else m1
        m2 = at(x, i, y + 2) if at(x, i, y + 2) > m2 else m2
        m3 = at(x, i, y + 3) if at(x, i, y + 3) > m3 else m3
        m4 = at(x, i, y + 4) if at(x, i, y + 4) > m4 else m4
        m5 = at(x, i, y + 5) if at(x, i, y + 5) > m5 else m5
        m6 = at(x, i, y + 6) if at(x, i, y + 6) > m6 else m6
        m7 = at(x, i, y + 7) if at(x, i, y + 7) > m7 else m7
        y += 8
    while y < n:
        m0 = at(x, i, y) if at(x, i, y) > m0 else m0
        y += 1
    m0 = m1 if m1 > m0 else m0
    m2 = m3 if m3 > m2 else m2
    m4 = m5 if m5 > m4 else m4
    m6 = m7 if m7 > m6 else m6
    m0 = m2 if m2 > m0 else m0
    m4 = m6 if m6 > m4 else m4
    return m4 if m4 > m0 else m0
