"""Compiled path of :func:`aggregators.validation.as_log_probs` and of the floor, for inputs of every size
(in parallel from :data:`aggregators.validation.PARALLEL_MIN_SIZE` numbers, serially below: the same bits).

One pass over the rows of log-probabilities ``a`` (R, K): reject NaN, ``+inf`` and
all-``-inf`` rows, write each row normalised by its max-shifted log-sum-exp and, when a floor is
given, floor it with the mass-preserving rule of :func:`aggregators.validation.apply_floor` while it
is in cache (the row kernel :func:`solvers.kernels.floor_row.floor_row`, shared with the market). Any row it cannot take makes it report failure, and the caller runs the NumPy checks,
which find and name the offending entry (the error messages live in one place).

Rows are taken in blocks of about :data:`BLOCK` entries so that the exponentials run through the
vectorised :func:`solvers.kernels.fastexp.exp_scaled` (2 ulp) over the whole block, and the
per-row maxima and sums are vectorised reductions; only one scalar ``log`` per row remains. (The
previous version called the scalar libm ``exp`` once per entry: about 6 ns an entry, some 20 times
a read of the data.) A NaN is found because it makes the row's sum of ``a - max`` NaN, a ``+inf``
or an all-``-inf`` row because the maximum is infinite.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from solvers.kernels.fastexp import exp_scaled, exp_scaled_inplace
from solvers.kernels.floor_row import floor_row
from solvers.kernels.vmax import vmax
from solvers.kernels.vsum import vsum

BLOCK = 8192
"""Entries per block of rows (a float64 scratch array of this size per thread, in L2)."""
ROW_EXP_MIN = 64
"""Rows at least this long take their exponentials one call per row (see :func:`_rows`)."""
SEGMENTS = 64
"""Parallel tasks per pass (each allocates its scratch once and takes consecutive blocks)."""


@njit(cache=True, error_model="numpy")
def _max(x):
    """Maximum of a 1-D array (:func:`solvers.kernels.vmax.vmax`: eight running maxima; NaN entries are
    never taken and are left to the caller's NaN check). The loop it replaces, ``for v in x`` with a
    select, ran as a scalar chain at about 0.47 ns an element (session 43); this, 0.13."""
    return vmax(x)


@njit(cache=True, error_model="numpy")
def _sum(x):
    """Sum of a 1-D array in any order (:func:`solvers.kernels.vsum.vsum`); NaN and infinities propagate."""
    return vsum(x)


@njit(cache=True)
def _src(r, order, A):
    """The row of ``a`` that row ``r`` of ``out`` comes from (``order``: see :func:`normalise_floor_rows`)."""
    if order.shape[0] == 0:
        return r
    return order[r // A] * A + r % A


@njit(cache=True, error_model="numpy")
def _rows(a, out, r0, r1, log_floor, floor, d, e, lse, re, order, A, norm):
    """Normalise (and floor, when ``log_floor > -inf``) rows ``r0 .. r1-1`` of ``out`` from their rows
    of ``a`` (:func:`_src`); ``(r1 - r0) K`` entries of scratch in ``e``, ``r1 - r0`` in ``lse`` and
    ``d``, K in ``re``. Returns ``(refused, floored)``. ``norm`` False: rows already normalised (a
    floor on validated data) are checked and floored only, a row with nothing to floor copied as it is.

    Rows of at least :data:`ROW_EXP_MIN` entries take their exponentials row by row, shifted in the
    call (:func:`solvers.kernels.fastexp.exp_scaled`'s ``shift``); shorter ones are written shifted
    into ``e`` first and take one call for the block (a call per short row would not vectorise). A
    row's NaN shows in the sum of its entries (``d``), its ``+inf`` in the maximum; a sum that
    overflows with both signs only sends the array to the NumPy checks, which then accept it."""
    K = a.shape[1]
    n = (r1 - r0) * K
    short = K < ROW_EXP_MIN
    for r in range(r0, r1):
        ar = a[_src(r, order, A)]
        m = _max(ar)
        lse[r - r0] = m
        d[r - r0] = _sum(ar)
        j = (r - r0) * K
        if not norm:
            continue
        if short:
            for k in range(K):
                e[j + k] = ar[k] - m
        elif np.isfinite(m):
            exp_scaled(ar, 1.0, e[j : j + K], m)
    # -inf and NaN entries: exp_scaled gives 0 and something finite; NaN rows are refused below
    if short and norm:
        exp_scaled_inplace(e[:n], 1.0)
    bad = 0
    floored = 0
    for r in range(r0, r1):
        ar = a[_src(r, order, A)]
        j = (r - r0) * K
        m = lse[r - r0]
        t = d[r - r0]  # NaN iff the row has a NaN (or overflows both ways); +inf rows have m = +inf
        if not (np.isfinite(m) and t == t):
            bad += 1
            continue
        c = m + np.log(_sum(e[j : j + K])) if norm else 0.0
        if not np.isfinite(c):
            bad += 1
            continue
        low = 0
        for k in range(K):
            v = ar[k] - c
            low += v < log_floor
            out[r, k] = v
        if low:  # in place, the row in cache (the one floor rule of the code base)
            floored += floor_row(out[r], out[r], floor, log_floor, re)
    return bad, floored


@njit(cache=True, error_model="numpy")
def _blocks(a, out, log_floor, floor, order, A, rows, b0, b1, norm):
    """Blocks ``b0 .. b1-1`` of ``rows`` rows each of :func:`normalise_floor_rows` (its scratch
    allocated once). Returns ``(refused, floored)``. A row's result depends on that row alone, so the
    serial and the parallel pass give the same array bit for bit."""
    R, K = a.shape
    d = np.empty(rows)
    e = np.empty(rows * K)
    lse = np.empty(rows)
    re = np.empty(K)
    bad = 0
    floored = 0
    for b in range(b0, b1):
        r0 = b * rows
        nb, nf = _rows(a, out, r0, min(R, r0 + rows), log_floor, floor, d, e, lse, re, order, A, norm)
        bad += nb
        floored += nf
    return bad, floored


@njit(cache=True, parallel=True, error_model="numpy")
def normalise_floor_rows(a, out, floor, order, A, norm):
    """The fused validate + normalise + floor pass: ``out[r] = a[r] - logsumexp(a[r])`` for every
    row of ``a`` (R, K), then floored with the mass-preserving rule of
    :func:`aggregators.validation.apply_floor` (``floor`` in (0, 1/K); ``floor = 0``: no floor).

    ``order`` (int64): empty, or a permutation of the ``R / A`` items of ``A`` consecutive rows each:
    item ``i`` of ``out`` is then item ``order[i]`` of ``a`` (the items shuffled in the same pass; ``a``
    and ``out`` must then differ).

    Returns ``(refused, floored)``: the number of rows it refused (a NaN or ``+inf`` entry, every
    entry ``-inf``, or a log-sum-exp that overflows; those rows of ``out`` are left unset) and the
    number of entries raised to the floor. Without ``order``, ``a`` and ``out`` may be the same array.
    ``norm=False``: the rows are normalised already (the floor of validated data): checked and floored
    only, not normalised again (which would move them by an ulp).
    :func:`normalise_floor_rows_serial` is the same pass in one thread, with the same result bit for bit.
    """
    R, K = a.shape
    log_floor = np.log(floor) if floor > 0 else -np.inf
    rows = max(1, min(BLOCK // K, R))  # a small input: scratch of its own size, not a whole block
    nblocks = (R + rows - 1) // rows
    nseg = min(nblocks, SEGMENTS)
    bad = 0
    floored = 0
    for s in prange(nseg):
        nb, nf = _blocks(a, out, log_floor, floor, order, A, rows, s * nblocks // nseg, (s + 1) * nblocks // nseg, norm)
        bad += nb
        floored += nf
    return bad, floored


@njit(cache=True, error_model="numpy")
def normalise_floor_rows_serial(a, out, floor, order, A, norm):
    """:func:`normalise_floor_rows` in the calling thread (small inputs: no thread pool to wake), the
    same result bit for bit (session 55: small inputs were normalised in NumPy, which differs from this
    pass in the last bit, so the same item validated alone and in a large call differed by 8.9e-16)."""
    R, K = a.shape
    log_floor = np.log(floor) if floor > 0 else -np.inf
    rows = max(1, min(BLOCK // K, R))  # a small input: scratch of its own size, not a whole block
    return _blocks(a, out, log_floor, floor, order, A, rows, 0, (R + rows - 1) // rows, norm)


def normalise_log_rows(a, out, parallel=True):
    """``out[r] = a[r] - logsumexp(a[r])`` for every row of ``a`` (R, K) (the pass of
    :func:`normalise_floor_rows` without a floor; ``parallel=False``: its serial twin, the same result).
    Returns the number of rows it refused; those rows of ``out`` are left unset.

    A Python function, not a compiled one: a cached compiled function that calls a ``parallel=True``
    one was loaded from numba's cache as code that crashed (a segmentation fault in session 12's CI;
    most likely the entry was written while a test had replaced the callee in this module), and the
    call costs nothing next to the pass."""
    f = normalise_floor_rows if parallel else normalise_floor_rows_serial
    return int(f(a, out, 0.0, np.empty(0, np.int64), 1, True)[0])
