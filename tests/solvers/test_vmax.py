"""The eight-way max of :mod:`solvers.kernels.vmax` against NumPy's."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.kernels.vmax import vmax, vmax_row


@pytest.mark.parametrize("n", [0, 1, 2, 7, 8, 9, 15, 16, 17, 63, 1000, 4097])
def test_vmax_equals_numpy_max_at_every_length_and_position(n):
    rng = np.random.default_rng(n)
    x = rng.normal(size=n) * 50
    assert vmax(x) == (x.max() if n else -np.inf)
    for pos in {0, n // 3, n - 1} if n else set():  # the maximum in each of the eight lanes and the tail
        y = x.copy()
        y[pos] = 1e300
        assert vmax(y) == 1e300


def test_vmax_with_infinities_ignores_nan_and_reads_strided_views():
    x = np.full(20, -np.inf)
    assert vmax(x) == -np.inf
    x[13] = -5.0
    assert vmax(x) == -5.0
    x[3] = np.inf
    assert vmax(x) == np.inf
    y = np.array([np.nan, 1.0, np.nan, 2.0, -1.0, np.nan, 0.5, 0.0, 3.0, np.nan])
    assert vmax(y) == 3.0  # NaN is never taken (the loops it replaced did the same)
    z = np.arange(100.0).reshape(10, 10)
    assert vmax(z[:, 3]) == 93.0 and vmax(z[4]) == 49.0


@pytest.mark.parametrize("K", [1, 7, 8, 9, 64, 1000])
def test_vmax_row_equals_the_max_of_each_row_without_slicing_it(K):
    rng = np.random.default_rng(K)
    X = rng.normal(size=(5, K)) * 30
    X[2, K // 2] = 1e300
    assert [vmax_row(X, i) for i in range(5)] == [X[i].max() for i in range(5)]
    Xs = np.asfortranarray(X)  # a strided layout reads the same numbers
    assert [vmax_row(Xs, i) for i in range(5)] == [X[i].max() for i in range(5)]
    assert vmax_row(X[1], 99) == X[1].max()  # a 1-D array ignores the row index


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 100, 4097])
def test_max_reductions_over_bit_patterns_equal_the_serial_loops(n):
    """vmax_abs, vmax_abs_scaled, vmax_abs_ratio, vmax_gap_ratio: the number the loop ``if v > m: m = v``
    from ``m = 0`` gives (NaN terms never taken, ``+inf`` taken, 0 for an empty vector)."""
    from solvers.kernels.vmax import vmax_abs, vmax_abs_ratio, vmax_abs_scaled, vmax_gap_ratio

    def serial(terms):
        m = 0.0
        for v in terms:
            if v > m:
                m = v
        return m

    rng = np.random.default_rng(n + 1)
    x = rng.normal(size=n) * np.exp(rng.normal(size=n) * 20)  # magnitudes over ~17 decades
    w = rng.uniform(0.0, 3.0, n)
    c = rng.uniform(1e-6, 1.0, n)
    if n > 8:
        x[3] = np.nan
        x[n - 2] = -0.0
    with np.errstate(invalid="ignore"):
        assert vmax_abs(x) == serial(np.abs(x))
        assert vmax_abs_scaled(x, w) == serial(np.abs(x) * w)
        assert vmax_abs_ratio(x, c) == serial(np.abs(x) / c)
        assert vmax_gap_ratio(x, 0.7, c) == pytest.approx(serial(np.abs(x - 0.7 * c) / c), rel=1e-15, abs=0)
        if n:
            y = x.copy()
            y[n // 2] = -np.inf
            assert vmax_abs(y) == np.inf


@pytest.mark.parametrize("n", [1, 9, 100])
def test_ratio_maxima_are_infinite_at_a_zero_or_nan_denominator(n):
    """A price of zero (or NaN) makes the relative residual ``inf``: ``0 / 0`` must not drop out of the
    max as NaN does (session 44: a Newton step to a zero price was accepted that way), and the division
    raises nothing (NumPy's error model)."""
    from solvers.kernels.vmax import vmax_abs_ratio, vmax_gap_ratio

    rng = np.random.default_rng(n)
    t = rng.uniform(0.1, 1.0, n)
    c = rng.uniform(0.1, 1.0, n)
    assert np.isfinite(vmax_gap_ratio(t, 1.0, c)) and np.isfinite(vmax_abs_ratio(t, c))
    for bad in (0.0, np.nan):
        cz, tz = c.copy(), t.copy()
        cz[n // 2] = bad
        tz[n // 2] = 0.0
        assert vmax_gap_ratio(tz, 1.0, cz) == np.inf
        assert vmax_abs_ratio(tz, cz) == np.inf
