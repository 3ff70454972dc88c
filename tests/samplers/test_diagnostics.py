"""Diagnostics against closed forms: the autocorrelation time of an AR(1) chain and the density RMSE
of exact draws against a wrong density."""

import numpy as np
import pytest
from scipy import stats

from samplers.diagnostics import autocorrelation_time, density_rmse, ess, mc_errors
from solvers.errors import InputError


def ar1(phi, n, seed):
    rng = np.random.default_rng(seed)
    x = np.zeros(n)
    e = rng.standard_normal(n)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    return x


@pytest.mark.parametrize("phi", [0.5, 0.9])
def test_autocorrelation_time_of_ar1(phi):
    """tau = (1 + phi)/(1 - phi) for an AR(1) chain."""
    tau = autocorrelation_time(ar1(phi, 200_000, seed=1))
    assert tau == pytest.approx((1 + phi) / (1 - phi), rel=0.08)


def test_ess_of_independent_draws_and_mc_errors():
    x = np.random.default_rng(2).standard_normal((20000, 2))
    assert ess(x[:, 0]) == pytest.approx(20000, rel=0.1)
    se_m, se_v = mc_errors(x)
    np.testing.assert_allclose(se_m, 1 / np.sqrt(20000), rtol=0.1)
    np.testing.assert_allclose(se_v, np.sqrt(2 / 20000), rtol=0.15)


def test_density_rmse_tells_the_right_density_from_a_wrong_one():
    d = stats.t(df=102, loc=0.1, scale=0.1)
    x = d.rvs(size=100_000, random_state=3)
    good = density_rmse(x, d.pdf, d.ppf)
    bad = density_rmse(x, stats.t(df=2, loc=0.1, scale=0.1).pdf, d.ppf)  # the seed's T_2 typo
    assert good < 0.1 and bad > 5 * good


def test_bad_chains():
    with pytest.raises(InputError):
        ess(np.array([1.0, np.nan, 2.0, 3.0, 4.0]))
    with pytest.raises(InputError):
        autocorrelation_time(np.zeros((3, 3)))
