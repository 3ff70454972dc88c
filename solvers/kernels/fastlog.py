"""A vectorisable ``log`` for compiled loops (the companion of :mod:`solvers.kernels.fastexp`).

numba compiles ``np.log`` to a scalar libm call (about 8 ns per element here, under load); this
kernel is branch-free in its main loops, so LLVM vectorises it.

Method (textbook, as in fdlibm's ``log``): ``x = 2^e m`` with ``m`` in ``[sqrt(2)/2, sqrt(2))``, read
from the bits (the exponent is turned into a double with the ``2^52`` shift, so no integer-to-float
conversion is needed; the bits are read by :mod:`solvers.kernels.bitcast`, so the main pass is one
loop); with ``f = m - 1`` (exact) and ``s = f / (2 + f)``,

    log(m) = 2 atanh(s) = f - s (f - R),   R = 2 (s²/3 + s⁴/5 + ... + s²²/23),

(``|s| <= 0.1716``, truncation error below ``s^24 / 25 < 1e-19``), then
``log x = e LN2_HI + (log(m) + e LN2_LO)`` with ``LN2_HI`` carrying 32 trailing zero bits (exact
product). Zero, negative, subnormal, infinite and NaN inputs are passed to ``np.log`` in a last
(rarely taken) loop. Measured error: within 2 ulp of NumPy's ``log`` (tests/solvers/test_fastlog.py).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .bitcast import as_float64, as_int64
from .fastexp import LN2_HI, LN2_LO

_MANT = (1 << 52) - 1
_ONE_BITS = 0x3FF0000000000000  # the bits of 1.0
_SHIFT_BITS = 0x4330000000000000  # the bits of 2^52
_SHIFT_BIAS = 4503599627370496.0 + 1023.0  # 2^52 plus the exponent bias
_SQRT2 = 1.4142135623730951
TINY = 2.2250738585072014e-308
"""Smallest normal double; below it (and for non-finite input) the scalar ``np.log`` is used."""
HUGE = 1.7976931348623157e308

_FM = {"nsz", "contract"}


@njit(cache=True, fastmath=_FM, error_model="numpy")
def log_into(x, out):
    """``out[j] = log(x[j])`` for 1-D ``x``; ``out`` may not be ``x`` (``x`` is read again for the
    special cases)."""
    n = x.shape[0]
    for j in range(n):
        b = as_int64(x[j])
        m = as_float64((b & _MANT) | _ONE_BITS)  # the mantissa m in [1, 2)
        e = as_float64((b >> 52) | _SHIFT_BITS) - _SHIFT_BIAS  # 2^52 + biased exponent, as a double
        big = m > _SQRT2
        m = m * 0.5 if big else m
        e = e + 1.0 if big else e
        f = m - 1.0
        s = f / (2.0 + f)
        z = s * s
        # R = z P(z), P = Σ_j z^j 2/(2j+3) for j = 0..10, by Estrin's scheme (short dependency chains)
        z2 = z * z
        z4 = z2 * z2
        q0 = (2.0 / 3.0 + z * (2.0 / 5.0)) + z2 * (2.0 / 7.0 + z * (2.0 / 9.0))
        q1 = (2.0 / 11.0 + z * (2.0 / 13.0)) + z2 * (2.0 / 15.0 + z * (2.0 / 17.0))
        q2 = (2.0 / 19.0 + z * (2.0 / 21.0)) + z2 * (2.0 / 23.0)
        r = z * (q0 + z4 * (q1 + z4 * q2))
        out[j] = e * LN2_HI + ((f - s * (f - r)) + e * LN2_LO)
    for j in range(n):
        v = x[j]
        if not (v >= TINY and v <= HUGE):
            out[j] = np.log(v)
