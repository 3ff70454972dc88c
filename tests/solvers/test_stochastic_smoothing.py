"""Stochastic smoothing (seed 002 ch. II): the smoothed losses, ANSGD's rates, the baselines, bad input.

References: finite differences for the gradients, Nesterov's sandwich ``f_g <= f <= f_g + g D_U``
(closed form, D_U = 1/2) for the smoothing error, cvxpy (Clarabel) for the optimum of the nonsmooth
objective that ANSGD approaches as ``gamma_t -> 0``, and the theorems' rates (Thm 6: O(1/t); Thm 5:
O(1/sqrt t) at worst) for the fitted slope of log error against log steps.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp

import solvers
from solvers.errors import InputError
from solvers.methods.ansgd import make_schedule
from solvers.problems.smoothable import SmoothableLinearModel
from solvers.smoothing import SmoothedLoss, estimate_mean_sq_norm


def _data(loss: str, n: int = 200, d: int = 5):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, d))
    X /= np.sqrt((X**2).sum(1).mean())  # E|s|^2 = 1 (the practical schedule's normalisation)
    w = rng.normal(size=d)
    if loss == "hinge":
        y = np.sign(X @ w + 0.3 * rng.normal(size=n))
    else:
        y = X @ w + 0.3 * rng.standard_t(2, size=n)
    return X, y


def _optimum(p: SmoothableLinearModel) -> float:
    w = cp.Variable(p.dim)
    z = p.A @ w
    f = cp.pos(1 - cp.multiply(p.y, z)) if p.loss == "hinge" else cp.abs(p.y - z)
    pr = cp.Problem(cp.Minimize(cp.sum(f) / p.n_terms + 0.5 * p.l2 * cp.sum_squares(w)))
    pr.solve(solver="CLARABEL")
    assert abs(pr.value - p.value(w.value)) < 1e-6  # our objective equals cvxpy's at its solution
    return float(pr.value)


@pytest.mark.parametrize("kind", ["hinge", "absolute"])
@pytest.mark.parametrize("gamma", [0.05, 0.5, 2.0])
def test_smoothed_loss_derivative_matches_finite_differences(kind, gamma):
    loss = SmoothedLoss(kind)
    rng = np.random.default_rng(0)
    y = np.sign(rng.normal(size=400)) if kind == "hinge" else rng.normal(size=400)
    z = rng.normal(scale=2.0, size=400)
    h = 1e-6
    fd = (loss.values(z + h, y, gamma) - loss.values(z - h, y, gamma)) / (2 * h)
    np.testing.assert_allclose(loss.derivs(z, y, gamma), fd, atol=1e-6)


@pytest.mark.parametrize("kind", ["hinge", "absolute"])
def test_smoothing_error_is_within_gamma_D_U_and_the_bound_is_tight(kind):
    loss = SmoothedLoss(kind)
    z = np.linspace(-4, 4, 2001)
    y = np.ones_like(z) if kind == "hinge" else np.full_like(z, 0.3)
    exact = np.maximum(0, 1 - z) if kind == "hinge" else np.abs(0.3 - z)
    np.testing.assert_array_equal(loss.values(z, y, 0.0), exact)
    for gamma in (0.01, 0.3, 1.0):
        gap = exact - loss.values(z, y, gamma)
        assert gap.min() >= -1e-15
        assert gap.max() <= gamma * loss.D_U + 1e-15
        assert gap.max() == pytest.approx(gamma * loss.D_U)  # reached where u* sits at its bound


def test_the_seed_closed_forms_of_eq_71_and_73():
    h, a = SmoothedLoss("hinge"), SmoothedLoss("absolute")
    g = 0.4
    m = np.array([1.5, 0.8, 0.2])  # m >= 1, 1 - g <= m < 1, m < 1 - g
    np.testing.assert_allclose(h.values(m, np.ones(3), g), [0.0, 0.2**2 / (2 * g), 1 - 0.2 - g / 2])
    r = np.array([0.1, -0.3, 2.0])  # |r| < g, |r| < g, |r| >= g
    np.testing.assert_allclose(a.values(np.zeros(3), r, g), [0.01 / (2 * g), 0.09 / (2 * g), 2.0 - g / 2])


@pytest.mark.parametrize("loss", ["hinge", "absolute"])
def test_problem_gradients_match_finite_differences_and_sparse_rows(loss):
    X, y = _data(loss, n=60, d=7)
    p = SmoothableLinearModel(X, y, loss, l2=0.1)
    ps = SmoothableLinearModel(sp.csr_matrix(np.where(np.abs(X) < 0.3, 0.0, X)), y, loss, l2=0.1)
    pd = SmoothableLinearModel(np.where(np.abs(X) < 0.3, 0.0, X), y, loss, l2=0.1)
    x = np.random.default_rng(2).normal(size=7)
    gamma = 0.3
    h = 1e-6
    E = np.eye(7)
    fd = np.array([(p.smoothed_value(x + h * e, gamma) - p.smoothed_value(x - h * e, gamma)) / (2 * h) for e in E])
    np.testing.assert_allclose(p.smoothed_grad(x, gamma), fd, atol=1e-7)
    mean_terms = np.mean([p.smoothed_term_grad(i, x, gamma) for i in range(60)], axis=0)
    np.testing.assert_allclose(mean_terms, p.smoothed_grad(x, gamma), atol=1e-12)
    for i in (0, 17, 59):
        np.testing.assert_allclose(ps.smoothed_term_grad(i, x, gamma), pd.smoothed_term_grad(i, x, gamma), atol=1e-14)
        np.testing.assert_allclose(ps.term_grad(i, x), pd.term_grad(i, x), atol=1e-14)
    assert ps.value(x) == pytest.approx(pd.value(x), rel=1e-14)


def test_mean_sq_norm_estimate():
    sq = np.random.default_rng(0).exponential(size=1000)
    assert estimate_mean_sq_norm(sq, k=200_000, seed=1) == pytest.approx(sq.mean(), rel=0.01)
    assert estimate_mean_sq_norm(sq, k=1, seed=1) in sq


def test_schedules_respect_the_theorem_constraints():
    X, y = _data("hinge")
    c = SmoothableLinearModel(X, y, "hinge", l2=0.05).nesterov_smoothing
    for kind in ("convex", "strongly_convex", "practical"):
        s = make_schedule(kind, c)
        consts = np.array([s.at(t) for t in range(2000)])
        alpha, gamma, theta, eta, mu = consts.T
        assert alpha[0] == 1.0 and np.all((alpha >= 0) & (alpha <= 1))  # Thm 6's alpha_0 = 2 fixed
        np.testing.assert_array_equal(gamma, alpha)  # gamma_{t+1} = alpha_t
        assert np.all(theta >= 0) and np.all(eta > 0)
        np.testing.assert_allclose(eta, alpha / (mu + theta))
    s = make_schedule("practical", c)
    assert s.at(5)[2] == pytest.approx(c.L_g * 2 / 7 + c.mu / (2 * 2 / 7) + 1 - c.mu)  # the seed's L1014 theta


def _slope(p, fstar, method, seeds=4, epochs=64, **kw):
    E = np.mean(
        [
            np.array(solvers.minimize(p, method, max_iter=epochs, seed=s, **kw).trace.objective) - fstar
            for s in range(seeds)
        ],
        axis=0,
    )
    sel = np.array([1, 2, 4, 8, 16, 32, 64])
    assert np.all(E[sel] > 0)
    return float(np.polyfit(np.log(sel * p.n_terms), np.log(E[sel]), 1)[0]), E


@pytest.mark.parametrize("loss", ["hinge", "absolute"])
@pytest.mark.parametrize("schedule", ["strongly_convex", "practical"])
def test_ansgd_strongly_convex_rate_is_one_over_t(loss, schedule):
    X, y = _data(loss)
    p = SmoothableLinearModel(X, y, loss, l2=0.05)
    slope, E = _slope(p, _optimum(p), "ansgd", schedule=schedule)
    assert abs(slope + 1.0) <= 0.2, slope  # Thm 6: O(1/t)
    assert E[-1] < 2e-3


@pytest.mark.parametrize("loss", ["hinge", "absolute"])
def test_ansgd_convex_rate_is_at_least_one_over_sqrt_t(loss):
    X, y = _data(loss)
    p = SmoothableLinearModel(X, y, loss, l2=0.0)
    slope, E = _slope(p, _optimum(p), "ansgd", schedule="convex")
    # Thm 5: O(1/t^2) + O(1/t) + O(1/sqrt t); the sqrt term bounds the slope from above
    assert -1.1 <= slope <= -0.4, slope
    assert E[64] < E[1] / 4  # 64x the steps: at least a 1/sqrt(64) = 1/8 reduction by the bound, 1/4 allowed


@pytest.mark.parametrize(
    ("method", "kw"),
    [
        ("asgd", {"omega": 1.0}),
        ("acsa", {}),
        ("sgd", {"schedule": "inverse", "step": 1 / (0.05 * 1.0)}),  # SGD2: 1/(mu (t + Omega)), Omega = 1
    ],
)
def test_baselines_reach_the_optimum(method, kw):
    X, y = _data("hinge")
    p = SmoothableLinearModel(X, y, "hinge", l2=0.05)
    fstar = _optimum(p)
    r = solvers.minimize(p, method, max_iter=40, **kw)
    assert 0 <= r.fun - fstar < 5e-3
    assert r.fun == pytest.approx(p.value(r.x))


def test_bad_input():
    X, y = _data("hinge", n=20)
    with pytest.raises(InputError) as e:
        SmoothableLinearModel(X, y, "logistic")
    assert e.value.field == "loss"
    with pytest.raises(InputError) as e:
        SmoothableLinearModel(X, y[:5], "hinge")
    assert e.value.field == "y"
    with pytest.raises(InputError) as e:
        SmoothableLinearModel(X, y, "hinge", l2=-1.0)
    assert e.value.field == "l2"
    p0 = SmoothableLinearModel(X, y, "hinge")
    with pytest.raises(InputError) as e:
        p0.smoothed_value(np.zeros(5), -0.1)
    assert e.value.field == "gamma"
    with pytest.raises(InputError) as e:
        solvers.minimize(p0, "ansgd", schedule="strongly_convex")
    assert e.value.field == "schedule"
    with pytest.raises(InputError) as e:
        solvers.minimize(p0, "ansgd", schedule="nesterov")
    assert e.value.field == "schedule"
    with pytest.raises(InputError) as e:
        solvers.minimize(p0, "ansgd", omega=0.0)
    assert e.value.field == "omega"
    with pytest.raises(InputError) as e:
        solvers.minimize(p0, "asgd", strongly_convex=True)
    assert e.value.field == "strongly_convex"
    with pytest.raises(InputError) as e:
        solvers.minimize(p0, "ansgd", x0=np.zeros(3))
    assert e.value.field == "x0"
    with pytest.raises(InputError) as e:
        solvers.minimize(p0, "ansgd", max_iter=-1)
    assert e.value.field == "max_iter"
    lin = solvers.problems.linear_models.LinearModel(X, y, "hinge", l2=0.1)  # no smoothing oracle
    with pytest.raises(InputError) as e:
        solvers.minimize(lin, "ansgd")
    assert e.value.field == "method"


def test_signatures_declare_every_option_for_the_service():
    import inspect

    from app.signatures import check_kwargs
    from solvers.registry import info

    for name, own in (
        ("ansgd", {"schedule", "omega"}),
        ("asgd", {"omega", "strongly_convex"}),
        ("acsa", {"omega", "L"}),
    ):
        fn = info(name).fn
        params = set(inspect.signature(fn).parameters)
        assert own | {"tol", "max_iter", "callback", "progress", "order", "seed", "problem", "x0"} <= params
        check_kwargs(fn, {"max_iter": 3, "order": "permuted", "seed": 1}, "options", name)
        with pytest.raises(InputError) as e:
            check_kwargs(fn, {"stepsize": 1.0}, "options", name)
        assert e.value.field == "options.stepsize"
        with pytest.raises(TypeError):
            fn(SmoothableLinearModel(*_data("hinge", n=20), "hinge", l2=0.1), stepsize=1.0)


@pytest.mark.parametrize("method", ["ansgd", "asgd", "acsa"])
def test_callback_stops_and_trace_has_one_record_per_epoch(method):
    X, y = _data("hinge", n=50)
    p = SmoothableLinearModel(X, y, "hinge", l2=0.1)
    seen: list[np.ndarray] = []
    r = solvers.minimize(p, method, max_iter=10, callback=lambda x: seen.append(x.copy()) or len(seen) == 3)
    assert r.message == "stopped by callback" and not r.converged
    assert len(r.trace) == 3 and r.trace.passes == [0.0, 1.0, 2.0]
    np.testing.assert_array_equal(seen[-1], r.x)  # the callback sees the method's output point
    full = solvers.minimize(p, method, max_iter=4, order="permuted", seed=3)
    assert len(full.trace) == 5 and full.n_iter == 4


def test_acsa_step_is_ghadimi_lan_prox_step_and_lans_step_when_mu_is_zero():
    # Ghadimi-Lan's x_t = argmin a[<G, x> + mu V(x_md, x)] + [(1 - a) mu + c] V(x_{t-1}, x), V = |.|^2/2,
    # solved here by scipy (an independent reference), and with mu = 0 Lan's x_t = x_{t-1} - (t+1) gamma/2 G
    from scipy.optimize import minimize as sp_minimize

    from solvers.methods.acsa import ACSAState, acsa_step

    rng = np.random.default_rng(4)
    x, xag, G = rng.normal(size=(3, 6))
    for t0, mu, c in ((0, 0.3, 2.0), (4, 0.05, 0.7), (9, 1.0, 0.01)):
        a = 2.0 / (t0 + 2)
        new = acsa_step(ACSAState(x, xag, t0), lambda z: G, mu=mu, c=c)
        xmd = ((1 - a) * (mu + c) * xag + a * ((1 - a) * mu + c) * x) / (c + (1 - a * a) * mu)

        def sub(z, xmd=xmd, a=a, mu=mu, c=c):
            return a * (G @ z + mu * 0.5 * (z - xmd) @ (z - xmd)) + ((1 - a) * mu + c) * 0.5 * (z - x) @ (z - x)

        ref = sp_minimize(sub, x, method="BFGS", options={"gtol": 1e-12}).x
        np.testing.assert_allclose(new.x, ref, atol=1e-6)
        np.testing.assert_allclose(new.x_ag, a * new.x + (1 - a) * xag, rtol=1e-13)
        assert new.t == t0 + 1
    gam = 0.01
    for t in (1, 2, 7):
        a = 2.0 / (t + 1)
        new = acsa_step(ACSAState(x, xag, t - 1), lambda z: G, mu=0.0, c=a / ((t + 1) * gam / 2))
        np.testing.assert_allclose(new.x, x - (t + 1) * gam / 2 * G, rtol=1e-12)  # Lan 2012, gamma_t = (t+1) gamma/2


@pytest.mark.parametrize("loss", ["hinge", "absolute"])
def test_acsa_strongly_convex_rate_is_one_over_t_within_ghadimi_lan_bound(loss):
    X, y = _data(loss)
    p = SmoothableLinearModel(X, y, loss, l2=0.05)
    fstar = _optimum(p)
    slope, E = _slope(p, fstar, "acsa")
    assert abs(slope + 1.0) <= 0.3, slope  # Ghadimi-Lan Prop. 9: O(L V / N^2) + O((M^2 + sigma^2) / (mu N))
    # the bound itself at N = 64 epochs of steps, with M^2 + sigma^2 <= (c^2 + 1) mean|a|^2 (a subgradient
    # coefficient of the hinge in [-1, 0], of the absolute loss in [-1, 1], so c = 1 or 2): loose, but a check
    c = 1.0 if loss == "hinge" else 2.0
    N = 64 * p.n_terms
    V0 = (p.value(p.x0()) - fstar) / p.l2  # |x0 - x*|^2 / 2 <= (Phi(x0) - Phi*) / mu by strong convexity
    bound = 4 * p.l2 * V0 / (N * (N + 1)) + 4 * (c * c + 1) * float(np.mean(p.sqnorms)) / (p.l2 * (N + 1))
    assert E[64] <= bound, (E[64], bound)


@pytest.mark.parametrize("loss", ["hinge", "absolute"])
def test_acsa_convex_rate_is_one_over_sqrt_n_at_each_horizon(loss):
    # Lan 2012 Cor. 1: gamma = min{1/(4L), Omega/(N+2)^{3/2}} depends on the horizon N, so each N is its own run
    X, y = _data(loss)
    p = SmoothableLinearModel(X, y, loss, l2=0.0)
    fstar = _optimum(p)
    sel = np.array([1, 2, 4, 8, 16, 32])
    E = np.array(
        [
            np.mean([solvers.minimize(p, "acsa", max_iter=int(k), seed=s, omega=10.0).fun - fstar for s in range(4)])
            for k in sel
        ]
    )
    assert np.all(E > 0)
    slope = float(np.polyfit(np.log(sel * p.n_terms), np.log(E), 1)[0])
    assert -0.8 <= slope <= -0.3, (slope, E)  # O(1/sqrt N) at its noise term; O(1/N^2) is the smooth part's
