"""A NumPy model of the dense one-order Newton loop (``markets.kernels.equilibrium._iso_newton_pg``), to
choose what the step after an accepted one reuses (session 49).

The model follows the kernel's fast phase: the power-mean start, full steps accepted when they halve the
clearing residual ``max_k |T_k - Wsum c_k| / c_k``, the Hessian ``S = -g diag(T) - (1-g) diag(c^(1-g)) G
diag(c^(1-g))`` with the Gram matrix ``G = sum_i (W_i / z_i^2) P_i^g (P_i^g)^T``, the same scaled system and
normalisation. It has no line search (the kernel's second phase), so eta < 1 markets where a full step
fails are counted as failures ("!n"), not solved. Policies for the step after an accepted one:

- ``plain``: the old chord (the last factor) when the last step cut the residual below 1/100 of the
  previous (``CHORD_RATIO``), else a fresh Gram matrix;
- ``refresh@r``: the last Gram matrix with ``diag(T)``, ``c^(1-g)`` and the price scaling rebuilt at the new
  point and refactored, when the last ratio is below ``r``.

Prints the median residual after each step (plain against refresh@0.5 at 100 agents x 10 goods, eta =
10) and, per family, shape and eta, the Gram matrices and passes per item to ``tol = 1e-10``. A Gram
matrix costs ``A K^2 / 2`` multiply-adds against a pass's ``2 A K``: about ``K / 4`` passes.

    python benchmarks/chord_model.py [--items 150]
"""

from __future__ import annotations

import argparse

import numpy as np
from bench_markets import synthetic_beliefs
from bench_markets_grid import family
from scipy.special import logsumexp


def _pass(Pg, u, W, g, Wsum):
    c = np.exp(u)
    cp = c ** (1 - g)
    z = Pg @ cp
    s = W / z
    T = cp * (Pg.T @ s)
    return c, cp, z, s, T, np.max(np.abs(T - Wsum * c) / c)


def _scaled(H, c, reg):
    """The kernel's ``direction_from_S``: the SPD system in the price-scaled coordinates."""
    tmp = H.sum(1)
    sig = tmp.sum()
    M = -H + np.outer(c, tmp) + np.outer(tmp, c) + (reg - sig) * np.outer(c, c)
    r = 1 / np.sqrt(c)
    return M * np.outer(r, r), r


def solve_item(L, W, eta, policy, gate, tol=1e-10, max_iter=30):
    """(Gram matrices, passes, residual after each step, failed) for one item's log-beliefs ``L`` (A, K)."""
    g = 1 / eta
    Wsum = W.sum()
    Pg = np.exp(g * L)
    u = np.log(W @ Pg) / g
    u -= logsumexp(u)
    c, cp, z, s, T, res = _pass(Pg, u, W, g, Wsum)
    grams, passes, ratio, it, G, M, rr = 0, 1, 1.0, 0, None, None, None
    trace = [res]
    while res > tol and it < max_iter:
        it += 1
        chord = ratio < gate and G is not None
        if not (chord and policy == "plain"):
            if not chord:
                G = (Pg.T * (s / z)) @ Pg
                grams += 1
            H = -g * np.diag(T) - (1 - g) * np.outer(cp, cp) * G
            M, rr = _scaled(H, c, Wsum)
        d = np.linalg.solve(M, (T - Wsum * c) * rr) * rr
        un = u + d
        un -= logsumexp(un)
        c2, cp2, z2, s2, T2, rn = _pass(Pg, un, W, g, Wsum)
        passes += 1
        if rn <= 0.5 * res:
            u, (c, cp, z, s, T) = un, (c2, cp2, z2, s2, T2)
            ratio, res = rn / res, rn
            trace.append(res)
        elif chord:
            ratio = 1.0
            passes += 1  # the kernel re-evaluates at u before the fresh step
        else:
            return grams, passes, trace, True
    return grams, passes, trace, False


POLICIES = (("plain", 1e-2), ("refresh", 1e-2), ("refresh", 0.1), ("refresh", 0.5))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=150)
    args = ap.parse_args(argv)
    lp, W = synthetic_beliefs(300, 100, 10)
    print("median clearing residual after each step, 300 items x 100 agents x 10 goods, eta = 10 (bench_markets.py)")
    for pol, gate in (("plain", 1e-2), ("refresh", 0.5)):
        tr = [solve_item(lp[j], W, 10.0, pol, gate, tol=0.0, max_iter=4)[2] for j in range(300)]
        tr = np.array([t + [t[-1]] * (5 - len(t)) for t in tr])
        print(f"  {pol}@{gate:g}: " + ", ".join(f"{v:.2e}" for v in np.median(tr, axis=0)))
    print("\nGram matrices + passes per item to 1e-10 (!n: items where a full step failed; the kernel's line search)")
    print("| family | A | K | eta | " + " | ".join(f"{p}@{g:g}" for p, g in POLICIES) + " |")
    print("|---|---|---|---|" + "---|" * len(POLICIES))
    for fam in ("dirichlet", "logit", "dups"):
        for a, k in ((100, 10), (10, 10), (1000, 16), (10, 64), (100, 64), (2, 16)):
            L = family(fam, args.items, a, k)
            Wf = np.random.default_rng(1).uniform(0.2, 1, a)
            Wf /= Wf.sum()
            for eta in (1.5, 3.0, 10.0, 30.0, 0.5):
                cells = []
                for pol, gate in POLICIES:
                    out = [solve_item(L[j], Wf, eta, pol, gate) for j in range(args.items)]
                    gm = np.mean([o[0] for o in out])
                    ps = np.mean([o[1] for o in out])
                    nf = sum(o[3] for o in out)
                    cells.append(f"{gm:.2f} + {ps:.2f}" + (f" !{nf}" if nf else ""))
                print(f"| {fam} | {a} | {k} | {eta:g} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
