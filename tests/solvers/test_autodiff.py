"""The tape (solvers/autodiff.py) against JAX's ``grad`` (an independent reverse mode) and central
finite differences, primitive by primitive and on composite functions; the seed's worked examples."""

import numpy as np
import pytest

from solvers import autodiff as ad
from solvers.errors import InputError

jax = pytest.importorskip("jax")
jnp = jax.numpy

RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 3))
B = RNG.standard_normal((3,))
S = RNG.standard_normal((2, 3, 5))
IDX = np.array([0, 2, 2, 1])

# (name, tape function, the same function in jax.numpy, input shape): each maps x to a scalar, and
# exercises one primitive (with broadcasting in both directions where it applies)
CASES = [
    ("add_broadcast", lambda x: ad.sum((x + B) * (B + x)), lambda x: jnp.sum((x + B) * (B + x)), (4, 3)),
    ("sub_neg", lambda x: ad.sum((1.0 - x) * -x + (x - B)), lambda x: jnp.sum((1.0 - x) * -x + (x - B)), (4, 3)),
    ("mul_row", lambda x: ad.sum(A * x), lambda x: jnp.sum(A * x), (3,)),
    (
        "div",
        lambda x: ad.sum(A / (2.0 + x * x) + 1.0 / (3.0 + x)),
        lambda x: jnp.sum(A / (2 + x * x) + 1 / (3 + x)),
        (3,),
    ),
    ("power", lambda x: ad.sum((1.5 + x * x) ** 1.7), lambda x: jnp.sum((1.5 + x * x) ** 1.7), (4, 3)),
    ("matvec", lambda x: ad.sum(ad.exp(0.1 * (A @ x))), lambda x: jnp.sum(jnp.exp(0.1 * (A @ x))), (3,)),
    ("vecmat", lambda x: ad.sum((x @ A) ** 2.0), lambda x: jnp.sum((x @ A) ** 2), (4,)),
    ("matmat", lambda x: ad.sum((x @ A.T) ** 2.0), lambda x: jnp.sum((x @ A.T) ** 2), (2, 3)),
    ("stacked_matmul", lambda x: ad.sum(ad.softplus(A @ x)), lambda x: jnp.sum(jax.nn.softplus(A @ x)), (5, 3, 2)),
    ("rmatmul_stack", lambda x: ad.sum(ad.exp(0.1 * (x @ S))), lambda x: jnp.sum(jnp.exp(0.1 * (x @ S))), (4, 3)),
    ("getitem_repeat", lambda x: ad.sum(x[IDX] * A), lambda x: jnp.sum(x[IDX] * A), (3, 3)),
    ("getitem_slice", lambda x: ad.sum(x[..., 1:3] ** 2.0), lambda x: jnp.sum(x[..., 1:3] ** 2), (4, 5)),
    (
        "reshape_swap",
        lambda x: ad.sum(x.reshape(3, 4).swapaxes(0, 1) * A),
        lambda x: jnp.sum(x.reshape(3, 4).T * A),
        (12,),
    ),
    ("sum_axis", lambda x: ad.sum(ad.sum(x, axis=1) ** 2.0), lambda x: jnp.sum(jnp.sum(x, axis=1) ** 2), (4, 3)),
    (
        "sum_keepdims",
        lambda x: ad.sum(x * ad.sum(x, 0, True)),
        lambda x: jnp.sum(x * jnp.sum(x, 0, keepdims=True)),
        (4, 3),
    ),
    ("exp_log", lambda x: ad.sum(ad.log(1.0 + ad.exp(x))), lambda x: jnp.sum(jnp.log(1 + jnp.exp(x))), (4, 3)),
    ("log_sigmoid", lambda x: ad.sum(ad.log_sigmoid(30.0 * x)), lambda x: jnp.sum(jax.nn.log_sigmoid(30 * x)), (4, 3)),
    (
        "logsumexp_axis",
        lambda x: ad.sum(ad.logsumexp(50.0 * x, axis=-1) * B[0]),
        lambda x: jnp.sum(jax.nn.logsumexp(50 * x, axis=-1) * B[0]),
        (4, 3),
    ),
    ("logsumexp_all", lambda x: ad.logsumexp(x), lambda x: jax.nn.logsumexp(x), (4, 3)),
]


def fd_grad(f, x, eps=1e-6):
    g = np.zeros(x.size)
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = eps
        g[k] = (f(x + e.reshape(x.shape)) - f(x - e.reshape(x.shape))) / (2 * eps)
    return g.reshape(x.shape)


@pytest.mark.parametrize("name, f, fj, shape", CASES, ids=[c[0] for c in CASES])
def test_primitive_against_jax_and_finite_differences(name, f, fj, shape):
    x = np.random.default_rng(1).standard_normal(shape)
    value, g = ad.value_and_grad(f, x)
    with jax.enable_x64(True):
        gj = np.asarray(jax.grad(fj)(jnp.asarray(x)))
        vj = float(fj(jnp.asarray(x)))
    np.testing.assert_allclose(value, vj, rtol=1e-12)
    np.testing.assert_allclose(g, gj, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g, fd_grad(lambda z: float(f(z)), x), rtol=1e-5, atol=1e-7)
    assert value == pytest.approx(float(f(x)), rel=1e-14)  # the primitives on plain arrays


def test_seed_003_worked_examples():
    """Seed 003 §6 (notes §2.11, examples 3 and 4): f = (x + y) z at (-2, 5, -4) has value -12 and
    gradient (-4, -4, 3); L = 3(bc + a) at (5, 3, 2) has value 33 and gradient (3, 6, 9) (the text
    gives dL/db = 6 only, checked there by L(5, 4, 2) = 39)."""
    v, g = ad.value_and_grad(lambda t: (t[0] + t[1]) * t[2], np.array([-2.0, 5.0, -4.0]))
    assert v == -12.0 and g.tolist() == [-4.0, -4.0, 3.0]
    L = lambda t: 3 * (t[1] * t[2] + t[0])
    v, g = ad.value_and_grad(L, np.array([5.0, 3.0, 2.0]))
    assert v == 33.0 and g.tolist() == [3.0, 6.0, 9.0]
    assert L(np.array([5.0, 4.0, 2.0])) == 39.0


def test_a_node_used_twice_accumulates_and_a_two_layer_net_matches_jax():
    """The seed's two-layer loss (W2 sigma(W1 x) - y)^2, with W1 the variable: each path adds."""
    x, y, W2 = RNG.standard_normal(3), RNG.standard_normal(2), RNG.standard_normal((2, 4))
    W1 = RNG.standard_normal((4, 3))
    f = lambda W: ad.sum((W2 @ (-ad.log_sigmoid(-(W @ x))) - y) ** 2.0)  # softplus as a smooth sigma
    fj = lambda W: jnp.sum((W2 @ jax.nn.softplus(W @ x) - y) ** 2)
    with jax.enable_x64(True):
        gj = np.asarray(jax.grad(fj)(jnp.asarray(W1)))
    np.testing.assert_allclose(ad.grad(f)(W1), gj, rtol=1e-10)
    v, g = ad.value_and_grad(lambda t: t[0] * t[0] * t[0] + t[0], np.array([2.0]))
    assert (v, g[0]) == (10.0, 13.0)


def test_per_example_grads_are_the_rows_of_the_jacobian():
    X, y = RNG.standard_normal((7, 3)), np.array([1, -1, 1, 1, -1, 1, -1.0])
    theta = RNG.standard_normal(3)
    values, G = ad.per_example_grads(lambda R: ad.log_sigmoid(y * ad.sum(X * R, axis=-1)), theta, 7)
    with jax.enable_x64(True):
        J = np.asarray(jax.jacobian(lambda t: jax.nn.log_sigmoid(y * (X @ t)))(jnp.asarray(theta)))
    assert G.shape == (7, 3)
    np.testing.assert_allclose(G, J, rtol=1e-12)
    np.testing.assert_allclose(values, -np.logaddexp(0, -y * (X @ theta)), rtol=1e-14)


def test_constant_function_and_bad_calls():
    v, g = ad.value_and_grad(lambda t: 3.0, np.ones(2))
    assert v == 3.0 and g.tolist() == [0.0, 0.0]
    with pytest.raises(InputError) as e:
        ad.value_and_grad(lambda t: t * 2.0, np.ones(2))
    assert e.value.field == "f"
    with pytest.raises(InputError) as e:
        ad.per_example_grads(lambda R: ad.sum(R), np.ones(2), 3)
    assert e.value.field == "f"
    t1, t2 = ad.Tape().variable(1.0), ad.Tape().variable(2.0)
    with pytest.raises(InputError) as e:
        t1 + t2
    assert e.value.field == "operands"
