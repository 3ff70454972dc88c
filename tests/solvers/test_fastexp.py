"""The vectorised exp of :mod:`solvers.kernels.fastexp` against NumPy's (correctly rounded to about
0.5 ulp) and against exact values."""

import math

import numpy as np
import pytest

from solvers.kernels.fastexp import X_MAX, X_MIN, exp_row, exp_scaled, exp_scaled_inplace, expm1_inplace


def _exp(x, g=1.0):
    out = np.empty_like(x)
    exp_scaled(x, g, out)
    return out


@pytest.mark.parametrize("g", [1.0, 0.5, 1.0 / 30.0, 3.0])
def test_within_two_ulp_of_numpy_over_the_whole_range(g):
    rng = np.random.default_rng(0)
    x = np.concatenate([-rng.exponential(5.0, 200_000), rng.uniform(X_MIN, X_MAX, 200_000)]) / g
    y = _exp(x, g)
    ref = np.exp(g * x)
    ok = ref > np.finfo(float).tiny  # subnormal results are flushed to 0 (documented)
    ulp = np.abs(y[ok] - ref[ok]) / np.spacing(ref[ok])
    assert ulp.max() <= 2.0, ulp.max()
    assert np.all(y[~ok] == 0.0)


def test_exact_points_and_limits():
    x = np.array([0.0, -0.0, -np.inf, np.inf, -1000.0, 1000.0, X_MIN - 1e-9, 1.0, -1.0])
    y = _exp(x)
    assert y[0] == 1.0 and y[1] == 1.0
    assert y[2] == 0.0 and y[4] == 0.0 and y[6] == 0.0
    assert y[3] == np.inf and y[5] == np.inf
    assert abs(y[7] - math.e) <= 2 * np.spacing(math.e)
    assert abs(y[8] - 1 / math.e) <= 2 * np.spacing(1 / math.e)
    # exact powers of two where the reduction leaves r = 0: exp(t ln 2) with t * LN2 rounded
    t = np.arange(-1000, 1001)
    y = _exp(t * math.log(2.0))
    np.testing.assert_allclose(y, np.ldexp(1.0, t), rtol=4e-16 * 1001)


def test_in_place_and_non_multiple_of_vector_width():
    rng = np.random.default_rng(1)
    for n in (1, 3, 7, 1001):
        x = -rng.exponential(3.0, n)
        ref = np.exp(0.5 * x)
        exp_scaled(x, 0.5, x)
        np.testing.assert_allclose(x, ref, rtol=4.5e-16, atol=0)


def test_exp_scaled_inplace_is_exp_scaled_bit_for_bit():
    rng = np.random.default_rng(2)
    for n in (1, 5, 16, 4099):
        x = rng.normal(size=n) * 30
        ref = np.empty(n)
        exp_scaled(x, 0.7, ref, 1.5)
        exp_scaled_inplace(x, 0.7, 1.5)
        assert np.array_equal(x, ref)


@pytest.mark.parametrize("scale", [1e-300, 1e-12, 1e-3, 0.5, 0.7, 3.0, 100.0])
def test_expm1_within_four_ulp_of_numpy(scale):
    """Relative to the result, near 0 as well (where ``exp(x) - 1`` would lose every digit). Measured on
    10^6 uniform points in [-3, 3]: 1 ulp below ln 2 (the series), 4 in (ln 2, 1.5] (``exp(x) - 1``
    with ``exp(x)`` in (2, 4.5): the exponential's own 1.5 ulp, doubled), 2 above."""
    rng = np.random.default_rng(int(-np.log10(scale) * 10) + 50)
    x = rng.uniform(-scale, scale, 50_001)
    x[:4] = [0.0, np.log(2.0), -np.log(2.0), np.nextafter(np.log(2.0), 1.0)]
    y = x.copy()
    expm1_inplace(y)
    ref = np.expm1(x)
    nz = ref != 0
    ulp = np.abs(y[nz] - ref[nz]) / np.spacing(np.abs(ref[nz]))
    assert ulp.max() <= (1.0 if scale <= 0.5 else 4.0), (scale, ulp.max())
    assert np.all(y[~nz] == 0.0)


def test_expm1_limits():
    y = np.array([-np.inf, np.inf, -800.0, 800.0, -40.0])
    expm1_inplace(y)
    assert y[0] == -1.0 and y[1] == np.inf and y[2] == -1.0 and y[3] == np.inf and y[4] == np.expm1(-40.0)


@pytest.mark.parametrize("K", [3, 16, 67])
def test_exp_row_is_exp_scaled_of_the_row_bit_for_bit(K):
    rng = np.random.default_rng(K)
    X = rng.normal(size=(4, K)) * 20
    out = np.full((3, K), np.nan)
    exp_row(X, 2, 0.7, out, 1, 1.5)
    ref = np.empty(K)
    exp_scaled(X[2], 0.7, ref, 1.5)
    assert np.array_equal(out[1], ref)
    assert np.isnan(out[[0, 2]]).all()  # only the named row is written
    v = np.empty(K)
    exp_row(X, 3, 0.7, v, 0, 1.5)  # a 1-D destination
    exp_scaled(X[3], 0.7, ref, 1.5)
    assert np.array_equal(v, ref)
    exp_row(X[0], 0, 1.0, v, 0)  # a 1-D source
    assert np.array_equal(v, _exp(X[0]))
