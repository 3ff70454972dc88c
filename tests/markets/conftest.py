import numpy as np
import pytest


def random_beliefs(rng, n, a, k, conc=0.7):
    return np.log(rng.dirichlet(np.full(k, conc), size=(n, a)))


def algorithm_2_1_step(lp, y, W, gamma):
    """One step of the variational Algorithm 2.1 (seed 000) with the note's corrected mixture
    ``w' ∝ w/gamma``, starting at ``w' = W``: aggregate Q by iterating Eq. (2.8) to convergence,
    ``Q_i ∝ P_i^gamma Q^(1-gamma)``, responsibilities ``q_in = w'_i Q_i(y_n) / sum_j w'_j Q_j(y_n)``,
    new ``w'_i = mean_n q_in``."""
    n = lp.shape[0]
    new = np.zeros(len(W))
    for j in range(n):
        q = np.exp(lp[j]).mean(axis=0)
        for _ in range(20_000):
            Qi = np.exp(gamma[:, None] * lp[j]) * q[None, :] ** (1 - gamma[:, None])
            Qi /= Qi.sum(axis=1, keepdims=True)
            q_new = W @ Qi
            done = np.max(np.abs(q_new - q) / q_new) < 1e-14
            q = q_new
            if done:
                break
        resp = W * Qi[:, y[j]]
        new += resp / resp.sum()
    return new / n


@pytest.fixture
def rng():
    return np.random.default_rng(20261121)
