"""The Cholesky inverse of a stack of symmetric positive-definite matrices against ``np.linalg.inv``."""

import numpy as np
import pytest

from solvers.kernels.spd_inverse import spd_inverse


def _spd_stack(m: int, K: int, seed: int, cond: float = 1e3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((m, K, K)))[0]
    lam = np.exp(rng.uniform(0, np.log(cond), size=(m, K)))
    return (Q * lam[:, None, :]) @ Q.transpose(0, 2, 1)


@pytest.mark.parametrize("K", [1, 2, 7, 64, 130])
def test_equals_the_lu_inverse_and_is_symmetric(K):
    H = _spd_stack(5, K, seed=K)
    ref = np.linalg.inv(H)
    out = spd_inverse(H.copy())
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-11 * np.abs(ref).max())
    np.testing.assert_array_equal(out, out.transpose(0, 2, 1))
    np.testing.assert_allclose(out @ H, np.broadcast_to(np.eye(K), H.shape), atol=1e-10)


def test_single_precision():
    H = _spd_stack(4, 64, seed=1, cond=10.0).astype(np.float32)
    out = spd_inverse(H.copy())
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, np.linalg.inv(H.astype(np.float64)), atol=1e-5)


def test_a_matrix_that_is_not_positive_definite_is_inverted_by_lu_from_its_input():
    """LAPACK's factorisation overwrites a triangle and the diagonal before it fails: it works on a
    scratch copy, and the input, untouched, is inverted by ``np.linalg.inv``."""
    H = _spd_stack(4, 16, seed=2)
    H[1] = np.diag(np.r_[-1.0, np.ones(15)])  # definite no more
    H[2][0, 1] = H[2][1, 0] = 50.0 * np.abs(H[2]).max()  # indefinite, invertible
    out = spd_inverse(H.copy())
    np.testing.assert_allclose(out, np.linalg.inv(H), atol=1e-10 * np.abs(np.linalg.inv(H)).max())


def test_a_singular_input_raises_as_lu_does():
    H = _spd_stack(2, 5, seed=3)
    H[0] = 0.0
    with pytest.raises(np.linalg.LinAlgError):
        spd_inverse(H)


def test_bad_stacks_are_refused():
    with pytest.raises(ValueError):
        spd_inverse(np.eye(3))
    with pytest.raises(ValueError):
        spd_inverse(np.ones((2, 3, 3), dtype=np.int64))
