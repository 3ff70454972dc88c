"""The vectorised log of :mod:`solvers.kernels.fastlog` against NumPy's (correctly rounded to about
0.5 ulp) over the whole range of doubles, and its special cases."""

import numpy as np

from solvers.kernels.fastlog import log_into


def _log(x):
    out = np.empty_like(x)
    log_into(x, out)
    return out


def test_within_two_ulp_of_numpy_over_the_whole_range():
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            np.exp(rng.uniform(-708.0, 709.0, 200_000)),
            rng.uniform(0.5, 2.0, 200_000),  # near 1, where log is small and the relative error matters
            1.0 + rng.normal(scale=1e-6, size=20_000),
            np.nextafter(np.sqrt(2.0), [0.0, 4.0]),  # either side of the reduction's switch
        ]
    )
    y = _log(x)
    ref = np.log(x)
    ulp = np.abs(y - ref) / np.spacing(np.abs(ref)).clip(min=np.spacing(0.0))
    assert ulp[ref != 0].max() <= 2.0, ulp.max()
    assert np.all(y[x == 1.0] == 0.0)


def test_special_values_follow_numpy():
    x = np.array([0.0, -1.0, np.inf, np.nan, 5e-324, 1e-310, np.finfo(float).tiny, np.finfo(float).max, 2.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = np.log(x)
    y = _log(x)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ref))
    ok = ~np.isnan(ref)
    np.testing.assert_allclose(y[ok], ref[ok], rtol=4e-16, atol=0.0)
