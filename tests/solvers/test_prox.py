"""The prox and conjugate library against a numerical minimisation of each definition, and Moreau's identity."""

import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar

from solvers.errors import InputError
from solvers.prox import (
    L1,
    Box,
    ElasticNet,
    GroupL2,
    L2Ball,
    Loss,
    NegLog,
    Nuclear,
    Quadratic,
    SquaredL2,
    prox_logistic_conj,
    soft_threshold,
)

RNG = np.random.default_rng(0)


def numeric_prox(h, v, t):
    """argmin_x h(x) + sum (x - v)^2 / (2 t) by Powell from v (derivative-free: handles kinks)."""
    obj = lambda x: h(x) + float(np.sum((x - v) ** 2 / (2 * np.asarray(t))))  # noqa: E731
    best = minimize(obj, v, method="Powell", options={"xtol": 1e-12, "ftol": 1e-15, "maxfev": 200000})
    return best.x, obj


@pytest.mark.parametrize(
    "fn",
    [L1(0.7), ElasticNet(0.5, 2.0), SquaredL2(1.3), GroupL2(0.6, [np.arange(3), np.arange(3, 6)]), NegLog()],
    ids=["l1", "elastic_net", "ridge", "group", "neglog"],
)
@pytest.mark.parametrize("t", [0.3, 1.0, 2.5])
def test_prox_is_the_minimiser_of_its_definition(fn, t):
    v = RNG.normal(size=6) * 2
    if isinstance(fn, NegLog):
        v = np.abs(v) + 0.1  # Powell from a feasible start
    p = fn.prox(v, t)
    xnum, obj = numeric_prox(fn.value, v, t)
    assert obj(p) <= obj(xnum) + 1e-9
    np.testing.assert_allclose(p, xnum, atol=1e-5)


def test_neg_log_prox_is_the_corrected_formula_not_the_printed_one():
    v, t = np.array([-1.0, 0.5, 3.0]), 2.0
    p = NegLog().prox(v, t)
    # optimality: -1/x + (x - v)/t = 0
    np.testing.assert_allclose(-1 / p + (p - v) / t, 0.0, atol=1e-12)
    printed = 0.5 * (v + np.sqrt(v * v + 4 * v + 0j))  # the seed's 4v: complex for v = -1
    assert not np.allclose(p, printed)


def test_diagonally_scaled_prox_is_the_minimiser_with_per_coordinate_steps():
    v = RNG.normal(size=5) * 2
    t = np.array([0.1, 0.5, 1.0, 2.0, 4.0])
    for fn in (L1(0.8), ElasticNet(0.4, 1.5), SquaredL2(0.9)):
        xnum, obj = numeric_prox(fn.value, v, t)
        assert obj(fn.prox(v, t)) <= obj(xnum) + 1e-9
        np.testing.assert_allclose(fn.prox(v, t), xnum, atol=1e-5)


def test_svt_is_the_nuclear_prox():
    V = RNG.normal(size=(4, 3))
    t = 0.8
    P = Nuclear(1.0).prox(V, t)
    obj = lambda z: Nuclear(1.0).value(z.reshape(4, 3)) + np.sum((z - V.ravel()) ** 2) / (2 * t)  # noqa: E731
    num = minimize(obj, P.ravel() + 0.05, method="Powell", options={"xtol": 1e-10, "ftol": 1e-14, "maxfev": 100000})
    assert obj(P.ravel()) <= num.fun + 1e-9
    # the singular values are shrunk by t
    np.testing.assert_allclose(
        np.linalg.svd(P, compute_uv=False), np.maximum(np.linalg.svd(V, compute_uv=False) - t, 0), atol=1e-12
    )


def test_projections_and_quadratic_prox():
    v = RNG.normal(size=6) * 3
    np.testing.assert_allclose(Box(-1.0, 0.5).prox(v), np.clip(v, -1, 0.5))
    p = L2Ball(1.5).prox(v)
    assert np.linalg.norm(p) == pytest.approx(1.5) and np.allclose(p / np.linalg.norm(p), v / np.linalg.norm(v))
    M = RNG.normal(size=(6, 6))
    Q = Quadratic(M @ M.T, RNG.normal(size=6))
    p = Q.prox(v, 0.7)
    np.testing.assert_allclose(Q.P @ p + Q.q + (p - v) / 0.7, 0.0, atol=1e-10)  # optimality
    with pytest.raises(InputError) as e:
        Box(1.0, 0.0)
    assert e.value.field == "lo"
    with pytest.raises(InputError) as e:
        L1(-1.0)
    assert e.value.field == "lam"


@pytest.mark.parametrize("t", [0.25, 1.0, 3.0])
def test_weighted_moreau_identity_for_the_norms(t):
    v = RNG.normal(size=7) * 2
    lam = 0.9
    # (lam |.|_1)* = indicator of the inf-ball of radius lam; (lam |.|_2)* = indicator of the 2-ball
    np.testing.assert_allclose(L1(lam).prox(v, t) + t * Box(-lam, lam).prox(v / t), v, atol=1e-12)
    g = GroupL2(lam, [np.arange(7)], weights=np.ones(1))
    np.testing.assert_allclose(g.prox(v, t) + t * L2Ball(lam).prox(v / t), v, atol=1e-12)
    # (lam/2 |.|^2)* = |.|^2/(2 lam): prox_{h*/t}(w) = w lam t / (1 + lam t)... checked through the identity
    r = SquaredL2(lam)
    conj_prox = lambda w, s: w / (1 + s / lam)  # noqa: E731  prox of s |u|^2/(2 lam)
    np.testing.assert_allclose(r.prox(v, t) + t * conj_prox(v / t, 1 / t), v, atol=1e-12)
    # the unit-weight form v = prox_h(v) + prox_{h*}(v) fails for t != 1
    if t != 1.0:
        assert not np.allclose(L1(lam).prox(v, t) + Box(-lam, lam).prox(v), v)


def _loss_prox_numeric(loss, i, w, s):
    """prox_{s phi_i}(w) by scalar minimisation."""
    f = lambda z: float(loss.values(np.full(len(loss.b), z))[i]) + (z - w) ** 2 / (2 * s)  # noqa: E731
    return minimize_scalar(f, bracket=(w - 5, w + 5), tol=1e-13).x


@pytest.mark.parametrize("kind", ["squared", "smooth_hinge", "logistic"])
@pytest.mark.parametrize("s", [0.2, 1.0, 5.0])
def test_conjugate_prox_minimises_its_definition_and_moreau_holds(kind, s):
    n = 6
    b = RNG.normal(size=n) if kind == "squared" else np.where(RNG.random(n) < 0.5, -1.0, 1.0)
    loss = Loss(kind, b)
    v = RNG.normal(size=n) * 1.5
    y = loss.conj_prox(v, s)
    assert np.all(np.isfinite(loss.conj_values(y)))
    for i in range(n):
        f = lambda u: float(loss.conj_values(np.full(n, u))[i]) + (u - v[i]) ** 2 / (2 * s)  # noqa: E731, B023
        lo, hi = (-10, 10) if kind == "squared" else sorted((0.0, -b[i]))
        num = minimize_scalar(f, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12})
        assert f(y[i]) <= num.fun + 1e-10
        assert y[i] == pytest.approx(num.x, abs=1e-5)
        # weighted Moreau: v = prox_{s phi*}(v) + s prox_{phi/s}(v/s)
        assert y[i] + s * _loss_prox_numeric(loss, i, v[i] / s, 1 / s) == pytest.approx(v[i], abs=1e-6)


def test_conjugates_are_the_legendre_transforms():
    b = np.array([1.0, -1.0, 1.0])
    for kind in ("squared", "smooth_hinge", "logistic"):
        loss = Loss(kind, b)
        for y in (np.array([-0.3, 0.7, -0.9]), np.array([-0.05, 0.5, -0.5])):
            # phi*(y) = sup_z y z - phi(z), per term
            for i in range(3):
                f = lambda z: -(y[i] * z - float(loss.values(np.full(3, z))[i]))  # noqa: E731, B023
                num = minimize_scalar(f, bracket=(-3, 3), tol=1e-12)
                assert loss.conj_values(y)[i] == pytest.approx(-num.fun, abs=1e-7)
        # derivatives by central differences
        z = np.array([0.3, -1.2, 2.0])
        fd = (loss.values(z + 1e-6) - loss.values(z - 1e-6)) / 2e-6
        np.testing.assert_allclose(loss.derivs(z), fd, atol=1e-6)


def test_logistic_conjugate_prox_stays_inside_the_open_interval():
    v = np.array([-1e3, -30.0, -1.0, 0.0, 1.0, 30.0, 1e3])
    y = prox_logistic_conj(v, 1.0)
    assert np.all((y > -1) & (y < 0))
    # the optimality residual (near -1 the float grid limits it: y + 1 ~ e^{v} for very negative v)
    v = np.array([-10.0, -1.0, 0.0, 1.0, 10.0, 30.0])
    y = prox_logistic_conj(v, 1.0)
    h = np.log1p(y) - np.log(-y) + (y - v)
    np.testing.assert_allclose(h, 0.0, atol=1e-9)
    assert soft_threshold(np.array([2.0, -0.5]), 1.0).tolist() == [1.0, -0.0]
    with pytest.raises(InputError) as e:
        Loss("logistic", np.array([1.0, 0.5]))
    assert e.value.field == "b"
