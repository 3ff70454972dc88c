"""Measured linear rates against the theorems of seed 001 (the note's rates table), averaged over seeds.

Each test runs the solver with the step of the theorem on a strongly convex L2-logistic problem
that satisfies the big-data condition ``n >= 2 L/mu``, averages the error over seeds (the bounds
hold in expectation), and checks (a) the error stays below the bound at every epoch and (b) the
fitted per-step contraction is at least the theorem's factor.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import solvers
from solvers.problems.linear_models import LinearModel

SEEDS = range(8)


@pytest.fixture(scope="module")
def prob():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(42)
    n, d = 200, 5
    X = rng.normal(size=(n, d)) * 0.8
    y = np.where(X @ rng.normal(size=d) + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    l2 = 0.05
    p = LinearModel(X, y, "logistic", l2=l2)
    assert n >= 2 * p.L_max / p.l2  # big-data condition with beta = 2
    clf = LogisticRegression(C=1 / (l2 * n), fit_intercept=False, solver="newton-cholesky", tol=1e-14, max_iter=100)
    xs = clf.fit(X, y).coef_.ravel()
    return p, xs, p.value(xs)


def _slope(k, v):
    """Least-squares slope of log v against k (per-step log contraction)."""
    return float(np.polyfit(k, np.log(v), 1)[0])


def test_saga_rate_theorem_4_7(prob):
    p, xs, fs = prob
    n, mu, L = p.n_terms, p.l2, p.L_max
    step = 1 / (2 * (mu * n + L))
    rho = 1 - mu / (2 * (mu * n + L))
    x0 = np.zeros(p.dim)
    C = xs @ xs + n / (mu * n + L) * (p.value(x0) - fs)  # f'(x*) = 0
    E = 12
    errs = np.zeros(E + 1)
    for s in SEEDS:
        xs_seen = []
        solvers.minimize(p, "saga", step=step, max_iter=E, tol=0.0, seed=s, callback=lambda x: xs_seen.append(x.copy()))
        errs += np.array([np.sum((x - xs) ** 2) for x in xs_seen]) / len(SEEDS)
    k = n * np.arange(E + 1)
    assert np.all(errs <= rho**k * C)
    assert _slope(k[2:], errs[2:]) <= math.log(rho)


def test_svrg_rate_theorem_4_10(prob):
    p, xs, fs = prob
    L, mu = p.L_max, p.l2
    eta = 4 * L
    m = math.ceil(math.log(0.5) / math.log(1 - mu / (4 * L)))
    c4 = sum((1 - mu / eta) ** t for t in range(m + 1))
    x0 = np.zeros(p.dim)
    C = xs @ xs + c4 / (2 * L) * (p.value(x0) - fs)
    S = 10
    errs = np.zeros(S + 1)
    for s in SEEDS:
        seen = []
        solvers.minimize(
            p,
            "svrg",
            step=1 / eta,
            m=m,
            snapshot="last",
            max_iter=S,
            tol=0.0,
            seed=s,
            callback=lambda x: seen.append(x.copy()),
        )
        errs += np.array([np.sum((x - xs) ** 2) for x in seen]) / len(SEEDS)
    k = m * np.arange(S + 1)
    bound = max(0.5, (1 - mu / (4 * L)) ** m) ** (k / m) * C
    assert np.all(errs <= bound)
    assert _slope(k[1:], errs[1:]) <= math.log(0.5) / m


def test_finito_rate_theorem_3_1(prob):
    p, xs, fs = prob
    n, mu = p.n_terms, p.l2
    g0 = p.grad(np.zeros(p.dim))
    C = 3 / (4 * mu) * g0 @ g0
    E = 8
    sub = np.zeros(E + 1)
    for s in SEEDS:
        for e in range(E + 1):
            r = solvers.minimize(p, "finito", alpha=2.0, order="random", max_iter=e, tol=0.0, seed=s)
            sub[e] += (p.value(r.extra["phibar"]) - fs) / len(SEEDS)
    k = n * np.arange(E + 1)
    rho = 1 - 1 / (2 * n)
    assert np.all(sub <= rho**k * C)
    assert _slope(k[1:], np.maximum(sub[1:], 1e-300)) <= math.log(rho)


def test_sdca_rate_dual_suboptimality(prob):
    p, xs, fs = prob
    n, mu = p.n_terms, p.l2
    Lphi = 0.25 * float(p.sqnorms.max())
    rho = 1 - mu / (Lphi + mu * n)
    D0 = 0.0  # D(beta = 0) = -(1/n) sum phi*(0) = 0 for the logistic loss
    E = 10
    sub = np.zeros(E + 1)
    for s in SEEDS:
        r = solvers.minimize(p, "sdca", variant="exact", max_iter=E, tol=0.0, seed=s)
        dual = np.array(r.trace.extra["dual"])
        sub += (fs - dual) / len(SEEDS)
    assert sub[0] == pytest.approx(fs - D0)
    k = n * np.arange(E + 1)
    assert np.all(sub <= rho**k * (fs - D0) * (1 + 1e-12))
    assert _slope(k[1:6], sub[1:6]) <= math.log(rho)
    # the duality gap bounds the primal suboptimality at every epoch
    r = solvers.minimize(p, "sdca", max_iter=E, tol=0.0, seed=0)
    gaps = np.array(r.trace.extra["measure"])
    assert np.all(np.array(r.trace.objective) - fs <= gaps + 1e-14)
