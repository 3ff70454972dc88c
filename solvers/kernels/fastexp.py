"""A vectorisable ``exp`` for compiled loops.

numba compiles ``np.exp`` to a scalar libm call (about 5-6 ns per element here: llvmlite ships
without SVML), while NumPy's ufunc is vectorised but cannot run inside a ``prange`` loop. This kernel
is branch-free, so LLVM vectorises it (AVX2: four doubles per instruction), and runs at about
0.9-1.1 ns per element in cache (NumPy's AVX-512 ufunc: 0.6-0.8), inside the caller's parallel loop.
(Those figures are from session 26's machine; on session 50's, AVX2 without AVX-512 and NumPy's ufunc
a scalar 8-11 ns, ``benchmarks/bench_fastexp.py`` gave 2.5-3.3 ns with Horner's rule and 1.6-2.8 with
Estrin's below, two runs per version alternating.)

Method (textbook Cody-Waite reduction): ``x = t ln 2 + r`` with ``t = round(x / ln 2)`` and
``|r| <= ln(2)/2``; ``ln 2`` is split into a head with 32 trailing zero bits (so ``t * LN2_HI`` is
exact for ``|t| < 2^20``) and a tail; ``exp(r)`` by its Taylor polynomial of degree 12 (truncation
error ``(ln 2 / 2)^13 / 13! < 2e-16``), written ``1 + r (1 + r q(r))`` with ``q`` of degree 10 by
Estrin's scheme (pairs ``a + b r``, then powers ``r^2``, ``r^4``: five dependent operations where
Horner's rule has eleven; the loop was bound by that chain's latency) and the last two steps as
Horner's, so that the final roundings and the error bound stay Horner's; ``2^t`` assembled in the
exponent bits. The rounding of
``x / ln 2`` uses the ``1.5 * 2^52`` shift, whose low mantissa bits then hold ``t`` as an integer,
so no float-to-int conversion (not vectorised on AVX2) is needed; the bits move between the float and
the integer by :mod:`solvers.kernels.bitcast`, so the kernel is one loop (it was three, through a
scratch array: 1.3-2.4x slower, same results bit for bit). Measured error: at most 2 ulp
against NumPy's ``exp`` (tests/solvers/test_fastexp.py; 2.0 over 6 million points in [-700, 700] both
with Horner's rule and with Estrin's, session 50).

The fast-math flags allow contraction to FMA but not re-association, which would break the
reduction (with ``reassoc`` the error grows to about 100 ulp).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .bitcast import as_float64, as_int64
from .rows import at, put

LOG2E = 1.4426950408889634
LN2_HI = 0.6931471803691238  # 32 trailing zero bits
LN2_LO = 1.9082149292705877e-10
_SHIFT = 6755399441055744.0  # 1.5 * 2^52
_SHIFT_BITS = int(np.float64(_SHIFT).view(np.int64))
X_MIN = -708.0
"""Below this the result is returned as 0 (``exp(-708) = 3.3e-308``; subnormals are dropped)."""
X_MAX = 709.0
"""Above this the result is returned as ``+inf``."""

_FM = {"nsz", "contract"}


@njit(cache=True, fastmath=_FM, error_model="numpy", inline="always")
def _exp1(v0):
    """``exp(v0)`` of one number (the body of the vectorised loops below)."""
    v = min(max(v0, X_MIN), X_MAX)
    sh = v * LOG2E + _SHIFT
    t = sh - _SHIFT
    r = (v - t * LN2_HI) - t * LN2_LO
    # exp(r) = 1 + r (1 + r q(r)), q = sum_{j=0}^{10} r^j / (j + 2)!: q by Estrin's scheme (a
    # dependency chain of five operations instead of Horner's eleven), the last two steps as Horner's
    r2 = r * r
    r4 = r2 * r2
    a1 = 1.0 / 2.0 + (1.0 / 6.0) * r
    a2 = 1.0 / 24.0 + (1.0 / 120.0) * r
    a3 = 1.0 / 720.0 + (1.0 / 5040.0) * r
    a4 = 1.0 / 40320.0 + (1.0 / 362880.0) * r
    a5 = 1.0 / 3628800.0 + (1.0 / 39916800.0) * r
    b1 = a1 + a2 * r2
    b2 = a3 + a4 * r2
    b3 = a5 + (1.0 / 479001600.0) * r2
    q = b1 + (b2 + b3 * r4) * r4
    p = q * r + 1.0
    p = p * r + 1.0
    # 2^t in the exponent field (t + 1023 is in [1, 2046] after clamping)
    p = p * as_float64((as_int64(sh) - _SHIFT_BITS + 1023) << 52)
    p = 0.0 if v0 < X_MIN else p
    return np.inf if v0 > X_MAX else p


@njit(cache=True, fastmath=_FM, error_model="numpy")
def exp_scaled(x, g, out, shift=0.0):
    """``out[j] = exp(g * (x[j] - shift))`` for 1-D ``x`` (the shift is subtracted first, in float64,
    as a caller's ``x - max`` pass would: the result is the same bit for bit).

    ``g * (x[j] - shift)`` must not be NaN; ``-inf`` (and anything below :data:`X_MIN`) gives 0,
    anything above :data:`X_MAX` gives ``+inf``. ``out`` may be ``x`` itself, but then LLVM's
    run-time overlap test sends the loop to its scalar version (3.5 ns an element against 0.9,
    measured in session 26): use :func:`exp_scaled_inplace` for that."""
    n = x.shape[0]
    for j in range(n):
        out[j] = _exp1(g * (x[j] - shift))


@njit(cache=True, error_model="numpy")
def subnormal_exps(x, g, out):
    """After :func:`exp_scaled` (``shift`` 0): where it gave 0 for ``exp(g x_k)`` (it flushes below
    ``exp(-708)``), libm's ``exp``, which goes on into the subnormals. The markets' passes and Newton
    direction use it: a price far below the others (a far start of the safeguarded Newton,
    ``tests/markets/test_equilibrium.py::test_newton_from_far_starts_on_extreme_markets``) must count in
    the residual, not divide 0 by 0 and drop out of it."""
    n = x.shape[0]
    zeros = 0
    for k in range(n):  # a vectorised count first: the loop below runs only when some value flushed
        zeros += out[k] == 0.0
    if zeros == 0:
        return
    for k in range(n):
        if out[k] == 0.0 and g * x[k] > -np.inf:
            out[k] = np.exp(g * x[k])


@njit(cache=True, fastmath=_FM, error_model="numpy")
def exp_row(x, i, g, out, o, shift=0.0):
    """:func:`exp_scaled` from row ``i`` of ``x`` into row ``o`` of ``out`` without views of the rows
    (:mod:`solvers.kernels.rows`; either may be 1-D, its row index then ignored); not in place."""
    n = x.shape[-1]
    for j in range(n):
        put(out, o, j, _exp1(g * (at(x, i, j) - shift)))


@njit(cache=True, fastmath=_FM, error_model="numpy")
def exp_scaled_inplace(x, g, shift=0.0):
    """``x[j] = exp(g * (x[j] - shift))``: :func:`exp_scaled` with ``out`` = ``x``, vectorised (one array,
    so there is no overlap for LLVM to test); the same results bit for bit."""
    n = x.shape[0]
    for j in range(n):
        x[j] = _exp1(g * (x[j] - shift))


LN2 = 0.6931471805599453
_INV_FACT = tuple(1.0 / float(np.prod(np.arange(1, k + 1, dtype=np.float64))) for k in range(18))


@njit(cache=True, fastmath=_FM, error_model="numpy", inline="always")
def _expm1_1(v):
    """``exp(v) - 1`` of one number, accurate relative to the result near 0: for ``|v| <= ln 2`` its
    Taylor series to degree 17 (truncation below 1e-17 relative), above it ``exp(v) - 1`` (the
    subtraction loses at most a factor 2: |exp(v) - 1| >= 1/2 there). Branch-free (both computed,
    one selected), so loops over it vectorise."""
    p = _INV_FACT[17]
    p = p * v + _INV_FACT[16]
    p = p * v + _INV_FACT[15]
    p = p * v + _INV_FACT[14]
    p = p * v + _INV_FACT[13]
    p = p * v + _INV_FACT[12]
    p = p * v + _INV_FACT[11]
    p = p * v + _INV_FACT[10]
    p = p * v + _INV_FACT[9]
    p = p * v + _INV_FACT[8]
    p = p * v + _INV_FACT[7]
    p = p * v + _INV_FACT[6]
    p = p * v + _INV_FACT[5]
    p = p * v + _INV_FACT[4]
    p = p * v + _INV_FACT[3]
    p = p * v + _INV_FACT[2]
    small = v + v * (v * p)
    big = _exp1(v) - 1.0
    return small if abs(v) <= LN2 else big


@njit(cache=True, fastmath=_FM, error_model="numpy")
def expm1_inplace(x):
    """``x[j] = expm1(x[j])`` (:func:`_expm1_1`), vectorised: numba compiles ``np.expm1`` to a scalar
    libm call (measured in session 26: the Rényi stable form's two per agent and class were most of
    its cost; 1.6 ns an element). Within 1 ulp of NumPy's ``expm1`` for ``|x| <= ln 2``, 4 ulp above
    (tests/solvers/test_fastexp.py); ``-inf`` gives
    -1, ``+inf`` gives ``+inf``; NaN is not allowed."""
    for j in range(x.shape[0]):
        x[j] = _expm1_1(x[j])
