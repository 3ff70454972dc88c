"""ns per call of the dense Newton direction (``markets.kernels.direction.direction_from_S``: scaling,
projected Cholesky, two triangular solves) and of the chord step (``chord_direction``: the gradient and
the two solves with the last factor) at 100 agents and 4, 10, 15 goods, eta = 10, in a compiled loop.
``copy`` is the loop's own cost (the matrix copied back before each factorisation); it is included in
``direction_from_S``'s figure.

Session 49 (A/B of the vectorised exps): run it against each tree, process by process, and take the
minimum of several runs (``PYTHONPATH=<tree> NUMBA_CACHE_DIR=<cache per tree>``).

    python benchmarks/probe_market_direction.py
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from markets.kernels.direction import chord_direction, direction_from_S
from markets.kernels.isoelastic import iso_S


@njit(cache=False)
def _loop(n, u, T, Wsum, reg, d, H0, H, Lc, tmp, c, mode):
    acc = 0.0
    for _ in range(n):
        if mode == 0:
            H[:] = H0
            direction_from_S(u, T, Wsum, reg, d, H, Lc, tmp, c)
        elif mode == 1:
            chord_direction(u, T, Wsum, d, Lc, c)
        else:
            H[:] = H0
        acc += d[0]
    return acc


def main():
    rng = np.random.default_rng(0)
    A, g, n = 100, 0.1, 200_000
    for K in (4, 10, 15):
        P = rng.dirichlet(np.ones(K), size=A)
        u = np.log(rng.dirichlet(np.ones(K)))
        cp = np.exp(u) ** (1 - g)
        Pg = P**g
        z = Pg @ cp
        s = 1 / A / z
        T = cp * (Pg.T @ s)
        G = (Pg.T * (s / z)) @ Pg
        H0 = np.empty((K, K))
        iso_S(g, T, cp, G, H0)
        H, Lc, tmp, c, d = H0.copy(), np.zeros((K, K)), np.zeros(K), np.zeros(2 * K), np.zeros(K)
        row = []
        for mode, name in ((2, "copy"), (0, "direction_from_S"), (1, "chord")):
            _loop(10, u, T, 1.0, 1.0, d, H0, H, Lc, tmp, c, mode)
            t = time.perf_counter()
            _loop(n, u, T, 1.0, 1.0, d, H0, H, Lc, tmp, c, mode)
            row.append(f"{name} {(time.perf_counter() - t) / n * 1e9:.0f} ns")
        print(f"K = {K}: " + ", ".join(row))


if __name__ == "__main__":
    main()
