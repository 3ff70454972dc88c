"""The DRBM model (seed 000 Eq. 4.53-4.57): its conditional against brute-force enumeration of the
hidden units, the hand-written gradient (4.57) against finite differences, the tape and JAX, and
the tape-gradient wrapper driving a sampler."""

import itertools

import numpy as np
import pytest

from samplers import sample
from samplers.models import DRBM, LogisticRegression, TapeGradients, minibatch_grad
from solvers.errors import InputError


def small(prior_std=None):
    m = DRBM.generate(60, 5, 3, n_hidden=4, seed=2)
    if prior_std is not None:
        m = DRBM(m.X, m.y, n_hidden=4, prior_std=prior_std)
    theta = m.init(1, scale=0.5) + 0.3 * np.random.default_rng(3).standard_normal(m.dim)
    return m, theta


def fd_grad(f, x, eps=1e-6):
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(x.size)])


def test_dimension_is_table_42s_count():
    """D = N_h F + N_h + N_h C + C: connect-4 (126 features, 3 classes, 20 hidden) has 2603."""
    X = np.zeros((3, 126))
    assert DRBM(X, np.array([0, 1, 2]), n_hidden=20).dim == 2603
    assert DRBM(np.zeros((26, 16)), np.arange(26), n_hidden=100).dim == 4326  # letter
    assert DRBM(np.zeros((3, 50)), np.array([0, 1, 2]), n_hidden=20).dim == 1083  # acoustic


def test_conditional_is_the_energy_model_summed_over_hidden_units():
    """p(y|x) of Eq. 4.56 equals sum_z exp(-E(y, x, z)) normalised over y, E of Eq. 4.54 (b cancels)."""
    m, theta = small()
    W, c, U, d = m.unpack(theta)
    b = np.random.default_rng(0).standard_normal(m.n_features)
    x = m.X[7]
    joint = np.zeros(m.n_classes)
    for z in itertools.product((0.0, 1.0), repeat=m.n_hidden):
        z = np.array(z)
        for y in range(m.n_classes):
            e_y = np.eye(m.n_classes)[y]
            E = -z @ W @ x - b @ x - c @ z - d @ e_y - z @ U @ e_y
            joint[y] += np.exp(-E)
    np.testing.assert_allclose(m.predict_proba(theta, x[None])[0], joint / joint.sum(), rtol=1e-12)
    np.testing.assert_allclose(m.loglik_terms(theta, [7])[0], np.log(joint[m.y[7]] / joint.sum()), rtol=1e-12)


@pytest.mark.parametrize("prior_std", [None, 2.0])
def test_gradient_matches_finite_differences_and_the_tape(prior_std):
    m, theta = small(prior_std)
    np.testing.assert_allclose(m.grad_log_post(theta), fd_grad(m.log_post, theta), rtol=1e-6, atol=1e-6)
    idx = np.array([0, 5, 5, 17, 59])
    G = m.loglik_grads(theta, idx)
    assert G.shape == (5, m.dim)
    tape = TapeGradients(m)
    np.testing.assert_allclose(G, tape.loglik_grads(theta, idx), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(m.grad_log_post(theta), tape.grad_log_post(theta), rtol=1e-10, atol=1e-12)
    # one row of G by finite differences of that item's log-likelihood
    f = lambda t: float(m.loglik_terms(t, [17])[0])
    np.testing.assert_allclose(G[3], fd_grad(f, theta), rtol=1e-6, atol=1e-7)


def test_gradient_matches_jax_on_an_independent_implementation():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    m, theta = small()
    H, F, C = m.n_hidden, m.n_features, m.n_classes

    def loglik(t):  # Eq. 4.56 written directly in jax.numpy
        W = t[: H * F].reshape(H, F)
        c = t[H * F : H * F + H]
        U = t[H * F + H : H * F + H + H * C].reshape(H, C)
        d = t[-C:]
        o = (m.X @ W.T + c)[:, :, None] + U[None]  # (n, H, C)
        f = d + jnp.sum(jax.nn.softplus(o), axis=1)
        return jnp.sum(f[jnp.arange(m.n_data), m.y] - jax.nn.logsumexp(f, axis=1))

    with jax.enable_x64(True):
        gj = np.asarray(jax.grad(loglik)(jnp.asarray(theta)))
        vj = float(loglik(jnp.asarray(theta)))
    np.testing.assert_allclose(m.log_post(theta), vj, rtol=1e-12)
    np.testing.assert_allclose(m.grad_log_post(theta), gj, rtol=1e-10, atol=1e-12)


def test_tape_gradients_drive_the_samplers_like_the_hand_written_ones():
    for m, theta in (small(), (LogisticRegression.generate(80, 4, seed=1), np.zeros(4))):
        tape = TapeGradients(m)
        idx = np.arange(0, m.n_data, 3)
        for a, b in zip(minibatch_grad(m, theta, idx), minibatch_grad(tape, theta, idx)):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
        kw = dict(theta0=theta, step=1e-3, friction=1.0, batch=10, seed=4, covariance="diagonal")
        r1, r2 = sample(m, "ccadl", 50, **kw), sample(tape, "ccadl", 50, **kw)
        assert r1.ok and r2.ok
        np.testing.assert_allclose(r1.samples, r2.samples, rtol=1e-8, atol=1e-10)


def test_bad_input_names_the_argument():
    X = np.zeros((4, 3))
    for kwargs, field in [
        (dict(X=X, y=np.array([0, 1, 0.5, 1]), n_hidden=2), "y"),
        (dict(X=X, y=np.array([0, 1, -1, 1]), n_hidden=2), "y"),
        (dict(X=X, y=np.array([0, 0, 0, 0]), n_hidden=2), "n_classes"),
        (dict(X=X, y=np.array([0, 1, 2, 1]), n_hidden=2, n_classes=2), "n_classes"),
        (dict(X=X, y=np.array([0, 1, 0, 1]), n_hidden=0), "n_hidden"),
        (dict(X=X, y=np.array([0, 1, 0, 1]), n_hidden=2, prior_std=-1.0), "prior_std"),
        (dict(X=np.full((4, 3), np.nan), y=np.array([0, 1, 0, 1]), n_hidden=2), "X"),
    ]:
        with pytest.raises(InputError) as e:
            DRBM(**kwargs)
        assert e.value.field == field, kwargs
