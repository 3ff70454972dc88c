"""The vectorised normalisation of log-probability vectors (:mod:`solvers.kernels.simplex_log`)
against the scalar one and NumPy, including the entries the vector kernels cannot take."""

import numpy as np
import pytest

from solvers.kernels.simplex_log import VECTOR_MIN, log_image_with, normalise_log, normalise_log_with
from solvers.special import logsumexp


@pytest.mark.parametrize("K", [3, VECTOR_MIN - 1, VECTOR_MIN, 64, 4096])
def test_normalise_log_with_equals_the_scalar_normalisation(K):
    rng = np.random.default_rng(K)
    u = rng.normal(scale=30.0, size=K) + 500.0
    u[::7] = -np.inf  # zero probabilities stay zero
    a, b = u.copy(), u.copy()
    normalise_log(a)
    normalise_log_with(b, np.empty(K))
    fin = np.isfinite(a)
    assert np.array_equal(fin, np.isfinite(b)) and np.all(np.isneginf(b[~fin]))
    np.testing.assert_allclose(b[fin], a[fin], rtol=0, atol=1e-13)
    scale = np.abs(u[np.isfinite(u)]).max()  # the shift's rounding: a few ulp of |u|
    assert abs(logsumexp(b)) <= 4e-16 * scale and abs(logsumexp(a)) <= 4e-16 * scale


@pytest.mark.parametrize("bad", [np.nan, np.inf, "all -inf"])
def test_normalise_log_with_passes_nan_and_inf_on_as_the_scalar_one(bad):
    K = 64
    u = np.linspace(-3.0, 0.0, K)
    if bad == "all -inf":
        u[:] = -np.inf
    else:
        u[10] = bad
    a, b = u.copy(), u.copy()
    normalise_log(a)
    normalise_log_with(b, np.empty(K))
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    assert np.isnan(b).any()


@pytest.mark.parametrize("K", [5, 64, 1000])
def test_log_image_with_is_the_normalised_log(K):
    rng = np.random.default_rng(K + 1)
    T = np.exp(rng.normal(scale=5.0, size=K)) * 1e-3
    T[1] = 0.0
    out = np.empty(K)
    log_image_with(T, out, np.empty(K))
    with np.errstate(divide="ignore"):
        ref = np.log(T) - logsumexp(np.log(T))
    assert out[1] == -np.inf
    keep = T > 0
    np.testing.assert_allclose(out[keep], ref[keep], rtol=0, atol=1e-13)
