"""Neighbourhood selection (seed 001 §6.3.2) against per-variable lasso fits done one at a time."""

import networkx as nx
import numpy as np
import pytest
from sklearn.linear_model import Lasso

from graphical.neighbourhood import neighbourhood_selection, neighbourhood_weights
from solvers.errors import InputError


def chain_data(p=8, n=400, seed=0):
    Theta = np.eye(p) * 2 - 0.9 * (np.eye(p, k=1) + np.eye(p, k=-1))
    return np.random.default_rng(seed).multivariate_normal(np.zeros(p), np.linalg.inv(Theta), n)


def test_selection_matches_individual_lasso_fits():
    X = chain_data()
    Z = (X - X.mean(0)) / X.std(0)
    lam = 0.2
    B = np.zeros((8, 8), dtype=bool)
    for i in range(8):
        rest = [j for j in range(8) if j != i]
        # the seed's (1/n)||r||² + λ||θ||₁ is scikit-learn's objective with alpha = λ/2
        B[i, rest] = Lasso(alpha=lam / 2, tol=1e-10, max_iter=100000).fit(Z[:, rest], Z[:, i]).coef_ != 0
    np.testing.assert_array_equal(neighbourhood_selection(X, lam, rule="union"), B | B.T)
    np.testing.assert_array_equal(neighbourhood_selection(X, lam, rule="intersection"), B & B.T)


def test_chain_is_recovered_and_union_contains_intersection():
    X = chain_data(n=2000, seed=1)
    Wu = neighbourhood_weights(X, rule="union")
    Wi = neighbourhood_weights(X, rule="intersection")
    assert (Wu >= Wi).all() and (Wu == Wu.T).all()
    iu = np.triu_indices(8, 1)
    top = np.argsort(-Wi[iu])[:7]
    assert {(int(iu[0][k]), int(iu[1][k])) for k in top} == {(i, i + 1) for i in range(7)}


def test_on_a_ba_graph_true_edges_rank_higher():
    G = nx.barabasi_albert_graph(20, 1, seed=2)
    L = nx.laplacian_matrix(G).toarray() + 0.5 * np.eye(20)
    X = np.random.default_rng(3).multivariate_normal(np.zeros(20), np.linalg.inv(L), 800)
    W = neighbourhood_weights(X)
    A = nx.to_numpy_array(G) > 0
    off = ~np.eye(20, dtype=bool)
    assert W[A].min() > np.median(W[off & ~A])


def test_bad_input():
    with pytest.raises(InputError) as e:
        neighbourhood_weights(np.ones((5, 1)))
    assert e.value.field == "X" and e.value.code == "bad_shape"
    X = chain_data()
    X[3, 2] = np.nan
    with pytest.raises(InputError) as e:
        neighbourhood_weights(X)
    assert e.value.code == "nan" and e.value.location == {"row": 3, "column": 2}
    X = chain_data()
    X[:, 4] = 1.0
    with pytest.raises(InputError) as e:
        neighbourhood_weights(X)
    assert e.value.code == "zero_variance"
    with pytest.raises(InputError) as e:
        neighbourhood_weights(chain_data(), rule="or")
    assert e.value.field == "rule"
    with pytest.raises(InputError) as e:
        neighbourhood_selection(chain_data(), -1.0)
    assert e.value.field == "lam"
