"""SHORTCUT (seed 001 Alg 8.1/8.2) against its definition by brute force, and against CCT η = 1."""

import networkx as nx
import numpy as np
import pytest

from graphical.shortcut import max_product, shortcut
from graphical.thresholding import cct_weights, correlation, threshold
from solvers.errors import InputError


def brute_shortcut(C):
    """sqrt(C_ii C_jj) max{0, min(|C̄_ij|, min_k |C̄_ij| - sgn(C̄_ij) C̄_ik C̄_kj)}: the l.2912-2920 definition."""
    R = correlation(C)
    s = np.sqrt(np.diag(C))
    p = C.shape[0]
    W = np.zeros((p, p))
    for i in range(p):
        for j in range(p):
            if i != j:
                sg = 1.0 if R[i, j] >= 0 else -1.0
                inner = min(
                    [abs(R[i, j])] + [abs(R[i, j]) - sg * R[i, k] * R[k, j] for k in range(p) if k not in (i, j)]
                )
                W[i, j] = max(0.0, inner) * s[i] * s[j]
    return W


def covariances():
    rng = np.random.default_rng(0)
    for p in (2, 3, 7, 25):
        X = rng.standard_normal((p + 4, p)) @ rng.standard_normal((p, p))
        yield np.cov(X.T)  # mixed signs, arbitrary scales
    for G in (nx.barabasi_albert_graph(30, 2, seed=1), nx.erdos_renyi_graph(30, 0.1, seed=2)):
        L = nx.laplacian_matrix(G).toarray().astype(float)
        C = np.linalg.inv(L + 0.3 * np.eye(30))
        yield C  # all-positive covariances: the negative lists are empty
        D = np.diag(rng.choice([-1.0, 1.0], 30))
        yield D @ C @ D  # signs flipped by a diagonal change of sign


@pytest.mark.parametrize("C", list(covariances()))
def test_shortcut_equals_its_brute_force_definition(C):
    r = shortcut(C)
    ref = brute_shortcut(C)
    np.testing.assert_allclose(r.weights, ref, rtol=1e-12, atol=1e-14)
    # the same graph at thresholds between distinct weights
    vals = np.unique(np.round(ref[np.triu_indices_from(ref, 1)], 9))
    for t in (vals[:-1] + vals[1:])[:: max(1, len(vals) // 7)] / 2:
        assert (shortcut(C, t).graph == threshold(ref, t)).all()


@pytest.mark.parametrize("C", list(covariances()))
def test_shortcut_is_cct_where_no_path_product_overshoots(C):
    """W_SHORTCUT <= W_CCT(η=1) everywhere, with equality wherever max_k sgn·C̄_ik C̄_kj <= |C̄_ij|."""
    W = shortcut(C).weights
    Wc = cct_weights(C, 1)
    assert (W <= Wc + 1e-12).all()
    R = correlation(C)
    p = C.shape[0]
    for i in range(p):
        for j in range(i):
            sg = 1.0 if R[i, j] >= 0 else -1.0
            m = max([0.0] + [sg * R[i, k] * R[k, j] for k in range(p) if k not in (i, j)])
            if m <= abs(R[i, j]):
                assert W[i, j] == pytest.approx(Wc[i, j], rel=1e-10, abs=1e-13)
            else:
                assert W[i, j] == 0.0


def test_shortcut_sign_fix_in_the_negative_branch():
    """x0 and x1 anti-correlated only through x2: the transitive product must be SUBTRACTED (l.2947's "+" is a typo)."""
    Theta = np.array([[1.0, 0.0, 0.6], [0.0, 1.0, -0.6], [0.6, -0.6, 1.0]])
    C = np.linalg.inv(Theta)
    assert C[0, 1] < 0
    W = shortcut(C).weights
    assert W[0, 1] == pytest.approx(0.0, abs=1e-12)  # conditionally independent given x2
    assert W[0, 1] < abs(C[0, 1])


def test_max_product_equals_the_maximum_and_is_sublinear():
    rng = np.random.default_rng(4)
    for n in (1, 2, 10, 300):
        for _ in range(50):
            a, b = rng.standard_normal(n), rng.standard_normal(n)
            best, seen = max_product(a, b)
            both = (a > 0) & (b > 0)
            assert best == (np.max(a[both] * b[both]) if both.any() else 0.0)
            assert seen <= 2 * n
    seen = np.mean([max_product(rng.random(10_000), rng.random(10_000))[1] for _ in range(30)])
    assert seen < 5 * np.sqrt(10_000)  # independent orders: O(sqrt(n)) entries, far below 10,000


def test_shortcut_bad_input():
    with pytest.raises(InputError) as e:
        shortcut(np.array([[1.0, 0.2], [0.3, 1.0]]), field="C")
    assert e.value.field == "C"
    with pytest.raises(InputError) as e:
        shortcut(np.array([[2.0]]))
    assert e.value.code == "bad_shape"
    with pytest.raises(InputError) as e:
        shortcut(np.array([[1.0, 0.0], [0.0, 0.0]]))
    assert e.value.code == "zero_variance"
