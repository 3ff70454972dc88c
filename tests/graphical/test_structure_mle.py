"""Maximum likelihood on a fixed graph against cvxpy's optimum of the same problem."""

import cvxpy as cp
import networkx as nx
import numpy as np
import pytest

from graphical.structure_mle import fit_on_graph, heldout_objective
from solvers.errors import InputError


@pytest.mark.parametrize("seed", [0, 1])
def test_fit_on_graph_equals_cvxpy(seed):
    rng = np.random.default_rng(seed)
    p = 8
    A = nx.to_numpy_array(nx.erdos_renyi_graph(p, 0.35, seed=seed)) > 0
    X = rng.standard_normal((40, p)) @ rng.standard_normal((p, p))
    S = np.cov(X.T)
    Theta = fit_on_graph(S, A)
    T = cp.Variable((p, p), symmetric=True)
    off = [(i, j) for i in range(p) for j in range(i + 1, p) if not A[i, j]]
    prob = cp.Problem(cp.Minimize(cp.trace(S @ T) - cp.log_det(T)), [T[i, j] == 0 for i, j in off])
    prob.solve(solver=cp.CLARABEL)
    # cvxpy's interior point stops at ~1e-4 relative in Θ; the objectives agree to 1e-7 and ours is
    # never worse (it satisfies the optimality conditions to 1e-8: W = S on the support)
    np.testing.assert_allclose(Theta, T.value, rtol=2e-3, atol=1e-3 * np.abs(T.value).max())
    ours = -heldout_objective(S, Theta)
    assert ours == pytest.approx(prob.value, rel=1e-7, abs=1e-7) and ours <= prob.value + 1e-9
    assert all(abs(Theta[i, j]) < 1e-12 for i, j in off)
    W = np.linalg.inv(Theta)
    np.testing.assert_allclose(W[A], S[A], rtol=1e-8)  # moment matching on the edges
    np.testing.assert_allclose(np.diag(W), np.diag(S), rtol=1e-8)


def test_full_graph_is_the_inverse_and_bad_graph():
    S = np.cov(np.random.default_rng(3).standard_normal((50, 5)).T)
    full = ~np.eye(5, dtype=bool)
    np.testing.assert_allclose(fit_on_graph(S, full), np.linalg.inv(S), rtol=1e-8)
    with pytest.raises(InputError) as e:
        fit_on_graph(S, np.ones((5, 5)))
    assert e.value.field == "graph" and e.value.code == "self_loop"
    with pytest.raises(InputError) as e:
        fit_on_graph(S, full[:4, :4])
    assert e.value.code == "shape_mismatch"
