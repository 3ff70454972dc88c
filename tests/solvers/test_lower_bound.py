"""The finite-sum lower bound of seed 001 Thm 5.1 (L2110-2139) on its own instance.

f(w) = (1/n) sum_i [ (n/2)(w_i - 1)^2 + (1/2)|w|^2 ] in R^n, w* = 1/2, f* = n/4, f(0) = n/2. It is
a ridge problem with rows ``sqrt(n) e_i``, targets ``sqrt(n)`` and ``l2 = 1``. A method whose iterates
stay in the span of the term gradients it has seen, started at 0, has coordinate i = 0 until term i
is drawn, so per run ``f(w^k) - f* >= U_k / 4`` (U_k = terms never drawn), and in expectation
``E f(w^k) - f* >= (1 - 1/n)^k n/4``. SGD and SDCA (no initial gradient pass) use the
random-index oracle of the theorem.
"""

from __future__ import annotations

import numpy as np
import pytest

import solvers
from solvers.methods._incremental_common import IndexDraws
from solvers.problems.linear_models import LinearModel

N = 40
SEEDS = range(30)


@pytest.fixture(scope="module")
def instance():
    X = np.sqrt(N) * np.eye(N)
    y = np.full(N, np.sqrt(N))
    p = LinearModel(X, y, "squared", l2=1.0)
    w = np.full(N, 0.5)
    assert p.value(w) == pytest.approx(N / 4) and p.value(np.zeros(N)) == pytest.approx(N / 2)
    assert np.allclose(p.grad(w), 0)
    return p


@pytest.mark.parametrize(
    "name,opts",
    [
        ("sgd", {}),
        ("sdca", {"variant": "exact"}),
        ("sdca", {"variant": "line_search"}),
        ("sdca", {"variant": "constant"}),
    ],
)
@pytest.mark.parametrize("epochs", [1, 2, 3])
def test_no_solver_beats_the_lower_bound(instance, name, opts, epochs):
    p = instance
    fstar = N / 4
    k = epochs * N
    subs, unseen = [], []
    for s in SEEDS:
        r = solvers.minimize(p, name, max_iter=epochs, tol=0.0, seed=s, **opts)
        draw = IndexDraws("random", s, N)  # the solver's own draws, replayed
        drawn = np.concatenate([draw() for _ in range(epochs)])
        U = N - len(np.unique(drawn))
        sub = p.value(r.x) - fstar
        assert sub >= U / 4 - 1e-12  # per run: every undrawn coordinate still costs 1/4
        subs.append(sub)
        unseen.append(U)
    bound = (1 - 1 / N) ** k * N / 4
    se = np.std(np.array(unseen) / 4) / np.sqrt(len(SEEDS))
    # the empirical mean respects the expected lower bound (within sampling error of U_k)
    assert np.mean(subs) >= bound - 3 * se
    # and the counting argument is the theorem's expectation: E[U_k]/4 = (1 - 1/n)^k n/4
    assert abs(np.mean(unseen) / 4 - bound) <= 4 * se + 1e-12


def test_exact_sdca_attains_the_bound(instance):
    # SDCA's exact step solves term i's coordinate at once (w_i = 1/2 after one draw), so it meets
    # the lower bound with equality per run: f - f* = U_k / 4
    p = instance
    for s in range(5):
        r = solvers.minimize(p, "sdca", variant="exact", max_iter=2, tol=0.0, seed=s)
        draw = IndexDraws("random", s, N)
        drawn = np.concatenate([draw() for _ in range(2)])
        U = N - len(np.unique(drawn))
        assert p.value(r.x) - N / 4 == pytest.approx(U / 4, abs=1e-10)
