"""Market equilibrium at many goods (issue [core-at-scale] section 1): ``method="auto"`` against the
seed's fixed point over a grid of goods K x agents A, several utility mixes and data families.

For each (family, K, A, utilities): seconds of ``equilibrium(..., method=m, tol=1e-10,
check=False)`` (the default probability floor 1e-9, what a user gets: both sides apply it inside the
timed call) for ``auto`` (what a user gets), the dense Newton direction (only for
K <= --dense-max: it factors a K x K matrix), Newton-CG, the Anderson-accelerated fixed point,
and the seed's fixed point (Storkey et al.
2012, ``c <- sum_i r_i(c)``; isoelastic/log agents only; for markets with exponential agents the
baseline row is marked n/a), all in the same process on the same validated beliefs, one after the
other; the ratio auto / fixed point; *floor / FP*: the same call with ``max_iter=0`` (validation,
the probability floor, ``P^(1/eta)`` transposed to the goods-major layout, the start and one pass:
what every method in the space of prices pays, so none of their ratios can go below it; ``gram``, for
eta = 2 only, works in the agents' space and skips the transposition); the largest log-price difference between auto and the fixed point (each
is within about ``tol * eta`` of the equilibrium). Items per shape: about
``--budget / (A K)`` (at least 1, at most --max-items), so every timing does comparable work.

Families: ``dirichlet`` (agents scatter around a latent truth: ``P_i ~ Dirichlet(s_i p*)``,
``s_i`` in [2, 50], as in bench_markets.py), ``logit`` (Gaussian logits of varied sharpness:
``softmax(b_i * N(0, 1))``, ``b_i`` in [0.3, 3]) and ``dups`` (near-duplicates: five base agents,
each copied with logit noise of 1e-3), and one family of real predictions, ``pixels``: the demo competition's
22 agents (:mod:`evaluation.demo_task`: linear predictors, LOCO-I's median edge detector, context histograms,
nearest neighbours on scikit-image's bundled photographs), the first A of them, predicting a pixel's grey level
quantised to K levels (K <= 256, A <= 22; the grid skips the cells it cannot fill; session 56). Above 256
classes, ``pixel-pairs`` (session 57): the same agents predicting two test pixels at once over
``K = L**2`` classes (L grey levels each: 1,024 = 32 x 32, 4,096 = 64 x 64). The pixels of a pair are drawn
independently (from any photograph, anywhere), so an agent's joint belief is the product of its two
marginals: real predictions, not a generator's, whose structure (a product of two peaked, heavy-floored
marginals) none of the synthetic families has. No bundled data set has more than 256 classes of its own.

With ``--bound`` (one-order markets): *bound / FP*, the call that validates, floors, exponentiates every
belief and makes ONE clearing-residual pass (:func:`lower_bound`): what any method must at least do, so
no method's ratio can go below it.

Methods (``--methods``): ``newton`` (dense), ``newton_cg``, ``anderson``, ``gram`` (eta = 2 only:
the scaling of the agents' Gram matrix, :mod:`markets.kernels.gram`), each timed where it applies.

Utilities: isoelastic with one eta (2, 10, 30), ``log`` (all logarithmic: auto takes the closed
form), ``mix`` (isoelastic eta 2/10/30 with log agents: the general path), ``exp`` (half
exponential, half eta = 10: no fixed-point baseline), ``spread`` and ``spread-low`` (every agent its
own eta, log-uniform in [1.2, 40] and [1.01, 3]: :data:`SPREADS`). Each figure is the median of ``--reps``
rounds in which every method runs once, in turn (:func:`benchmarks.harness.interleaved`); the
seconds are **CPU seconds** of the process (all threads): on the shared 2-core machine a call of a
few milliseconds is often descheduled for longer than it runs, its CPU time is not (``wall auto /
FP`` gives the wall-clock ratio of the same rounds). A summary per utility mix and K band ends the
output.

    PYTHONPATH=$PWD NUMBA_CACHE_DIR=$PWD/.numba_cache OMP_NUM_THREADS=1 \\
        /work/main/.venv/bin/python benchmarks/bench_markets_grid.py
"""

from __future__ import annotations

import argparse
import functools
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from numba import njit  # noqa: E402

from aggregators.validation import as_log_probs  # noqa: E402
from benchmarks.harness import interleaved  # noqa: E402
from markets import equilibrium, workspace  # noqa: E402
from markets.agents import market_of, prepare_beliefs  # noqa: E402
from markets.kernels.floor import floor_item  # noqa: E402
from markets.kernels.gram import rows_pass  # noqa: E402
from solvers.kernels.fastexp import exp_scaled  # noqa: E402


@njit(cache=True)
def _exp_and_one_pass(L, g, W, floor, mem):
    """Per item: the floor (in cache), ``P^g`` by the vectorised exp and ONE clearing-residual pass at
    uniform prices (``rows_pass``, row-major: no transposition): the least an equilibrium of a one-order
    market can compute (every method must exponentiate every belief and check its answer once).
    ``mem`` (2 A K floats) holds the powers and the floored item, the same memory from call to call
    (as the library's drivers take theirs from :mod:`markets.workspace`: fresh pages would cost
    more than the pass at 1,000 x 4,096)."""
    n, A, K = L.shape
    Wsum = W.sum()
    flat = mem[: A * K]
    Lf = mem[A * K : 2 * A * K].reshape((A, K))
    e = np.empty(K)
    u = np.full(K, -np.log(K))
    z, s = np.empty(A), np.empty(A)
    T, cp, c = np.empty(K), np.empty(K), np.empty(K)
    tot = 0.0
    for j in range(n):
        Lj = L[j]
        if floor > 0.0:
            floor_item(Lj, Lf, floor, e)
            Lj = Lf
        exp_scaled(np.ascontiguousarray(Lj).reshape(A * K), g, flat)
        tot += rows_pass(flat, A, K, g, W, Wsum, u, z, s, T, cp, c)
    return tot


def lower_bound(lp, u, w, floor):
    """The *bound* call of a one-order isoelastic market: validation (``prepare_beliefs``, the floor
    deferred as the drivers defer it), then :func:`_exp_and_one_pass`."""
    beliefs, agents = market_of(lp, u, w, "log_probs")
    preds = prepare_beliefs(beliefs, agents, kind="log_probs", floor=floor, defer_floor=floor is not None)
    A, K = preds.log_probs.shape[1:]
    mem = workspace.arena(2 * A * K)
    return _exp_and_one_pass(
        preds.log_probs, float(agents.inv_eta[0]), agents.wealth, 0.0 if floor is None else floor, mem
    )


def _normalise(x):
    x = x - x.max(axis=2, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=2, keepdims=True))


PIXEL_AGENTS = 22
"""Agents of the ``pixels`` family (the demo competition's field)."""
PIXEL_MAX_LEVELS = 256


@functools.lru_cache(maxsize=4)
def _pixel_field(n, k, seed):
    from evaluation.demo_task import make_demo_data

    _, _, field = make_demo_data(n_train=30000, n_test=n, secret=1 + seed, levels=k)
    return np.stack([a[2] for a in field], axis=1)  # (n, 22, k), unnormalised


@functools.lru_cache(maxsize=2)
def _pixel_pairs(n, levels, seed):
    """(n, 22, levels**2) normalised log-beliefs of the ``pixel-pairs`` family (module docstring): item j
    is the pair of test pixels 2j and 2j + 1 (each drawn independently from the photographs,
    :func:`evaluation.demo_task.sample_pixels`), each agent's joint belief the product of its two
    marginals, class ``y1 * levels + y2``."""
    lp = _normalise(_pixel_field(2 * n, levels, seed))
    first, second = lp[0::2], lp[1::2]
    return (first[:, :, :, None] + second[:, :, None, :]).reshape(n, lp.shape[1], levels * levels)


def pair_levels(k):
    """The grey levels L of a ``pixel-pairs`` shape of ``k = L**2`` classes (0 if ``k`` is no such square)."""
    r = int(round(k**0.5))
    return r if r * r == k and 2 <= r <= PIXEL_MAX_LEVELS else 0


def fills(name, a, k):
    """Whether family ``name`` has beliefs of ``a`` agents over ``k`` classes (``pixels``: a <= 22, k <= 256;
    ``pixel-pairs``: a <= 22, k = L**2 for L in 2..256)."""
    if name == "pixels":
        return a <= PIXEL_AGENTS and 2 <= k <= PIXEL_MAX_LEVELS
    if name == "pixel-pairs":
        return a <= PIXEL_AGENTS and pair_levels(k) > 0
    return True


def family(name, n, a, k, seed=0):
    """Log-beliefs (n, a, k) of one data family (module docstring)."""
    if name == "pixels":
        if not fills(name, a, k):
            raise ValueError(f"the pixels family has at most {PIXEL_AGENTS} agents and {PIXEL_MAX_LEVELS} classes")
        return _normalise(np.ascontiguousarray(_pixel_field(n, k, seed)[:, :a]))
    if name == "pixel-pairs":
        if not fills(name, a, k):
            raise ValueError(f"the pixel-pairs family has at most {PIXEL_AGENTS} agents and L**2 classes, L in 2..256")
        return np.ascontiguousarray(_pixel_pairs(n, pair_levels(k), seed)[:, :a])
    rng = np.random.default_rng(seed)
    if name == "dirichlet":
        truth = rng.dirichlet(np.ones(k), size=n)
        s = np.exp(rng.uniform(np.log(2), np.log(50), a))
        g = np.maximum(rng.standard_gamma(s[None, :, None] * truth[:, None, :] + 1e-3), 1e-300)
        return np.log(g / g.sum(axis=2, keepdims=True))
    if name == "logit":
        b = rng.uniform(0.3, 3.0, a)
        return _normalise(b[None, :, None] * rng.standard_normal((n, a, k)))
    if name == "dups":
        base = rng.standard_normal((n, 5, k)) * rng.uniform(0.5, 2.0, 5)[None, :, None]
        return _normalise(base[:, np.arange(a) % 5, :] + 1e-3 * rng.standard_normal((n, a, k)))
    raise ValueError(name)


SPREADS = {"spread": (1.2, 40.0), "spread-low": (1.01, 3.0)}
"""Utilities ``spread`` and ``spread-low``: every agent its own eta, log-uniform in these ranges (as a
market whose eta is learnt per agent; session 48)."""


def utilities(spec, a):
    if spec == "mix":
        return [[2.0, 10.0, 30.0, "log"][i % 4] for i in range(a)]
    if spec == "exp":
        return ["exp" if i % 2 else 10.0 for i in range(a)]
    if spec in SPREADS:  # an eta per agent, log-uniform (seeded by the number of agents)
        lo, hi = SPREADS[spec]
        return list(np.exp(np.random.default_rng(a).uniform(np.log(lo), np.log(hi), a)))
    return spec if spec == "log" else float(spec)


def summary(rows):
    """Per utility mix and K band (K < 256, K >= 256): shapes, the largest auto / FP and where, how
    many are at most 0.2 and above 1, the medians of auto / FP and floor / FP (CPU times)."""
    print(
        "\n| utilities | K band | shapes | max auto/FP (where) | auto/FP <= 0.2 | auto/FP > 1 | median auto/FP "
        "| median floor/FP |"
    )
    print("|---" * 8 + "|")
    for spec in dict.fromkeys(r["spec"] for r in rows):
        for band, keep in (("K<256", lambda k: k < 256), ("K>=256", lambda k: k >= 256)):
            sel = [r for r in rows if r["spec"] == spec and keep(r["K"]) and r["ratio"] is not None]
            if not sel:
                continue
            ratios = np.array([r["ratio"] for r in sel])
            worst = sel[int(np.argmax(ratios))]
            print(
                f"| {spec} | {band} | {len(sel)} | {ratios.max():.2f} ({worst['fam']}, K={worst['K']}, A={worst['A']}, "
                f"{worst['method']}) | {(ratios <= 0.2).sum()} | {(ratios > 1).sum()} | {np.median(ratios):.2f} "
                f"| {np.median([r['floor'] for r in sel]):.2f} |"
            )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ks", default="2,16,64,256,1024,4096")
    ap.add_argument("--as", dest="as_", default="2,10,100,1000")
    ap.add_argument("--utilities", default="2,10,mix,log")
    ap.add_argument("--families", default="dirichlet,logit,dups")
    ap.add_argument("--methods", default="newton,newton_cg,anderson", help="other methods timed beside auto")
    ap.add_argument("--budget", type=float, default=2e6, help="items x agents x goods per shape")
    ap.add_argument("--max-items", type=int, default=20000)
    ap.add_argument("--dense-max", type=int, default=64)
    ap.add_argument(
        "--gram-max-agents", type=int, default=100, help="time gram only up to this many agents (A^3 a step)"
    )
    ap.add_argument("--tol", type=float, default=1e-10)
    ap.add_argument("--reps", type=int, default=3, help="median of this many interleaved calls per figure")
    ap.add_argument("--no-floor", action="store_true", help="floor=None (bench_markets.py's setting) instead of 1e-9")
    ap.add_argument("--bound", action="store_true", help="also time the bound call (one-order markets)")
    args = ap.parse_args(argv)
    ks = [int(x) for x in args.ks.split(",")]
    As = [int(x) for x in args.as_.split(",")]
    others = [m for m in args.methods.split(",") if m]
    small = family("dirichlet", 4, 3, 5)
    for m in ("newton", "newton_cg", "fixed_point", "anderson", "gram"):  # compile / load the cache
        for u in (2.0, [2.0, "log", "exp"]):
            if m not in ("fixed_point", "anderson", "gram") or u == 2.0:
                equilibrium(small, u, method=m, check=False)
    print(f"reps: {args.reps}  load: {os.getloadavg()}  threads: {os.environ.get('NUMBA_NUM_THREADS', 'all')}")
    print(
        "| family | K | A | items | utilities | auto | auto s | FP s | auto / FP | floor / FP | wall auto / FP "
        "| iter auto / FP | max Δ log c | "
        + " | ".join(f"{m} s" for m in others)
        + (" | bound / FP" if args.bound else "")
        + " |"
    )
    print("|---" * (13 + len(others) + args.bound) + "|", flush=True)
    rows = []
    for fam in args.families.split(","):
        for k in ks:
            for a in As:
                if not fills(fam, a, k):
                    continue
                n = int(max(1, min(args.max_items, args.budget // (a * k))))
                lp = as_log_probs(family(fam, n, a, k))
                w = np.random.default_rng(1).uniform(0.2, 1.0, a)
                for spec in args.utilities.split(","):
                    u = utilities(spec, a)
                    kw = dict(tol=args.tol, check=False, **({"floor": None} if args.no_floor else {}))
                    fns = {m: (lambda m=m: equilibrium(lp, u, w, method=m, **kw)) for m in ["auto", "fixed_point"]}
                    fns["floor"] = lambda: equilibrium(lp, u, w, method="newton_cg", max_iter=0, **kw)
                    if args.bound and spec not in ("mix", "exp", "log", *SPREADS):
                        fl = None if args.no_floor else 1e-9
                        fns["bound"] = lambda fl=fl: lower_bound(lp, u, w, fl)
                    for m in others:
                        if (
                            (m != "newton" or k <= args.dense_max)
                            and (m != "anderson" or spec != "exp")
                            and (m != "gram" or (spec == "2" and a <= args.gram_max_agents))
                        ):
                            fns[m] = lambda m=m: equilibrium(lp, u, w, method=m, **kw)
                    if spec == "exp":
                        del fns["fixed_point"]
                    wall, cpu, outs = interleaved(list(fns.values()), args.reps, args.reps)
                    out = {m: (cpu[i], outs[i], wall[i]) for i, m in enumerate(fns)}
                    ta, ra, wa = out["auto"]
                    tf, rf, wf = out.get("fixed_point", (None, None, None))
                    conv = all(r.all_converged for m, (_, r, _) in out.items() if m not in ("floor", "bound"))

                    def f(t):
                        return "-" if t is None else f"{t:.3f}"

                    ratio = None if tf is None else ta / tf
                    floor = None if tf is None else out["floor"][0] / tf
                    rows.append(dict(fam=fam, K=k, A=a, spec=spec, method=ra.method, ratio=ratio, floor=floor))
                    it_f = "n/a" if rf is None else f"{rf.n_iter.mean():.1f}"
                    diff = "n/a" if rf is None else f"{np.max(np.abs(ra.log_prices - rf.log_prices)):.1e}"
                    cols = " | ".join(f(out.get(m, (None,))[0]) for m in others)
                    if args.bound:
                        b = out.get("bound", (None,))[0]
                        cols += " | " + ("-" if b is None or tf is None else f"{b / tf:.3f}")
                    na = "n/a"
                    print(
                        f"| {fam} | {k} | {a} | {n} | {spec} | {ra.method} | {f(ta)} | {f(tf)} "
                        f"| {na if ratio is None else f'{ratio:.2f}'}{'' if conv else ' (NOT CONVERGED)'} "
                        f"| {na if floor is None else f'{floor:.2f}'} | {na if wf is None else f'{wa / wf:.2f}'} "
                        f"| {ra.n_iter.mean():.1f} / {it_f} | {diff} | {cols} |",
                        flush=True,
                    )
    summary(rows)
    print(f"load at the end: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
