"""Correlation, mutual-information and conditional covariance thresholding (seed 001 §6.3.3-6.3.4)
against their definitions written out directly, and their bad-input errors."""

from itertools import combinations

import numpy as np
import pytest

from graphical.checks import as_adjacency
from graphical.thresholding import (
    cct_weights,
    correlation,
    correlation_weights,
    mutual_information,
    threshold,
    top_edges,
)
from solvers.errors import InputError
from tests.graphical.cases import BAD_COVARIANCES


def sample_cov(p, n, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) @ rng.standard_normal((p, p))
    return np.cov(X.T)


def brute_cct(C, eta):
    """min over every S ⊂ V∖{i,j}, |S| <= eta (the empty set included) of |C_ij - C_iS C_SS^{-1} C_Sj|."""
    p = C.shape[0]
    W = np.zeros((p, p))
    for i, j in combinations(range(p), 2):
        rest = [k for k in range(p) if k not in (i, j)]
        best = abs(C[i, j])
        for size in range(1, eta + 1):
            for S in combinations(rest, size):
                S = list(S)
                v = C[i, j] - C[i, S] @ np.linalg.solve(C[np.ix_(S, S)], C[S, j])
                best = min(best, abs(v))
        W[i, j] = W[j, i] = best
    return W


@pytest.mark.parametrize("eta", [1, 2])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cct_equals_the_definition(eta, seed):
    C = sample_cov(9, 30, seed)
    np.testing.assert_allclose(cct_weights(C, eta), brute_cct(C, eta), rtol=1e-10, atol=1e-12)


def test_cct_of_a_chain_removes_the_transitive_edges():
    """A Markov chain x0 - x1 - x2 - x3: conditioning on the middle node makes far pairs independent."""
    Theta = np.diag([2.0] * 4) + np.diag([-0.9] * 3, 1) + np.diag([-0.9] * 3, -1)
    C = np.linalg.inv(Theta)
    W = cct_weights(C, 1)
    assert W[0, 2] < 1e-12 and W[1, 3] < 1e-12 and W[0, 3] < 1e-12
    assert min(W[0, 1], W[1, 2], W[2, 3]) > 0.1
    E = threshold(W, 1e-8)
    assert set(zip(*np.nonzero(np.triu(E)))) == {(0, 1), (1, 2), (2, 3)}


def test_correlation_and_mutual_information_match_their_formulas():
    C = sample_cov(6, 20, 3)
    R = correlation(C)
    i, j = 1, 4
    assert R[i, j] == pytest.approx(C[i, j] / np.sqrt(C[i, i] * C[j, j]), rel=1e-12)
    np.testing.assert_allclose(np.diag(R), 1.0)
    MI = mutual_information(C)
    d = C[i, i] * C[j, j]
    assert MI[i, j] == pytest.approx(0.5 * np.log(d / (d - C[i, j] ** 2)), rel=1e-10)
    assert np.all(np.diag(MI) == 0) and np.all(np.diag(correlation_weights(C)) == 0)
    # MI is monotone in |correlation|: both rank the pairs the same way
    iu = np.triu_indices(6, 1)
    assert (np.argsort(MI[iu]) == np.argsort(correlation_weights(C)[iu])).all()


def test_top_edges_keeps_the_largest():
    W = np.array([[0, 3, 1], [3, 0, 2], [1, 2, 0]], dtype=float)
    E = top_edges(W, 2)
    assert E[0, 1] and E[1, 2] and not E[0, 2] and (E == E.T).all()


@pytest.mark.parametrize("C, code", BAD_COVARIANCES)
@pytest.mark.parametrize("fn", [correlation, mutual_information, lambda C, field: cct_weights(C, 1, field=field)])
def test_bad_covariance_is_an_input_error_naming_the_argument(C, code, fn):
    with pytest.raises(InputError) as e:
        fn(C, field="covariance")
    assert e.value.field == "covariance" and e.value.code == code


def test_bad_eta_and_bad_graph():
    with pytest.raises(InputError) as e:
        cct_weights(np.eye(3), 3)
    assert e.value.field == "eta"
    with pytest.raises(InputError) as e:
        as_adjacency(np.array([[1, 1], [1, 0]]), field="graph")
    assert e.value.field == "graph" and e.value.code == "self_loop"
    import networkx as nx

    G = nx.Graph([(0, 1), (1, 1)])
    with pytest.raises(InputError) as e:
        as_adjacency(G)
    assert e.value.code == "self_loop"
    with pytest.raises(InputError) as e:
        threshold(np.eye(3), np.nan)
    assert e.value.field == "t"


def test_walk_summable_generator():
    """Seed 001 §8.3.1: pairwise normalisable, so walk-summable: the spectral radius of |R| < 1, R the
    partial correlations; the sample covariance converges to the inverse precision."""
    from graphical.walk_summable import random_graph, sample, walk_summable_precision

    rng = np.random.default_rng(0)
    for kind in ("ba", "er"):
        A = random_graph(kind, 60, 120, rng)
        assert abs(A.sum() / 2 - 120) < 40
        Theta = walk_summable_precision(A, rng)
        assert ((Theta != 0) == (A | np.eye(60, dtype=bool))).all()
        d = 1 / np.sqrt(np.diag(Theta))
        R = np.abs(Theta * d[:, None] * d[None, :] - np.eye(60))
        assert np.max(np.abs(np.linalg.eigvalsh(R))) < 1
        X = sample(Theta, 30_000, rng)
        np.testing.assert_allclose(np.cov(X.T), np.linalg.inv(Theta), atol=0.05 * np.abs(np.linalg.inv(Theta)).max())
