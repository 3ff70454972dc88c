"""Bayesian logistic regression's gradients from the tape (TapeGradients over loglik_terms) against
JAX's grad of an independent jax.numpy log posterior, central finite differences and the
hand-written gradients."""

import numpy as np
import pytest

from samplers.models import LogisticRegression, TapeGradients


def test_logistic_tape_gradients_against_jax_and_finite_differences():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    m = LogisticRegression.generate(300, 6, seed=7, prior_std=1.5)
    theta = np.random.default_rng(8).standard_normal(6)
    tape = TapeGradients(m)

    def log_post(w):  # Eq. 4.51-4.52 written directly in jax.numpy
        return -0.5 * (w @ w) / 1.5**2 + jnp.sum(jax.nn.log_sigmoid(m.y * (m.X @ w)))

    with jax.enable_x64(True):
        gj = np.asarray(jax.grad(log_post)(jnp.asarray(theta)))
        Jj = np.asarray(jax.jacobian(lambda w: jax.nn.log_sigmoid(m.y * (m.X @ w)))(jnp.asarray(theta)))
    np.testing.assert_allclose(tape.grad_log_post(theta), gj, rtol=1e-11)
    idx = np.array([0, 3, 3, 299])
    np.testing.assert_allclose(tape.loglik_grads(theta, idx), Jj[idx], rtol=1e-11, atol=1e-14)
    eps = 1e-6
    fd = np.array([(m.log_post(theta + eps * e) - m.log_post(theta - eps * e)) / (2 * eps) for e in np.eye(6)])
    np.testing.assert_allclose(tape.grad_log_post(theta), fd, rtol=1e-6)
    np.testing.assert_allclose(tape.loglik_grads(theta, idx), m.loglik_grads(theta, idx), rtol=1e-12, atol=1e-15)
    assert tape.log_post(theta) == m.log_post(theta) and tape.in_support(theta)
