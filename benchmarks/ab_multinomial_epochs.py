"""A/B check of the multinomial finite-sum epochs (SAGA, SVRG, SGD on softmax regression, sparse and
dense): CPU seconds of 5 epochs (best of 3) and the objective reached, printed on one line.

Run it on two trees to compare them (issue 12's "nothing changes a result or a speed"), e.g.
``NUMBA_NUM_THREADS=1 NUMBA_CACHE_DIR=/tmp/nc_x PYTHONPATH=<tree> python benchmarks/ab_multinomial_epochs.py``.
"""

import time

import numpy as np
import scipy.sparse as sp

import solvers
from solvers.problems.softmax_regression import MultinomialLogistic

rng = np.random.default_rng(0)
n, d, K = 20000, 2000, 20
X = sp.random(n, d, density=0.01, format="csr", random_state=0)
y = rng.integers(0, K, n)
Xd = rng.normal(size=(5000, 50))
yd = rng.integers(0, K, 5000)
out = []
for name, XX, yy in [("sparse", X, y), ("dense", Xd, yd)]:
    for method in ("saga", "svrg", "sgd"):
        p = MultinomialLogistic(XX, yy, l2=1e-3)
        solvers.minimize(p, method, max_iter=1, tol=0.0)  # compile
        ts = []
        for _ in range(3):
            t = time.process_time()
            r = solvers.minimize(p, method, max_iter=5, tol=0.0)
            ts.append(time.process_time() - t)
        out.append(f"{name}-{method} {min(ts):.3f}s f={r.fun:.12g}")
print(" | ".join(out))
