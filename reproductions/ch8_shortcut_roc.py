"""Seed 001 chapter 8 experiments: structure recovery ROC (Figs 8.3/8.4) and held-out likelihood against
edge count on real data (Figs 8.5/8.6, with bundled data in place of ASX300 and NSW temperatures).

ROC (§8.3.1): walk-summable Gaussians (:mod:`graphical.walk_summable`) on Barabási-Albert and
Erdős-Rényi graphs, 60 nodes, 120 expected edges, 30 graphs per family, ``n = 200`` samples (the seed
does not state ``n``). Methods on the sample correlation: SHORTCUT, CCT η = 1 and η = 2, correlation
thresholding, l1-regularised maximum likelihood (scikit-learn's ``graphical_lasso`` over a path of 15
``alpha``; an edge's score is the largest ``alpha`` keeping it), neighbourhood selection (union and
intersection, 40 ``λ``). Each method ranks the pairs; the ROC is averaged over graphs on an FPR grid.

Held-out likelihood (§8.3.2): scikit-learn's bundled breast-cancer data (569 samples × 30 features)
and digits (1,797 × the 61 pixels that vary in the training half), an even random split, standardised
by the training half. For each method and edge count ``m`` the top-``m`` pairs are fitted by maximum
likelihood on the training covariance (:func:`graphical.structure_mle.fit_on_graph`) and scored by
the negated Eq 6.4 on the test half.

``main()`` (``make reproduce``) runs the full version and writes ``ch8_shortcut.md`` and
``figures/ch8_roc.png``, ``figures/ch8_heldout.png``; ``--short`` runs 2 graphs per family and
breast-cancer only and writes ``ch8_shortcut_short.md`` (marked SHORT).
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.covariance import graphical_lasso
from sklearn.metrics import roc_curve

from graphical.neighbourhood import neighbourhood_weights
from graphical.shortcut import shortcut
from graphical.structure_mle import fit_on_graph, heldout_objective
from graphical.thresholding import cct_weights, correlation, correlation_weights, top_edges
from graphical.walk_summable import random_graph, sample, walk_summable_precision

HERE = Path(__file__).resolve().parent
warnings.filterwarnings("ignore", module="sklearn")
METHODS = ("SHORTCUT", "CCT eta=1", "CCT eta=2", "correlation", "l1 (graphical_lasso)", "NS union", "NS intersection")
FPR = np.linspace(0, 1, 201)


def l1_scores(C: np.ndarray, n_alphas: int = 15) -> np.ndarray:
    """The largest ``alpha`` on a path at which scikit-learn's graphical lasso keeps each edge."""
    off = np.abs(C[np.triu_indices_from(C, 1)])
    S = np.zeros_like(C)
    for alpha in np.geomspace(0.99 * off.max(), 0.01 * off.max(), n_alphas):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                _, prec = graphical_lasso(C, alpha, max_iter=200, tol=1e-4)
            except FloatingPointError:
                continue
        on = np.abs(prec) > 1e-10
        S = np.where(on & (S == 0), alpha, S)
    np.fill_diagonal(S, 0.0)
    return S


def method_scores(X: np.ndarray, *, short: bool = False) -> dict[str, np.ndarray]:
    C = correlation(np.cov(X.T))
    return {
        "SHORTCUT": shortcut(C).weights,
        "CCT eta=1": cct_weights(C, 1),
        "CCT eta=2": cct_weights(C, 2),
        "correlation": correlation_weights(C),
        "l1 (graphical_lasso)": l1_scores(C, 8 if short else 15),
        "NS union": neighbourhood_weights(X, rule="union", n_lambdas=15 if short else 40),
        "NS intersection": neighbourhood_weights(X, rule="intersection", n_lambdas=15 if short else 40),
    }


def roc_family(kind: str, n_graphs: int, *, p: int = 60, n_edges: int = 120, n: int = 200, short: bool = False) -> dict:
    """Mean TPR on the FPR grid, AUC and partial AUC (FPR <= 0.1, normalised) per method, and seconds."""
    rng = np.random.default_rng({"ba": 1, "er": 2}[kind])
    tpr = {m: [] for m in METHODS}
    secs = {m: 0.0 for m in METHODS}
    for _ in range(n_graphs):
        A = random_graph(kind, p, n_edges, rng)
        X = sample(walk_summable_precision(A, rng), n, rng)
        iu = np.triu_indices(p, 1)
        t0 = time.perf_counter()
        S = method_scores(X, short=short)
        secs["total"] = secs.get("total", 0.0) + time.perf_counter() - t0
        for m in METHODS:
            f, t, _ = roc_curve(A[iu], S[m][iu])
            tpr[m].append(np.interp(FPR, f, t))
    out = {}
    for m in METHODS:
        mean = np.mean(tpr[m], axis=0)
        k = FPR <= 0.1
        out[m] = {
            "tpr": mean,
            "auc": float(np.trapezoid(mean, FPR)),
            "pauc": float(np.trapezoid(mean[k], FPR[k]) / 0.1),
            "tpr_at_5pct": float(np.interp(0.05, FPR, mean)),
        }
    return out


def bundled(name: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """An even random split of a scikit-learn bundled data set, standardised by the training half."""
    from sklearn.datasets import load_breast_cancer, load_digits

    X = (load_breast_cancer if name == "breast_cancer" else load_digits)(return_X_y=True)[0].astype(float)
    idx = np.random.default_rng(seed).permutation(len(X))
    tr, te = X[idx[: len(X) // 2]], X[idx[len(X) // 2 :]]
    keep = tr.std(0) > 1e-8  # digits: drop the pixels that never vary in the training half
    tr, te = tr[:, keep], te[:, keep]
    mu, sd = tr.mean(0), tr.std(0)
    return (tr - mu) / sd, (te - mu) / sd


def heldout_curves(name: str, edge_counts: list[int], *, short: bool = False) -> dict[str, list[float]]:
    Xtr, Xte = bundled(name)
    Str = np.cov(Xtr.T, bias=True)
    Ste = Xte.T @ Xte / len(Xte)
    S = method_scores(Xtr, short=short)
    out = {}
    for m in METHODS:
        out[m] = [heldout_objective(Ste, fit_on_graph(Str, top_edges(S[m], k), tol=1e-8)) for k in edge_counts]
    return out


def plot(roc: dict, held: dict, edge_counts: dict, figdir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figdir.mkdir(exist_ok=True)
    fig, ax = plt.subplots(1, len(roc), figsize=(5 * len(roc), 4))
    for a, (kind, res) in zip(np.atleast_1d(ax), roc.items()):
        for m in METHODS:
            a.plot(FPR, res[m]["tpr"], label=m)
        a.set(
            xlim=(0, 0.3),
            xlabel="false positive rate",
            ylabel="true positive rate",
            title=f"{kind.upper()} (Fig 8.{3 if kind == 'ba' else 4})",
        )
        a.grid(alpha=0.3)
    np.atleast_1d(ax)[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(figdir / "ch8_roc.png", dpi=110)
    fig, ax = plt.subplots(1, len(held), figsize=(5 * len(held), 4))
    for a, (name, res) in zip(np.atleast_1d(ax), held.items()):
        for m in METHODS:
            a.plot(edge_counts[name], res[m], marker="o", ms=3, label=m)
        a.set(xlabel="number of edges", ylabel="held-out -(Eq 6.4)", title=name)
        a.grid(alpha=0.3)
    np.atleast_1d(ax)[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(figdir / "ch8_heldout.png", dpi=110)


def run(short: bool = False) -> tuple[dict, dict, dict]:
    n_graphs = 2 if short else 30
    roc = {kind: roc_family(kind, n_graphs, short=short) for kind in ("ba", "er")}
    edge_counts = {"breast_cancer": [5, 15, 30, 60, 100, 150, 250]}
    if not short:
        edge_counts["digits"] = [10, 30, 60, 120, 200, 300, 500]
    else:
        edge_counts["breast_cancer"] = [5, 30, 100]
    held = {name: heldout_curves(name, ks, short=short) for name, ks in edge_counts.items()}
    return roc, held, edge_counts


def write(roc: dict, held: dict, edge_counts: dict, path: Path, short: bool, seconds: float) -> None:
    n_graphs = 2 if short else 30
    lines = [
        "# Seed 001 chapter 8: SHORTCUT against CCT and the other structure methods"
        + (" -- SHORT RUN (2 graphs per family, breast cancer only)" if short else ""),
        "",
        f"Command: `{'python reproductions/ch8_shortcut_roc.py --short' if short else 'make reproduce'}`. "
        f"Load (1-min) at the start: `{os.getloadavg()[0]:.2f}`; {seconds:.0f} s in all.",
        "",
        f"## ROC of edge recovery (Figs 8.3/8.4): 60 nodes, 120 expected edges, n = 200, {n_graphs} graphs per family",
        "",
        "Mean over graphs; pAUC = area under the ROC for FPR <= 0.1, divided by 0.1. Plot: `figures/ch8_roc.png`.",
        "",
        "| method | BA AUC | BA pAUC | BA TPR at FPR 5 % | ER AUC | ER pAUC | ER TPR at FPR 5 % |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in METHODS:
        b, e = roc["ba"][m], roc["er"][m]
        lines.append(
            f"| {m} | {b['auc']:.3f} | {b['pauc']:.3f} | {b['tpr_at_5pct']:.3f} | {e['auc']:.3f} | {e['pauc']:.3f} | {e['tpr_at_5pct']:.3f} |"
        )
    for name, res in held.items():
        ks = edge_counts[name]
        lines += [
            "",
            f"## Held-out -(Eq 6.4) against edge count: scikit-learn `{name}` (Figs 8.5/8.6 stand-in; higher is better)",
            "",
            "| method | " + " | ".join(f"{k} edges" for k in ks) + " |",
            "|---|" + "---|" * len(ks),
        ]
        lines += [f"| {m} | " + " | ".join(f"{v:.3f}" for v in res[m]) + " |" for m in METHODS]
    path.write_text("\n".join(lines) + "\n")


def main(short: bool = False) -> int:
    t0 = time.perf_counter()
    roc, held, edge_counts = run(short)
    path = HERE / ("ch8_shortcut_short.md" if short else "ch8_shortcut.md")
    write(roc, held, edge_counts, path, short, time.perf_counter() - t0)
    if not short:
        plot(roc, held, edge_counts, HERE / "figures")
    print(path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main(short="--short" in sys.argv))
