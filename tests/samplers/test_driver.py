"""The driver's contract: seeds, progress, callback, trace; and bad input (non-finite gradients,
the Normal-Gamma precision driven negative, covariances that are not PSD, bad options)."""

import numpy as np
import pytest

from samplers import SAMPLERS, Gaussian, NormalGamma, sample
from solvers.errors import InputError

GAUSS = Gaussian.generate(50, 2, seed=1)
THETA0 = GAUSS.posterior_mean_var()[0]
STEP = {"mh": 0.1, "mala": 0.005, "hmc": 0.02, "sgld": 1e-4, "sghmc": 0.005, "sgnht": 0.005, "ccadl": 0.005}


@pytest.mark.parametrize("method", list(SAMPLERS))
def test_seed_reproducibility_progress_and_trace(method):
    seen = []
    kw = (
        dict(theta0=THETA0, step=STEP[method], seed=11, batch=10)
        if method in ("sgld", "sghmc", "sgnht", "ccadl")
        else dict(theta0=THETA0, step=STEP[method], seed=11)
    )
    a = sample(GAUSS, method, 300, burn_in=100, thin=2, progress=seen.append, **kw)
    b = sample(GAUSS, method, 300, burn_in=100, thin=2, **kw)
    c = sample(GAUSS, method, 300, burn_in=100, thin=2, **(kw | {"seed": 12}))
    assert a.samples.shape == (300, 2) and a.n_steps == 700 and a.ok
    np.testing.assert_array_equal(a.samples, b.samples)
    assert not np.array_equal(a.samples, c.samples)
    assert seen[-1] == 1.0 and all(x <= y for x, y in zip(seen, seen[1:]))
    assert len(a.trace) == 101 and a.trace.passes[-1] == pytest.approx(a.n_passes) and a.n_passes > 0
    assert np.all(np.isfinite(a.trace.objective))


def test_callback_stops_the_run():
    r = sample(GAUSS, "mala", 1000, theta0=THETA0, step=0.005, record_every=10, callback=lambda x: True)
    assert r.n_steps == 10 and len(r.samples) == 10 and "callback" in r.message


class ExplodingGaussian(Gaussian):
    """The Gaussian whose likelihood gradients become NaN once the first coordinate exceeds a bound."""

    def loglik_grads(self, theta, idx):
        G = super().loglik_grads(theta, idx)
        return G if theta[0] < self.bound else np.full_like(G, np.nan)


def test_non_finite_gradient_stops_and_reports_the_step():
    m = ExplodingGaussian(GAUSS.x)
    m.bound = THETA0[0] + 0.05
    for method in ("sgld", "sghmc", "sgnht", "ccadl"):
        r = sample(m, method, 5000, theta0=THETA0, step=STEP[method], batch=10, seed=0)
        assert not r.ok and "non-finite" in r.message and f"step {r.n_steps}" in r.message, r.message
        assert len(r.samples) < 5000 and np.isfinite(r.samples).all()
        assert r.n_steps < 5000


def test_exact_samplers_reject_non_finite_proposals():
    m = ExplodingGaussian(GAUSS.x)
    m.bound = THETA0[0] + 0.05
    m.grad_log_post = lambda t: np.full(2, np.nan) if t[0] >= m.bound else Gaussian.grad_log_post(m, t)
    for method in ("mala", "hmc"):
        r = sample(m, method, 2000, theta0=THETA0, step=STEP[method], seed=0)
        assert r.ok and np.isfinite(r.samples).all() and r.info["n_rejected_nonfinite"] > 0
        assert r.samples[:, 0].max() < m.bound


def test_normal_gamma_precision_driven_negative_is_reported():
    ng = NormalGamma.generate(100, seed=0)
    r = sample(ng, "sgld", 1000, theta0=np.array([0.0, 0.05]), step=0.05, batch=10, seed=0)
    assert not r.ok and "support" in r.message and np.all(r.samples[:, 1] > 0)
    # the exact samplers never leave it: such proposals are rejected
    r = sample(ng, "mh", 2000, theta0=np.array([0.0, 0.05]), step=0.5, seed=0)
    assert r.ok and np.all(r.samples[:, 1] > 0) and r.info["n_rejected_nonfinite"] > 0


def test_covariances_that_are_not_psd():
    with pytest.raises(InputError) as e:
        sample(GAUSS, "sghmc", 10, theta0=THETA0, step=0.01, sigma_hat=np.array([[1.0, 2.0], [2.0, 1.0]]))
    assert e.value.field == "sigma_hat" and e.value.code == "not_psd"
    with pytest.raises(InputError, match="A I - h sigma_hat/2") as e:  # PSD, but larger than the friction allows
        sample(GAUSS, "sghmc", 10, theta0=THETA0, step=0.01, friction=1.0, sigma_hat=np.full(2, 500.0))
    with pytest.raises(InputError) as e:
        sample(GAUSS, "hmc", 10, theta0=THETA0, step=0.01, mass=np.array([[1.0, 0.0], [0.0, -1.0]]))
    assert e.value.field == "mass"


@pytest.mark.parametrize(
    "method,kw,field",
    [
        ("nuts", {}, "method"),
        ("mala", {"step": -1.0}, "step"),
        ("mala", {"step": float("nan")}, "step"),
        ("hmc", {"n_leapfrog": 0}, "n_leapfrog"),
        ("sghmc", {"friction": 200.0}, "friction"),
        ("sghmc", {"reuse_batch": True}, "reuse_batch"),
        ("sghmc", {"reuse_batch": "yes", "resample_every": 5}, "reuse_batch"),
        ("sgld", {"decay": 2.0}, "decay"),
        ("sgld", {"batch": 0}, "batch"),
        ("ccadl", {"batch": 1}, "batch"),
        ("ccadl", {"covariance": "banded"}, "covariance"),
        ("mh", {"friction": 1.0}, "options"),
        ("mh", {"theta0": np.array([np.nan, 0.0])}, "theta0"),
        ("mh", {"theta0": np.zeros(3)}, "theta0"),
    ],
)
def test_bad_options_name_their_field(method, kw, field):
    args = {"theta0": THETA0, "step": 0.01} | kw
    with pytest.raises(InputError) as e:
        sample(GAUSS, method, 10, **args)
    assert e.value.field == field
    with pytest.raises(InputError) as e:
        sample(GAUSS, "mh", 0, theta0=THETA0, step=0.1)
    assert e.value.field == "n_samples"
