"""E2 of seed 002 (Ouyang ch. II, L1006-1056, Figs 9-17): ANSGD against SGD, averaged SGD and AC-SA.

Substitutions (the seed's LIBSVM / Pascal sets are not offline; notes 002 E2):

- svmguide1 (3,089 x 4, 60/40)  ->  scikit-learn's bundled ``breast_cancer`` (569 x 30), 60/40;
- alpha (500,000 x 500, 80/20)  ->  ``make_classification`` (20,000 x 50; 4,000 with ``--quick``), 80/20;
- real-sim (72,309 x 20,958 sparse text, 60/40)  ->  ``text_like`` generated (6,000 x 3,000, 0.5 % non-zeros), 60/40;
- rcv1 (20,242 train x 47,236 sparse text, fixed split)  ->  ``text_like`` generated (4,000 train / 8,000 test x
  5,000, 0.3 % non-zeros);
- abalone (4,177 x 8, robust regression, 80/20)  ->  the bundled ``diabetes`` (442 x 10), 80/20.

The generated text stand-ins (:func:`text_like`) have tf-idf-like non-negative sparse rows of unit norm
(as LIBSVM's real-sim and rcv1) and labels from a sparse linear rule with 3 % flipped. Dense features are
standardised and the rows scaled so that ``mean |s|^2 = 1`` (the practical schedule's condition, notes
002 section 7.1; the sparse rows already have it); regression targets are standardised. ``lambda = 1e-3`` for every
set (the seed's lambdas did not survive extraction). Losses: ANSGD the smoothed hinge / absolute loss,
the baselines the exact ones (L1010), all with ``(lambda/2)|x|^2``.

Two modes, as the seed's two columns: **convex** (ANSGD Thm 5, SGD ``Omega/sqrt t``, averaged SGD
Bach-Moulines, AC-SA Lan 2012) and **strongly convex** with ``mu = lambda`` (ANSGD's practical theta of
L1014, SGD2 ``1/(mu (t + Omega))``, averaged SGD with Xu's step, AC-SA Ghadimi-Lan Prop. 9). Every
``Omega`` is tuned on a tuning subset (20 % of the training rows, one epoch, grid ``10^-3..10^4``),
as L1018 says; the strongly convex ANSGD is run untuned. ``SEEDS`` runs (the seed: 10) give mean and
standard deviation. Metrics: test objective and test accuracy (classification) per epoch.

Usage::

    python reproductions/ouyang_e2_ansgd.py [--quick]

Writes ``reproductions/ouyang_e2.md`` (``ouyang_e2_quick.md`` with ``--quick``) and
``reproductions/figures/ouyang_e2*.png``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer, load_diabetes, make_classification
from sklearn.model_selection import train_test_split

import solvers
from solvers.problems.smoothable import SmoothableLinearModel

HERE = Path(__file__).resolve().parent
LAM = 1e-3
GRID = [10.0**k for k in range(-3, 5)]


def _normalise(X: np.ndarray, Xte: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mu, sd = X.mean(0), X.std(0) + 1e-12
    X, Xte = (X - mu) / sd, (Xte - mu) / sd
    s = np.sqrt((X**2).sum(1).mean())
    return X / s, Xte / s


def text_like(n: int, d: int, density: float, seed: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """A generated stand-in for a LIBSVM text set: ``n x d`` CSR rows of unit norm with log-normal
    (tf-idf-like) non-zeros, about ``density * d`` words a row, a quarter of them from the label's own
    vocabulary (a tenth of the ``d`` words each), the rest uniform; 3 % of the labels flipped."""
    rng = np.random.default_rng(seed)
    y = rng.choice([-1.0, 1.0], n)
    k = 1 + rng.poisson(density * d, n)
    block = d // 10
    rows, cols = [], []
    for i in range(n):
        own = rng.random(k[i]) < 0.25
        start = 0 if y[i] > 0 else block
        c = np.where(own, start + rng.integers(0, block, k[i]), rng.integers(0, d, k[i]))
        c = np.unique(c)
        rows.append(np.full(c.size, i))
        cols.append(c)
    r, c = np.concatenate(rows), np.concatenate(cols)
    X = sp.csr_matrix((rng.lognormal(0.0, 1.0, r.size), (r, c)), shape=(n, d))
    norms = np.sqrt(np.asarray(X.multiply(X).sum(1)).ravel())
    X = sp.csr_matrix(sp.diags(1.0 / norms) @ X)
    flip = rng.random(n) < 0.03
    y[flip] = -y[flip]
    return X, y


def datasets(quick: bool) -> dict:
    out = {}
    X, y = load_breast_cancer(return_X_y=True)
    out["breast_cancer"] = ("hinge", *train_test_split(X, y, test_size=0.4, random_state=0))
    n = 4000 if quick else 20000
    X, y = make_classification(n, 50, n_informative=20, flip_y=0.05, random_state=0)
    out["alpha-like"] = ("hinge", *train_test_split(X, y, test_size=0.2, random_state=0))
    X, y = load_diabetes(return_X_y=True)
    y = (y - y.mean()) / y.std()
    out["diabetes"] = ("absolute", *train_test_split(X, y, test_size=0.2, random_state=0))
    res = {}
    for k, (loss, Xtr, Xte, ytr, yte) in out.items():
        Xtr, Xte = _normalise(Xtr, Xte)
        res[k] = (loss, Xtr, ytr, Xte, yte)
    if not quick:
        X, y = text_like(6000, 3000, 0.005, seed=1)
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.4, random_state=0)
        res["real-sim-like"] = ("hinge", Xtr, ytr, Xte, yte)
        X, y = text_like(12000, 5000, 0.003, seed=2)
        res["rcv1-like"] = ("hinge", X[:4000], y[:4000], X[4000:], y[4000:])
    return res


def methods(mode: str, mu: float) -> dict[str, tuple[str, dict]]:
    """``name -> (registered method, options)``; ``"omega"`` marks the tuned option."""
    if mode == "convex":
        return {
            "ANSGD": ("ansgd", {"schedule": "convex", "omega": "tune"}),
            "SGD": ("sgd", {"schedule": "inverse_sqrt", "step": "tune"}),
            "ASGD": ("asgd", {"strongly_convex": False, "omega": "tune"}),
            "AC-SA": ("acsa", {"strongly_convex": False, "omega": "tune"}),
        }
    return {
        "ANSGD": ("ansgd", {"schedule": "practical"}),
        "SGD": ("sgd", {"schedule": "inverse", "step": "tune_sgd2"}),
        "ASGD": ("asgd", {"strongly_convex": True, "omega": "tune"}),
        "AC-SA": ("acsa", {"strongly_convex": True, "omega": "tune"}),
    }


def _options(opts: dict, om: float, mu: float) -> dict:
    out = {}
    for k, v in opts.items():
        if v == "tune":
            out[k] = om
        elif v == "tune_sgd2":  # SGD2's 1/(mu (t + Omega)) is sgd's inverse schedule with step 1/(mu Omega)
            out[k] = 1.0 / (mu * om)
        else:
            out[k] = v
    return out


def tune(p_tune, method: str, opts: dict, mu: float) -> float | None:
    if not any(v in ("tune", "tune_sgd2") for v in opts.values()):
        return None
    best, best_om = np.inf, GRID[0]
    for om in GRID:
        r = solvers.minimize(p_tune, method, max_iter=1, seed=123, **_options(opts, om, mu))
        if np.isfinite(r.fun) and r.fun < best:
            best, best_om = r.fun, om
    return best_om


def run(name: str, data, mode: str, epochs: int, seeds: int) -> dict:
    loss, Xtr, ytr, Xte, yte = data
    p = SmoothableLinearModel(Xtr, ytr, loss, l2=LAM)
    pte = SmoothableLinearModel(Xte, yte, loss, l2=LAM)
    ntune = max(50, Xtr.shape[0] // 5)
    p_tune = SmoothableLinearModel(Xtr[:ntune], ytr[:ntune], loss, l2=LAM)
    out = {}
    for label, (method, opts) in methods(mode, LAM).items():
        om = tune(p_tune, method, opts, LAM)
        objs, accs, secs, train = [], [], [], []
        for s in range(seeds):
            xs: list[np.ndarray] = []
            r = solvers.minimize(
                p,
                method,
                max_iter=epochs,
                seed=s,
                callback=lambda x: xs.append(x.copy()),
                **_options(opts, om or 1, LAM),
            )
            secs.append(r.seconds)
            train.append(r.trace.objective)
            objs.append([pte.value(x) for x in xs])
            if loss == "hinge":
                accs.append([float(np.mean(np.sign(Xte @ x) == pte.y)) for x in xs])
        out[label] = {
            "omega": om,
            "obj": np.array(objs),
            "train": np.array(train),
            "acc": np.array(accs) if accs else None,
            "seconds": float(np.mean(secs)),
        }
    return out


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(results)
    fig, axes = plt.subplots(2, len(keys), figsize=(4.2 * len(keys), 7), squeeze=False)
    for j, key in enumerate(keys):
        for label, r in results[key].items():
            ep = np.arange(r["obj"].shape[1])
            m, s = r["obj"].mean(0), r["obj"].std(0)
            axes[0, j].errorbar(ep[1:], m[1:], yerr=s[1:], label=label, capsize=2)
            if r["acc"] is not None:
                axes[1, j].errorbar(ep[1:], r["acc"].mean(0)[1:], yerr=r["acc"].std(0)[1:], label=label, capsize=2)
        axes[0, j].set_title(key, fontsize=9)
        axes[0, j].set_yscale("log")
        axes[0, j].set_xlabel("epochs")
        axes[0, j].set_ylabel("test objective")
        axes[1, j].set_xlabel("epochs")
        axes[1, j].set_ylabel("test accuracy")
        axes[0, j].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(results: dict) -> str:
    lines = [
        "| data / mode | method | tuned Omega | final train objective | final test objective (mean ± sd) | final test accuracy (%) | seconds per run |",
        "|---|---|---|---|---|---|---|",
    ]
    for key, res in results.items():
        for label, r in res.items():
            o = r["obj"][:, -1]
            acc = "" if r["acc"] is None else f"{100 * r['acc'][:, -1].mean():.2f} ± {100 * r['acc'][:, -1].std():.2f}"
            om = "-" if r["omega"] is None else f"{r['omega']:g}"
            tr = r["train"][:, -1]
            lines.append(
                f"| {key} | {label} | {om} | {tr.mean():.5f} ± {tr.std():.5f} | {o.mean():.5f} ± {o.std():.5f} "
                f"| {acc} | {r['seconds']:.2f} |"
            )
    return "\n".join(lines)


def compute(quick: bool, epochs: int, seeds: int, only: str | None = None) -> dict:
    """``"<data> / <mode>" -> run(...)`` for every data set (or ``only`` one) and both modes."""
    t0 = time.time()
    results = {}
    for name, data in datasets(quick).items():
        if only and only != name:
            continue
        for mode in ("convex", "strongly_convex"):
            results[f"{name} / {mode}"] = run(name, data, mode, epochs, seeds)
            print(f"{name} {mode} done ({time.time() - t0:.0f} s)", flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument(
        "--only", default=None, help="one data set (breast_cancer, alpha-like, diabetes, real-sim-like, rcv1-like)"
    )
    ap.add_argument("--epochs", type=int, default=None, help="default 20 (8 with --quick)")
    ap.add_argument("--seeds", type=int, default=None, help="default 10, the seed's count (3 with --quick)")
    a = ap.parse_args(argv)
    epochs = a.epochs or (8 if a.quick else 20)
    seeds = a.seeds or (3 if a.quick else 10)
    t0 = time.time()
    results = compute(a.quick, epochs, seeds, a.only)
    suffix = ("_quick" if a.quick else "") + (f"_{a.only}" if a.only else "")
    plot(results, HERE / "figures" / f"ouyang_e2{suffix}.png")
    md = HERE / f"ouyang_e2{suffix}.md"
    md.write_text(
        f"# E2 (seed 002 ch. II): ANSGD vs SGD, averaged SGD, AC-SA\n\n"
        f"`python reproductions/ouyang_e2_ansgd.py {' '.join(argv if argv is not None else sys.argv[1:])}`: {epochs} epochs, "
        f"{seeds} seeds, lambda = {LAM}; {time.time() - t0:.0f} s; load average at the end "
        f"{' / '.join(f'{v:.1f}' for v in os.getloadavg())} on 2 shared cores. Figure: `figures/ouyang_e2{suffix}.png`.\n\n"
        + table(results)
        + "\n"
    )
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
