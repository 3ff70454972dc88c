"""Task 1 of seed 000 (section 2.7.1, Algorithm 2.2, Fig. 2.1): Rényi aggregation under sample-selection bias.

For each data set (:func:`aggregators.synthetic.make_biased_agents_task`) and each bias power
β = 0, 0.5, ..., 4, the weights of the Rényi pool are fitted by maximum likelihood on the 100
validation labels at every γ of a grid (and for the log pool, γ → 0), and the fitted aggregate is
scored by ``KL(P* ‖ P)`` against the known target. Printed: the KL-vs-log γ table of the first data
set (Fig. 2.1a) and, over all data sets, the optimal γ per β: median, quartiles, mean (Fig. 2.1b).
The plot is saved next to this script (``task1.png``).

Weights are fitted with :func:`aggregators.synthetic.fit_counted_pool`, which optimises the same
objective as :class:`aggregators.renyi_pool.RenyiPool` fitted on the 100 (identical) validation items,
but with one fixed point per evaluation instead of 100 (the test suite checks that both agree).

Usage::

    python reproductions/task1_bias.py                  # the full run: 100 data sets (slow)
    python reproductions/task1_bias.py --datasets 5     # quicker
    python reproductions/task1_bias.py --independent    # each agent reads its own stream (see synthetic.py)
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # runnable as a plain script from anywhere
    sys.path.insert(0, str(ROOT))

from aggregators.metrics import kl_divergence  # noqa: E402
from aggregators.synthetic import DEFAULT_BETAS, fit_counted_pool, make_biased_agents_task  # noqa: E402
from aggregators.validation import DEFAULT_FLOOR, apply_floor, as_log_probs  # noqa: E402
from solvers.progress import ProgressFn, report, tqdm_progress  # noqa: E402

DEFAULT_GAMMAS: np.ndarray = np.logspace(-3, 0, 13)
"""γ from 1e-3 to 1, four per decade (the x axis of Fig. 2.1a is log γ)."""

FLAT_TOL = 1e-9
"""A KL curve whose range over γ is below this is *flat*: every γ ties and the optimum is undefined."""


@dataclass
class Task1Result:
    """KL(P*‖P) for every data set × β × γ, and the log pool (γ → 0) per data set × β."""

    betas: np.ndarray
    gammas: np.ndarray
    kl: np.ndarray  # (n_datasets, n_betas, n_gammas)
    kl_log: np.ndarray  # (n_datasets, n_betas)
    n_floored: np.ndarray  # (n_datasets, n_betas) entries raised to the floor
    settings: dict = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def n_datasets(self) -> int:
        return self.kl.shape[0]

    def best_gamma(self) -> np.ndarray:
        """(n_datasets, n_betas) the γ of the grid with the lowest KL; NaN where the curve is flat."""
        idx = np.argmin(self.kl, axis=2)
        best = self.gammas[idx]
        flat = (self.kl.max(axis=2) - self.kl.min(axis=2)) < FLAT_TOL
        return np.where(flat, np.nan, best)

    def summary(self) -> dict[str, np.ndarray]:
        """Per β over data sets: median/quartiles/mean of the optimal γ (non-flat data sets only),
        the number of flat data sets, and the mean KL at the best γ, at γ = 1 and of the log pool."""
        bg = self.best_gamma()
        out: dict[str, np.ndarray] = {}
        with np.errstate(all="ignore"):
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                out["median"] = np.nanmedian(bg, axis=0)
                out["q25"] = np.nanpercentile(bg, 25, axis=0)
                out["q75"] = np.nanpercentile(bg, 75, axis=0)
                out["mean"] = np.nanmean(bg, axis=0)
        out["n_flat"] = np.isnan(bg).sum(axis=0)
        out["kl_best"] = self.kl.min(axis=2).mean(axis=0)
        out["kl_linear"] = (
            self.kl[:, :, -1].mean(axis=0) if self.gammas[-1] == 1.0 else np.full(len(self.betas), np.nan)
        )
        out["kl_smallest_gamma"] = self.kl[:, :, 0].mean(axis=0)
        out["kl_log"] = self.kl_log.mean(axis=0)
        # how far the log pool is from the best γ, relative to the spread of the curve
        out["log_minus_best"] = (self.kl_log - self.kl.min(axis=2)).mean(axis=0)
        return out


def run(
    n_datasets: int = 100,
    *,
    seed: int = 0,
    betas: Sequence[float] = tuple(DEFAULT_BETAS),
    gammas: Sequence[float] = tuple(DEFAULT_GAMMAS),
    shared_base: bool = True,
    smoothing: float = 0.0,
    floor: float = DEFAULT_FLOOR,
    progress: ProgressFn | None = None,
    **task_params,
) -> Task1Result:
    """Run Algorithm 2.2 on ``n_datasets`` data sets (seeds ``seed, seed+1, ...``).

    ``task_params`` go to :func:`~aggregators.synthetic.make_biased_agents_task` (``n_agents``,
    ``n_classes``, ``n_validation``, ``mean``, ``sd``, ``n_accept``).
    """
    betas = np.asarray(betas, dtype=np.float64)
    gammas = np.sort(np.asarray(gammas, dtype=np.float64))
    if gammas.size == 0 or not np.all((gammas > 0) & (gammas <= 1)):
        raise ValueError("gammas: must be a non-empty list of values in (0, 1]")
    nb, ng = len(betas), len(gammas)
    kl = np.zeros((n_datasets, nb, ng))
    kl_log = np.zeros((n_datasets, nb))
    n_floored = np.zeros((n_datasets, nb), dtype=np.int64)
    t0 = time.perf_counter()
    for d in range(n_datasets):
        task = make_biased_agents_task(
            seed + d, betas=betas, shared_base=shared_base, smoothing=smoothing, **task_params
        )
        counts = np.bincount(task.validation, minlength=task.n_classes)
        for b, beta in enumerate(betas):
            preds = apply_floor(as_log_probs(task.log_probs(beta)[:1]), floor)
            L = preds.log_probs[0]
            n_floored[d, b] = preds.n_floored
            w = None
            for g in range(ng - 1, -1, -1):  # from the linear pool down, each fit warm-started
                w, lq, _ = fit_counted_pool(L, counts, gammas[g], x0=w)
                kl[d, b, g] = kl_divergence(task.target, lq)
            _, lq, _ = fit_counted_pool(L, counts, 0.0, x0=w)
            kl_log[d, b] = kl_divergence(task.target, lq)
            report(progress, (d * nb + b + 1) / (n_datasets * nb))
    settings = dict(
        n_datasets=n_datasets, seed=seed, shared_base=shared_base, smoothing=smoothing, floor=floor, **task_params
    )
    return Task1Result(betas, gammas, kl, kl_log, n_floored, settings, time.perf_counter() - t0)


def uniform_weight_table(
    n_datasets: int = 100,
    *,
    seed: int = 0,
    betas: Sequence[float] = tuple(DEFAULT_BETAS),
    shared_base: bool = True,
    smoothing: float = 0.0,
    floor: float = DEFAULT_FLOOR,
    **task_params,
) -> np.ndarray:
    """Diagnostic without any fitting: mean KL(P*‖P) over data sets of the *uniformly weighted*
    linear pool and log pool, per β. Returns ``(n_betas, 2)`` (columns: linear, log)."""
    betas = np.asarray(betas, dtype=np.float64)
    out = np.zeros((n_datasets, len(betas), 2))
    for d in range(n_datasets):
        task = make_biased_agents_task(
            seed + d, betas=betas, shared_base=shared_base, smoothing=smoothing, **task_params
        )
        for b, beta in enumerate(betas):
            L = apply_floor(as_log_probs(task.log_probs(beta)[:1]), floor).log_probs[0]
            lin = np.logaddexp.reduce(L, axis=0) - np.log(L.shape[0])
            lg = L.mean(axis=0)
            lg -= np.logaddexp.reduce(lg)
            out[d, b] = kl_divergence(task.target, lin), kl_divergence(task.target, lg)
    return out.mean(axis=0)


def format_report(res: Task1Result) -> str:
    """The two tables (Fig. 2.1a for data set 0, Fig. 2.1b over all data sets) as text."""
    lines = []
    s = res.settings
    lines.append(
        f"Task 1 (Algorithm 2.2): {res.n_datasets} data set(s), base set "
        f"{'shared (literal Algorithm 2.2)' if s.get('shared_base') else 'independent per agent'}, "
        f"smoothing {s.get('smoothing')}, floor {s.get('floor'):g}; {res.seconds:.0f} s"
    )
    lines.append("")
    lines.append("KL(P*||P) against log(gamma), data set 0 (Fig. 2.1a); last column: log pool (gamma -> 0)")
    head = "beta  " + " ".join(f"{np.log(g):7.2f}" for g in res.gammas) + "      log"
    lines.append(head)
    for b, beta in enumerate(res.betas):
        lines.append(f"{beta:4.1f}  " + " ".join(f"{v:7.4f}" for v in res.kl[0, b]) + f"  {res.kl_log[0, b]:7.4f}")
    lines.append("")
    sm = res.summary()
    lines.append(f"Optimal gamma per beta over {res.n_datasets} data set(s) (Fig. 2.1b); flat = every gamma ties")
    lines.append(
        "beta   median      q25      q75     mean  flat   KL@best  KL@g=1  KL@g=1e-3  KL(log)  log-best  floored"
    )
    for b, beta in enumerate(res.betas):
        lines.append(
            f"{beta:4.1f} {sm['median'][b]:8.4f} {sm['q25'][b]:8.4f} {sm['q75'][b]:8.4f} {sm['mean'][b]:8.4f} "
            f"{int(sm['n_flat'][b]):5d} {sm['kl_best'][b]:9.4f} {sm['kl_linear'][b]:7.4f} "
            f"{sm['kl_smallest_gamma'][b]:9.4f} {sm['kl_log'][b]:8.4f} {sm['log_minus_best'][b]:9.5f} "
            f"{res.n_floored[:, b].mean():8.1f}"
        )
    return "\n".join(lines)


def plot(res: Task1Result, path: Path) -> Path:
    """Fig. 2.1 (a) KL against log γ for data set 0, one line per β; (b) optimal γ against β."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    cmap = plt.get_cmap("coolwarm")
    for b, beta in enumerate(res.betas):
        c = cmap(b / max(1, len(res.betas) - 1))
        ax1.plot(np.log(res.gammas), res.kl[0, b], "-o", ms=3, color=c, label=f"β={beta:g}")
        ax1.plot([np.log(res.gammas[0]) - 0.5], [res.kl_log[0, b]], "s", color=c, ms=4)
    ax1.set_xlabel("log γ  (squares: log pool, γ → 0)")
    ax1.set_ylabel("KL(P* ‖ P)")
    ax1.set_yscale("log")
    ax1.set_title("(a) one data set")
    ax1.legend(fontsize=7, ncol=2)
    sm = res.summary()
    ax2.errorbar(
        res.betas,
        sm["median"],
        yerr=[sm["median"] - sm["q25"], sm["q75"] - sm["median"]],
        fmt="-o",
        color="tab:blue",
        capsize=3,
        label="median (bars: quartiles)",
    )
    ax2.plot(res.betas, sm["mean"], "-s", color="tab:red", label="mean")
    ax2.set_yscale("log")
    ax2.set_ylim(res.gammas[0] * 0.5, 1.5)  # the whole γ grid, so a flat optimum at γ = 1 reads as such
    ax2.set_xlabel("β (bias)")
    ax2.set_ylabel("optimal γ")
    ax2.set_title(f"(b) {res.n_datasets} data sets")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", type=int, default=100, help="number of data sets (seed: 100)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--independent", action="store_true", help="each agent reads its own stream")
    ap.add_argument("--smoothing", type=float, default=0.0, help="pseudo-count added to every class")
    ap.add_argument("--floor", type=float, default=DEFAULT_FLOOR)
    ap.add_argument("--plot", type=Path, default=Path(__file__).with_name("task1.png"))
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args([] if argv is None and __name__ != "__main__" else argv)
    with tqdm_progress("task1", disable=args.no_progress) as cb:
        res = run(
            args.datasets,
            seed=args.seed,
            shared_base=not args.independent,
            smoothing=args.smoothing,
            floor=args.floor,
            progress=cb,
        )
    print(format_report(res))
    uni = uniform_weight_table(
        args.datasets, seed=args.seed, shared_base=not args.independent, smoothing=args.smoothing, floor=args.floor
    )
    print("\nNo fitting (diagnostic): mean KL of uniformly weighted pools")
    print("beta   linear      log")
    for beta, (a, b) in zip(DEFAULT_BETAS, uni):
        print(f"{beta:4.1f} {a:8.4f} {b:8.4f}")
    print(f"\nplot: {plot(res, args.plot)}")
    np.savez(
        args.plot.with_suffix(".npz"),
        betas=res.betas,
        gammas=res.gammas,
        kl=res.kl,
        kl_log=res.kl_log,
        n_floored=res.n_floored,
    )
    print(f"data: {args.plot.with_suffix('.npz')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
