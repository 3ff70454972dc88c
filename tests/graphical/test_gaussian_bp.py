"""Gaussian belief propagation against the exact Gaussian marginals (the inverse of the precision)."""

import networkx as nx
import numpy as np
import pytest

from graphical.gaussian_bp import Edges, bethe_entropy, bethe_log_det, gaussian_bp
from solvers.errors import InputError


def precision_on(G, seed, dominant=True, attractive=False):
    rng = np.random.default_rng(seed)
    p = G.number_of_nodes()
    W = np.zeros((p, p))
    for u, v in G.edges():
        W[u, v] = W[v, u] = -rng.uniform(0, 1) if attractive else rng.uniform(-1, 1)
    rowsum = np.abs(W).sum(1)
    # dominant: walk-summable; otherwise a PD matrix that is NOT diagonally dominant (fine on a tree)
    diag = rowsum + 0.2 if dominant else rowsum * rng.uniform(0.3, 1.0, p) + 0.8
    J = W + np.diag(diag)
    assert np.linalg.eigvalsh(J)[0] > 0
    return J


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("dominant", [True, False])
def test_tree_marginals_and_log_det_are_exact(seed, dominant):
    G = nx.random_labeled_tree(25, seed=seed)
    J = precision_on(G, seed, dominant)
    h = np.random.default_rng(seed).standard_normal(25)
    r = gaussian_bp(J, h)
    S = np.linalg.inv(J)
    assert r.converged
    np.testing.assert_allclose(r.mean, S @ h, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(r.var, np.diag(S), rtol=1e-9)
    E = Edges.of(J)
    np.testing.assert_allclose(r.edge_cov, S[E.i, E.j], rtol=1e-9, atol=1e-12)
    ld, _ = bethe_log_det(J)
    assert ld == pytest.approx(np.linalg.slogdet(J)[1], rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("family", ["er", "grid", "ba"])
@pytest.mark.parametrize("attractive", [False, True])
def test_loopy_walk_summable_converges_with_exact_means(family, attractive):
    G = {
        "er": nx.erdos_renyi_graph(40, 0.15, seed=3),
        "grid": nx.convert_node_labels_to_integers(nx.grid_2d_graph(6, 6)),
        "ba": nx.barabasi_albert_graph(40, 3, seed=4),
    }[family]
    J = precision_on(G, 5, attractive=attractive)
    p = J.shape[0]
    h = np.random.default_rng(6).standard_normal(p)
    r = gaussian_bp(J, h, tol=1e-13, max_iter=20000)
    S = np.linalg.inv(J)
    assert r.converged
    np.testing.assert_allclose(r.mean, S @ h, rtol=1e-7, atol=1e-9)  # exact at a fixed point (Weiss & Freeman)
    # variances are the Bethe approximation's: positive, and BP sums only the backtracking walks
    # (Malioutov et al. 2006), so with every walk weight positive (attractive) it underestimates
    assert (r.var > 0).all()
    if attractive:
        assert (r.var <= np.diag(S) * (1 + 1e-9)).all() and (r.var < np.diag(S) * (1 - 1e-6)).any()


def test_bethe_log_det_gradient_is_the_pseudo_covariance():
    """d logdet_B / dJ = C (envelope at the BP fixed point), checked by central differences on a loopy graph."""
    G = nx.erdos_renyi_graph(12, 0.35, seed=7)
    J = precision_on(G, 8)
    E = Edges.of(J)
    _, r = bethe_log_det(J, tol=1e-14, max_iter=50000)
    eps = 1e-6
    for e in range(0, E.i.size, 3):
        D = np.zeros_like(J)
        D[E.i[e], E.j[e]] = D[E.j[e], E.i[e]] = eps
        fd = (
            bethe_log_det(J + D, tol=1e-14, max_iter=50000)[0] - bethe_log_det(J - D, tol=1e-14, max_iter=50000)[0]
        ) / (2 * eps)
        assert fd == pytest.approx(2 * r.edge_cov[e], rel=1e-5, abs=1e-8)
    for i in range(0, 12, 4):
        D = np.zeros_like(J)
        D[i, i] = eps
        fd = (
            bethe_log_det(J + D, tol=1e-14, max_iter=50000)[0] - bethe_log_det(J - D, tol=1e-14, max_iter=50000)[0]
        ) / (2 * eps)
        assert fd == pytest.approx(r.var[i], rel=1e-5)


def test_bethe_entropy_is_log_det_on_a_tree():
    G = nx.random_labeled_tree(10, seed=1)
    J = precision_on(G, 2)
    S = np.linalg.inv(J)
    E = Edges.of(J)
    assert bethe_entropy(np.diag(S), S[E.i, E.j], E) == pytest.approx(np.linalg.slogdet(S)[1], rel=1e-10)


def test_bad_precision():
    with pytest.raises(InputError) as e:
        gaussian_bp(np.array([[1.0, 0.2], [0.3, 1.0]]))
    assert e.value.field == "precision" and e.value.code == "not_symmetric"
    with pytest.raises(InputError) as e:
        gaussian_bp(np.array([[1.0, np.nan], [np.nan, 1.0]]))
    assert e.value.code == "nan"
    with pytest.raises(InputError) as e:
        gaussian_bp(np.array([[1.0]]))
    assert e.value.code == "bad_shape"
    with pytest.raises(InputError) as e:
        gaussian_bp(np.eye(3), h=np.ones(2))
    assert e.value.field == "h"
