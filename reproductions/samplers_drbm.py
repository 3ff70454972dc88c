"""The discriminative RBM (seed 000 section 4.6.3, l.2310-2365, Fig. 4.4): test error of the posterior
mean against passes for SGHMC, SGNHT and CCAdL (diagonal covariance) over a grid of (h, A): ``STEPS`` x {1, 10}.

Model: :class:`samplers.models.DRBM` (Eq. 4.54-4.57), flat prior as in the seed. The seed's LIBSVM
sets are not available offline; here:

* ``digits``: scikit-learn's 8x8 digits, 10 classes, 64 pixels / 16, a stratified 75/25 split
  (1,347 / 450), 20 hidden units: D = 20 * 64 + 20 + 20 * 10 + 10 = 1,510;
* ``generated``: shaped like the seed's *acoustic* (3 classes, 50 features, 20 hidden units, so
  D = 1,083 as in Table 4.2): scikit-learn's ``make_classification``, 10,000 training and 2,500 test
  points, standardised.

Mini-batches of 500 (the seed's 500-1000). Each chain starts at the same small random weights. The
error at ``P`` passes is that of the mean of the draws after ``0.2 P`` (the seed's burn-in of the
first 20 % of passes, :func:`samplers.posterior_mean.posterior_mean_curve`). As a yardstick, the
test error of scikit-learn's multinomial logistic regression on the same split.

``main()`` (``make reproduce``) writes ``samplers_drbm.md`` and ``figures/samplers_drbm_*.png``;
``--short`` runs fewer passes and writes ``samplers_drbm_short.md``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

from samplers import DRBM, sample
from samplers.posterior_mean import posterior_mean_curve

HERE = Path(__file__).resolve().parent
METHODS = ("sghmc", "sgnht", "ccadl")
FRICTIONS = (1.0, 10.0)
BATCH = 500


def data(name: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(X_train, y_train, X_test, y_test)`` of ``digits`` or ``generated``."""
    from sklearn.datasets import load_digits, make_classification
    from sklearn.model_selection import train_test_split

    if name == "digits":
        X, y = load_digits(return_X_y=True)
        X = X / 16.0
        test = 0.25
    else:
        X, y = make_classification(12_500, 50, n_informative=25, n_redundant=0, n_classes=3, random_state=seed)
        X = (X - X.mean(axis=0)) / X.std(axis=0)
        test = 0.2
    Xa, Xb, ya, yb = train_test_split(X, y, test_size=test, stratify=y, random_state=seed)
    return Xa, ya, Xb, yb


STEPS = {"digits": (0.02, 0.05, 0.08), "generated": (0.002, 0.005, 0.01)}
PASSES = {"digits": 50, "generated": 30}  # --short: a tenth


def yardstick(Xa: np.ndarray, ya: np.ndarray, Xb: np.ndarray, yb: np.ndarray) -> float:
    from sklearn.linear_model import LogisticRegression

    return float(np.mean(LogisticRegression(max_iter=2000).fit(Xa, ya).predict(Xb) != yb))


def run(model: DRBM, method: str, h: float, A: float, passes: float, seed: int = 0):
    n_steps = int(np.ceil(passes * model.n_data / BATCH))
    extra = {"covariance": "diagonal"} if method == "ccadl" else {}
    return sample(model, method, n_steps, theta0=model.init(seed), step=h, friction=A, batch=BATCH, seed=seed, **extra)


def run_dataset(name: str, passes: float, seed: int = 0) -> dict:
    Xa, ya, Xb, yb = data(name, seed)
    model = DRBM(Xa, ya, n_hidden=20)
    out: dict = {
        "passes": passes,
        "model": model,
        "n_test": len(yb),
        "yardstick": yardstick(Xa, ya, Xb, yb),
        "cells": {},
    }
    score = lambda theta: model.error(theta, Xb, yb)
    for h in STEPS[name]:
        for A in FRICTIONS:
            for method in METHODS:
                r = run(model, method, h, A, passes, seed)
                c = (
                    posterior_mean_curve(r.samples, BATCH / model.n_data, score, points=25, discard=0.2)
                    if r.ok
                    else None
                )
                xi = float(r.stats["xi"].mean()) if "xi" in r.stats and len(r.stats["xi"]) else None
                T = float(r.stats["kinetic_temperature"].mean()) if len(r.samples) else None
                out["cells"][method, h, A] = {
                    "curve": c,
                    "ok": r.ok,
                    "message": r.message,
                    "seconds": r.seconds,
                    "xi": xi,
                    "T": T,
                }
    return out


def plot(name: str, res: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = [(h, A) for h in STEPS[name] for A in FRICTIONS]
    fig, axes = plt.subplots(1, len(cells), figsize=(4 * len(cells), 3.4), sharey=True)
    for ax, (h, A) in zip(axes, cells):
        for method in METHODS:
            c = res["cells"][method, h, A]["curve"]
            if c is not None:
                ax.plot(*c, label=method)
        ax.axhline(res["yardstick"], color="k", ls=":", lw=1, label="softmax regression")
        ax.set_title(f"{name}: h={h}, A={A:g}")
        ax.set_xlabel("passes")
        ax.set_ylim(0, min(1.0, 4 * res["yardstick"] + 0.2))
    axes[0].set_ylabel("test error of the posterior mean")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _cell(c: dict) -> str:
    if not c["ok"]:  # the error of a mean over the draws before a blow-up says nothing
        return "diverged: " + c["message"].split(":")[0].replace("stopped at", "at")
    err = c["curve"][1][-1]
    return f"{err:.3f}, T {c['T']:.2f}" + (f", xi {c['xi']:.2f}" if c["xi"] is not None else "")


def write(results: dict[str, dict], short: bool, seconds: float, load: str) -> Path:
    """Write ``samplers_drbm[_short].md`` and its figures; returns the report's path."""
    suffix = "_short" if short else ""
    (HERE / "figures").mkdir(exist_ok=True)
    for name, res in results.items():
        plot(name, res, HERE / "figures" / f"samplers_drbm_{name}{suffix}.png")
    lines = [
        "# DRBM (seed 000 section 4.6.3, Fig. 4.4)" + (" -- SHORT RUN" if short else ""),
        "",
        f"Command: `python reproductions/samplers_drbm.py{' --short' if short else ''}` (mini-batch {BATCH}, total {seconds:.0f} s). Load (uptime) at the start: `{load}`. Each cell: test "
        "error of the posterior mean at the last pass (mean of the draws after the first 20 % of passes), the mean "
        "kinetic temperature `p^T p / D` (1 is right) and, for the thermostats, the mean of xi.",
        "",
    ]
    for name, res in results.items():
        m = res["model"]
        head = "| method | " + " | ".join(f"h={h}, A={A:g}" for h in STEPS[name] for A in FRICTIONS) + " |"
        lines += [
            f"## {name}: N = {m.n_data:,}, test {res['n_test']:,}, {m.n_features} features, {m.n_classes} classes, "
            f"{m.n_hidden} hidden units, D = {m.dim:,}; {res['passes']:g} passes per chain",
            "",
            f"Yardstick: multinomial logistic regression (scikit-learn) test error {res['yardstick']:.3f}.",
            "",
            head,
            "|---|" + "---|" * (len(STEPS[name]) * len(FRICTIONS)),
        ]
        for method in METHODS:
            cells = [_cell(res["cells"][method, h, A]) for h in STEPS[name] for A in FRICTIONS]
            lines.append(f"| {method} | " + " | ".join(cells) + " |")
        lines += ["", f"![{name}](figures/samplers_drbm_{name}{suffix}.png)", ""]
    path = HERE / f"samplers_drbm{suffix}.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def main(short: bool = False) -> int:
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    t = time.perf_counter()
    load = open("/proc/loadavg").read().split()[0] if os.path.exists("/proc/loadavg") else "?"
    results = {name: run_dataset(name, PASSES[name] / (10 if short else 1)) for name in ("digits", "generated")}
    print(write(results, short, time.perf_counter() - t, load).read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main(short="--short" in sys.argv))
