"""Probe (not a timing): how many CG products per Newton direction a preconditioner built from each order's mean
agent would save on the general path of mixed markets (issue #13 §1; session 40, not built).

For one item of :func:`benchmarks.bench_markets_grid.family` (K = 256, the grid's mixed utilities) at the start
and after two Newton steps, the matrix of the Newton direction (``markets.kernels.woodbury``'s docstring:
``M = D + sum_j w_j q_j q_j^T + beta c c^T - c h^T - h c^T``) is formed densely and the system ``M d = T - Wsum c``
solved by preconditioned CG in NumPy with two preconditioners: ``D`` (what ``markets.kernels.newton_cg.cg_solve``
uses) and ``D + sum_g w_g qbar_g qbar_g^T`` plus the same ``c, h`` terms, where ``qbar_g`` is the ``w``-weighted
mean effective belief of the agents of order ``g`` (``P <= M``: the agents' spread about their order's mean is
left out). Printed: products to a max-norm relative residual of 1e-1, 1e-3 and 1e-6 (``cg_solve`` stops on the
clearing residual's norm instead, ``max_k |b - M d|_k / c_k``: the counts here compare the two preconditioners, they
are not the kernel's).

    PYTHONPATH=. .venv/bin/python benchmarks/probe_market_cg_preconditioner.py
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aggregators.validation import as_log_probs  # noqa: E402
from benchmarks.bench_market_step_floor import item_after_steps  # noqa: E402
from benchmarks.bench_markets_grid import family, utilities  # noqa: E402


def system(fam, K, A, its):
    """``M``, the order-means preconditioner ``P``, ``diag(D)``, the right-hand side and the clearing
    residual of item 0 after ``its`` Newton-CG steps from the start."""
    lp = as_log_probs(family(fam, 2, A, K))
    ag, x, Q, T, dg, h, res = item_after_steps(
        lp, utilities("mix", A), np.random.default_rng(1).uniform(0.2, 1.0, A), its
    )
    g, W = ag.inv_eta, ag.wealth
    Wsum = float(W.sum())
    c = np.exp(x)
    beta = abs(Wsum) + h.sum()
    wq = W * (1 - g)
    proj = beta * np.outer(c, c) - np.outer(c, h) - np.outer(h, c)
    M = np.diag(dg) + (Q.T * wq) @ Q + proj
    P = np.diag(dg) + proj
    for gg in np.unique(g):
        sel = (g == gg) & (wq != 0)
        if sel.any():
            wg = wq[sel].sum()
            qbar = (wq[sel][:, None] * Q[sel]).sum(0) / wg
            P += wg * np.outer(qbar, qbar)
    return M, P, np.diag(dg), T - Wsum * c, res


def pcg_products(M, Pinv, b, rtols):
    """Products of preconditioned CG from 0 until ``max |b - M d| <= rtol max |b|``, for each ``rtol``."""
    d = np.zeros_like(b)
    r = b.copy()
    z = Pinv @ r
    p = z.copy()
    rz = r @ z
    out = {}
    n = 0
    nb = np.abs(b).max()
    while n < 200 and len(out) < len(rtols):
        n += 1
        q = M @ p
        a = rz / (p @ q)
        d += a * p
        r -= a * q
        rel = np.abs(r).max() / nb
        for t in rtols:
            if t not in out and rel <= t:
                out[t] = n
        z = Pinv @ r
        rzn = r @ z
        p = z + rzn / rz * p
        rz = rzn
    return [out.get(t, ">200") for t in rtols]


def main() -> None:
    rtols = [1e-1, 1e-3, 1e-6]
    print(
        f"| family | A | Newton steps before | residual | min eig M | products with D to {rtols} | with order means |"
    )
    print("|---" * 7 + "|")
    for fam in ("dups", "logit", "dirichlet"):
        for A in (10, 100):
            for its in (0, 2):
                M, P, D, b, res = system(fam, 256, A, its)
                ev = np.linalg.eigvalsh((M + M.T) / 2).min()
                jac = pcg_products(M, np.linalg.inv(D), b, rtols)
                om = pcg_products(M, np.linalg.inv(P), b, rtols)
                print(f"| {fam} | {A} | {its} | {res:.1e} | {ev:.1e} | {jac} | {om} |")


if __name__ == "__main__":
    main()
