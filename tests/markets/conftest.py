import numpy as np
import pytest


def random_beliefs(rng, n, a, k, conc=0.7):
    return np.log(rng.dirichlet(np.full(k, conc), size=(n, a)))


@pytest.fixture
def rng():
    return np.random.default_rng(20261121)
