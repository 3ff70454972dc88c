"""The scale-free Gaussian models of seed 001 §7.5.1 (graphical.generators)."""

import numpy as np

from graphical.generators import precision_from_graph, sample_correlation, scale_free_graph


def test_ba_graph_and_its_precision():
    A = scale_free_graph("ba", 100, np.random.default_rng(0))
    assert A.sum() // 2 == 2 * 98  # m = 2: the runtime row's "100 vertices, 200 edges"
    Theta = precision_from_graph(A)
    off = Theta - np.diag(np.diag(Theta))
    assert set(np.unique(off)) == {-0.2, 0.0}
    np.testing.assert_allclose(np.diag(Theta), 0.5 + 0.2 * A.sum(axis=1))
    # diagonally dominant by 0.5 in every row, hence positive definite
    assert np.all(np.diag(Theta) - np.abs(off).sum(axis=1) >= 0.5 - 1e-12)


def test_powerlaw_graph_is_simple_with_a_heavy_tail():
    rng = np.random.default_rng(1)
    degs = []
    for _ in range(5):
        A = scale_free_graph("powerlaw", 60, rng)
        assert not np.diag(A).any() and np.array_equal(A, A.T)
        degs.append(A.sum(axis=1))
    d = np.concatenate(degs)
    # p(d) ~ d^-2: about half the nodes have degree 1 and a few have degree >= 10
    assert 0.3 < np.mean(d == 1) < 0.75 and np.mean(d >= 10) > 0.01


def test_sample_correlation_converges_to_the_model():
    rng = np.random.default_rng(2)
    Theta = precision_from_graph(scale_free_graph("ba", 20, rng))
    C = sample_correlation(Theta, 200_000, rng)
    S = np.linalg.inv(Theta)
    d = np.sqrt(np.diag(S))
    np.testing.assert_allclose(np.diag(C), 1.0)
    assert np.abs(C - S / np.outer(d, d)).max() < 0.01
