"""The re-associated sum of :mod:`solvers.kernels.vsum` against NumPy's and an exact sum."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import njit

from solvers.kernels.vsum import vsum


@pytest.mark.parametrize("n", [0, 1, 3, 8, 17, 1000, 4097])
def test_vsum_equals_the_exact_sum_to_rounding(n):
    x = np.random.default_rng(n).normal(size=n) * 10
    exact = math.fsum(x)
    assert abs(vsum(x) - exact) <= 4 * n * np.finfo(float).eps * np.abs(x).sum() + 0.0


def test_vsum_propagates_nan_and_infinities_and_reads_slices_in_a_kernel():
    assert np.isnan(vsum(np.array([1.0, np.nan, 2.0])))
    assert vsum(np.array([1.0, np.inf, 2.0])) == np.inf
    assert np.isnan(vsum(np.array([np.inf, -np.inf])))

    @njit
    def rows(d, K):  # slices of a flat buffer, as the validation's row normaliser passes them
        return np.array([vsum(d[r * K : (r + 1) * K]) for r in range(d.shape[0] // K)])

    d = np.arange(12.0)
    np.testing.assert_array_equal(rows(d, 4), [6.0, 22.0, 38.0])
