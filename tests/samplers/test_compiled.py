"""The compiled step loops (samplers/compiled.py) against the per-step state machines: fed the same
mini-batch indices and normals, SGLD, SGHMC and SGNHT follow the same path; the compiled gradients
against the models' own; the driver's contract (blocks, trace, stats, non-finite stop) in the
compiled mode; and the compiled SGNHT against the Gaussian's analytic posterior."""

import numpy as np
import pytest

from samplers import Gaussian, LogisticRegression, sample
from samplers.compiled import compiled_terms
from samplers.models.base import minibatch_grad
from samplers.run import SAMPLERS

from .test_distributions import Z, assert_moments

LR = LogisticRegression.generate(400, 6, seed=3)
GAUSS = Gaussian.generate(100, 3, seed=0)


class Replay:
    """A generator that hands out recorded indices and normals in order, whatever the call shapes."""

    def __init__(self, ints: np.ndarray, normals: np.ndarray) -> None:
        self.ints, self.normals, self.a, self.b = ints.ravel(), normals.ravel(), 0, 0

    def integers(self, low, high, size):
        m = int(np.prod(size))
        self.a += m
        return self.ints[self.a - m : self.a].reshape(size)

    def standard_normal(self, size):
        m = int(np.prod(size))
        self.b += m
        return self.normals[self.b - m : self.b].reshape(size)


@pytest.mark.parametrize("model", [LR, GAUSS], ids=["logistic", "gaussian"])
def test_compiled_gradient_matches_the_model(model):
    grad, data = compiled_terms(model)
    rng = np.random.default_rng(0)
    for _ in range(5):
        theta, idx = rng.standard_normal(model.dim), rng.integers(0, model.n_data, 37)
        out = np.empty(model.dim)
        grad(data, theta, idx, out)
        np.testing.assert_allclose(out, minibatch_grad(model, theta, idx)[0], rtol=1e-12, atol=1e-10)


CASES = [
    ("sgld", 1e-3, {"decay": 0.6, "offset": 10.0}),
    ("sghmc", 0.01, {"friction": 2.0, "resample_every": 3}),
    ("sghmc", 0.01, {"friction": 2.0, "sigma_hat": "diag"}),
    ("sghmc", 0.01, {"friction": 2.0, "resample_every": 7, "reuse_batch": True}),
    ("sgnht", 0.01, {"friction": 1.5}),
]


@pytest.mark.parametrize("model", [LR, GAUSS], ids=["logistic", "gaussian"])
@pytest.mark.parametrize("method,step,opts", CASES, ids=[f"{m}-{i}" for i, (m, _, _) in enumerate(CASES)])
def test_compiled_blocks_follow_the_per_step_path(model, method, step, opts):
    if opts.get("sigma_hat") == "diag":
        opts = opts | {"sigma_hat": np.linspace(1.0, 3.0, model.dim)}
    kernel, K, n = SAMPLERS[method], 60, 20
    rng = np.random.default_rng(1)
    ints, normals = rng.integers(0, model.n_data, 10 * K * n), rng.standard_normal(10 * K * model.dim)
    cfg = kernel.configure(model, 0.1 * step if model is GAUSS else step, batch=n, **opts)
    s0 = kernel.init(model, np.full(model.dim, 0.1), np.random.default_rng(2), cfg)
    per_step, r = [], Replay(ints, normals)
    s = s0
    for _ in range(K):
        s = kernel.step(model, s, r, cfg)
        per_step.append((kernel.position(s), kernel.momentum(s, cfg), kernel.stats(s)))
    r, terms = Replay(ints, normals), compiled_terms(model)
    s1, X1, P1, S1 = kernel.steps(model, s0, r, cfg, 25, terms)  # two blocks: the state carries over
    s2, X2, P2, S2 = kernel.steps(model, s1, r, cfg, K - 25, terms)
    X = np.vstack([X1, X2])
    np.testing.assert_allclose(X, np.array([p[0] for p in per_step]), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(kernel.position(s2), per_step[-1][0], rtol=1e-9, atol=1e-12)
    if P1 is not None:
        np.testing.assert_allclose(np.vstack([P1, P2]), np.array([p[1] for p in per_step]), rtol=1e-8, atol=1e-10)
    for key in S1:
        ref = np.array([p[2][key] for p in per_step])
        np.testing.assert_allclose(np.concatenate([S1[key], S2[key]]), ref, rtol=1e-9)
    assert np.array_equal(kernel.position(s2), X[-1]) and s2.k == K


@pytest.mark.parametrize("method", ["sgld", "sghmc", "sgnht"])
def test_driver_contract_in_compiled_mode(method):
    kw = dict(theta0=np.zeros(LR.dim), step=1e-3, batch=50, burn_in=30, thin=3, record_every=7)
    seen = []
    a = sample(LR, method, 500, seed=4, progress=seen.append, **kw)
    b = sample(LR, method, 500, seed=4, compiled=False, **kw)
    assert a.ok and b.ok and a.samples.shape == b.samples.shape == (500, LR.dim)
    assert a.n_steps == b.n_steps == 1530 and a.n_passes == pytest.approx(b.n_passes)
    assert len(a.trace) == len(b.trace) and a.trace.passes == pytest.approx(b.trace.passes)
    assert seen[-1] == 1.0 and len(seen) == len(a.trace) - 1
    assert set(a.stats) == set(b.stats) and all(len(v) == 500 for v in a.stats.values())
    np.testing.assert_array_equal(a.samples, sample(LR, method, 500, seed=4, **kw).samples)


def test_compiled_non_finite_stop_reports_the_step():
    r = sample(LR, "sgnht", 3000, theta0=np.zeros(LR.dim), step=5.0, friction=0.1, batch=50, seed=0, burn_in=0)
    assert not r.ok and "non-finite" in r.message and f"step {r.n_steps}" in r.message, r.message
    assert np.isfinite(r.samples).all() and len(r.samples) == r.n_steps - 1


def test_compiled_sgnht_on_the_gaussian_posterior():
    """The compiled SGNHT recovers the conjugate Gaussian's posterior (3 % discretisation allowance
    on the variances, as for the per-step form) and its kinetic temperature averages 1."""
    from samplers.diagnostics import ess

    mean, var = GAUSS.posterior_mean_var()
    r = sample(GAUSS, "sgnht", 60000, theta0=mean, step=0.002, friction=5.0, batch=10, seed=3, burn_in=2000)
    assert r.ok
    assert_moments(r.samples, mean, var, extra_var_tol=0.03)
    kt = r.stats["kinetic_temperature"]
    assert abs(kt.mean() - 1.0) <= Z * kt.std() / np.sqrt(ess(kt)) + 0.02
