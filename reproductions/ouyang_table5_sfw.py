"""Table 5 of seed 002 (Ouyang ch. IV, L2082-2092): SFW and MSFW against SMO (LibSVM), Pegasos, NORMA
and a linear SGD: test accuracy and training time, one run, same machine.

Substitutions (the seed's LIBSVM / CVM sets are not offline; notes 002 E5, Table 3):

==============  ==================================================================================
seed's set      here
==============  ==================================================================================
svmguide1       ``make_classification``: 3,089 train / 4,000 test, d = 4, class 1 at 64.7 %
w3a             ``make_classification``: 4,912 train / 10,000 test (seed 44,837), d = 300, class -1 at 97.1 %
a9a             :func:`a9a_like`: 32,561 train / 16,281 test, 123 binary features, one-hot of 14 attributes
                (11.4 % non-zeros, the seed's 11.28 %), class -1 at 75.9 %
ijcnn1          ``make_classification``: 49,990 train (the full ijcnn1 training set; the seed used 35,000)
                / 20,000 test (seed 91,701), d = 22, class -1 at 90.2 %
usps01          the bundled ``digits``, 0 against 1 (360 x 64; the seed's 266,079 x 676), 60/40
covtype         :func:`covtype_like`: 20,000 train / 10,000 test (seed 522,910 / 58,102), 10 continuous and
                44 one-hot binary features (54), two nonlinearly separated classes at about 51 / 49 %
(extra)         the bundled ``breast_cancer`` (569 x 30), and ``digits`` < 5 against >= 5, 60/40
==============  ==================================================================================

Features standardised. Kernel RBF with ``sigma = sqrt(d/2)`` (scikit-learn's ``gamma = 1/(d Var x)``,
"scale", after standardisation) for every kernel method, and ``C = 1`` for every method (the L2-SVM of
SFW/MSFW/SMO-L2, the L1-SVM of SVC, ``lam = 1/(C n)`` of Pegasos and NORMA): the seed's grid search on
*test* accuracy (notes 002 section 7.5) is not repeated. Columns:

- **SFW / MSFW** (:mod:`solvers.methods.frank_wolfe_svm`, Python/NumPy, no kernel cache): one 2-epoch run
  each; its "1ep" cell is the same run read at the end of its first epoch (the first epoch of a 2-epoch
  run is a 1-epoch run: same permutation), time to that point.
- **SMO-L2**: LibSVM's SMO (wss2, shrinking) on the *same* L2-SVM dual as SFW/MSFW
  (:func:`tests.references.libsvm_cvm_dual`: ``OneClassSVM`` on the precomputed CVM matrix ``A``,
  ``nu = 1/n``), time including forming ``A``; only where ``n <= 5,000`` (``A`` is ``n^2`` doubles).
- **SVC**: scikit-learn's ``SVC`` (LibSVM SMO-wss2 with shrinking, the seed's SMO-wss2), L1-SVM,
  ``tol = 1e-3`` (the seed's gap 0.001), ``cache_size`` 200 MB (the seed cached nothing).
- **Pegasos**, **NORMA** (:mod:`solvers.methods.kernel_sgd_svm`, Python/NumPy), one epoch: NORMA at the
  seed's ``eta_t = 1/t`` and at the strongly convex ``eta_t = 1/(lam t)``.
- **SGD-linear**: scikit-learn's ``SGDClassifier`` (hinge).

Times are training wall time (``time.perf_counter`` around ``fit``), excluding loading and prediction,
as in the seed.

Usage::

    python reproductions/ouyang_table5_sfw.py [--quick] [--only NAME] [--merge]

Each set's results go to ``reproductions/ouyang_table5_parts/<name>.json`` (so that sets can run in
separate processes with ``--only``); ``--merge`` (or a run without ``--only``) writes
``reproductions/ouyang_table5.md`` (``_quick``) and ``reproductions/figures/ouyang_table5*.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, make_classification
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from solvers.methods.frank_wolfe_svm import msfw, sfw  # noqa: E402
from solvers.methods.kernel_sgd_svm import NormaSVC, PegasosSVC  # noqa: E402
from solvers.problems.cvm_svm import CVMDual  # noqa: E402
from tests.references import libsvm_cvm_dual  # noqa: E402

HERE = Path(__file__).resolve().parent
PARTS = HERE / "ouyang_table5_parts"
SMO_L2_MAX = 5000

# name: (n_train, n_test, d, share of the majority class, quick?)
SYNTHETIC = {
    "svmguide1-like": (3089, 4000, 4, 0.647, True),
    "w3a-like": (4912, 10000, 300, 0.971, False),
    "ijcnn1-like": (49990, 20000, 22, 0.902, False),
}


def a9a_like(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """a9a's shape: 14 categorical attributes one-hot over 123 binary columns (one 1 per attribute, so
    11.4 % non-zeros), labels from an additive score with pairwise interactions, the top 24.1 % positive."""
    rng = np.random.default_rng(seed)
    sizes = np.array([2, 5, 9, 16, 7, 15, 6, 5, 2, 10, 14, 12, 10, 10])  # sum 123
    X = np.zeros((n, int(sizes.sum())))
    score = np.zeros(n)
    start = 0
    cats = []
    for k in sizes:
        probs = rng.dirichlet(np.ones(k))
        c = rng.choice(k, n, p=probs)
        X[np.arange(n), start + c] = 1.0
        score += rng.normal(0, 1, k)[c]
        cats.append(c)
        start += k
    for a, b in ((0, 3), (2, 5), (4, 9)):
        score += 0.7 * rng.normal(0, 1, (sizes[a], sizes[b]))[cats[a], cats[b]]
    score += rng.normal(0, 0.8, n)
    y = np.where(score > np.quantile(score, 0.759), 1, -1)
    return X, y


def covtype_like(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """covtype's shape: 10 continuous columns, a 4-way and a 40-way one-hot (54 columns), two classes
    split by a nonlinear (radial and threshold) rule on the continuous part and the categories, 51 / 49 %."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, 10))
    w = rng.choice(4, n)
    soil = rng.choice(40, n, p=rng.dirichlet(np.ones(40)))
    X = np.hstack([Z, np.eye(4)[w], np.eye(40)[soil]])
    s = np.sin(2 * Z[:, 0]) + Z[:, 1] * Z[:, 2] - 0.5 * (Z[:, 3:6] ** 2).sum(1) + rng.normal(0, 1, 40)[soil] + 0.5 * w
    s += rng.normal(0, 0.3, n)
    y = np.where(s > np.quantile(s, 0.512), 1, -1)
    return X, y


def _standardise(Xtr, ytr, Xte, yte):
    mu, sd = Xtr.mean(0), Xtr.std(0) + 1e-12
    return (Xtr - mu) / sd, ytr, (Xte - mu) / sd, yte


def _split(X, y, ntr, nte):
    return train_test_split(X, y, train_size=ntr, test_size=nte, random_state=0)


def dataset_makers(quick: bool) -> dict[str, Callable[[], tuple]]:
    """``name -> () -> (Xtr, Xte, ytr, yte)`` (built on demand: the large ones take memory)."""
    out: dict[str, Callable[[], tuple]] = {}

    def bundled(loader, transform, test_size=0.4):
        def make():
            X, y = loader(return_X_y=True)
            X, y = transform(X, y)
            return train_test_split(X, y, test_size=test_size, random_state=0)

        return make

    out["breast_cancer"] = bundled(load_breast_cancer, lambda X, y: (X, y))
    out["digits (<5 vs >=5)"] = bundled(load_digits, lambda X, y: (X, (y >= 5).astype(int)))
    out["usps01-like (digits 0 vs 1)"] = bundled(load_digits, lambda X, y: (X[y <= 1], y[y <= 1]))
    for name, (ntr, nte, d, share, q) in SYNTHETIC.items():
        if quick and not q:
            continue

        def make(ntr=ntr, nte=nte, d=d, share=share):
            X, y = make_classification(
                ntr + nte, d, n_informative=min(d, 10), n_redundant=0, weights=[share], flip_y=0.02, random_state=0
            )
            return _split(X, y, ntr, nte)

        out[name] = make
    if not quick:
        out["a9a-like"] = lambda: _split(*a9a_like(32561 + 16281), 32561, 16281)
        out["covtype-like"] = lambda: _split(*covtype_like(30000), 20000, 10000)
    return out


def _scored(fit: Callable[[], Callable], Xte, positive: np.ndarray) -> dict:
    """Time ``fit()`` (which returns ``decision(X)``); accuracy of ``decision > 0`` against ``positive``
    (the test labels equal to the larger training label)."""
    t = time.perf_counter()
    decide = fit()
    secs = time.perf_counter() - t
    return {"acc": float(np.mean((decide(Xte) > 0) == positive)), "seconds": secs}


def _frank_wolfe(method: str, Xtr, ytr, Xte, positive, sigma: float, seed: int) -> dict[str, dict]:
    """One 2-epoch SFW/MSFW run, read after epoch 1 (its time and alpha) and at the end."""
    t0 = time.perf_counter()
    p = CVMDual(Xtr, ytr, C=1.0, sigma=sigma)
    first: dict = {}

    def at_epoch(alpha: np.ndarray) -> bool:
        if not first:
            first.update(seconds=time.perf_counter() - t0, alpha=alpha.copy())
        return False

    r = (sfw if method == "sfw" else msfw)(p, max_iter=2, seed=seed, callback=at_epoch)
    total = time.perf_counter() - t0
    out = {}
    for label, alpha, secs in (("1ep", first["alpha"], first["seconds"]), ("2ep", r.x, total)):
        acc = float(np.mean((p.decision_function(alpha, Xte) > 0) == positive))
        out[f"{method.upper()} {label}"] = {"acc": acc, "seconds": secs, "sv": int(np.count_nonzero(alpha))}
    return out


def run_set(Xtr, ytr, Xte, yte, *, seed: int = 0) -> dict:
    n, d = Xtr.shape
    sigma = float(np.sqrt(d / 2.0))
    gamma = 1.0 / (2 * sigma * sigma)
    positive = yte == np.unique(ytr)[-1]
    res = {
        **_frank_wolfe("sfw", Xtr, ytr, Xte, positive, sigma, seed),
        **_frank_wolfe("msfw", Xtr, ytr, Xte, positive, sigma, seed),
    }

    if n <= SMO_L2_MAX:

        def smo_l2():
            p = CVMDual(Xtr, ytr, C=1.0, sigma=sigma)
            alpha = libsvm_cvm_dual(p.matrix)
            smo_l2.sv = int(np.count_nonzero(alpha))  # type: ignore[attr-defined]
            return lambda Z: p.decision_function(alpha, Z)

        res["SMO-L2 (LibSVM, CVM dual)"] = {**_scored(smo_l2, Xte, positive), "sv": smo_l2.sv}  # type: ignore[attr-defined]

    def sklearn_fit(make):
        def fit():
            m = make().fit(Xtr, ytr)
            fit.sv = int(m.n_support_.sum()) if hasattr(m, "n_support_") else len(getattr(m, "support_", []))
            return m.decision_function

        return fit

    makers = {
        "SVC (SMO-wss2, L1)": lambda: SVC(C=1.0, gamma=gamma, tol=1e-3),
        "Pegasos 1ep": lambda: PegasosSVC(1.0, sigma, epochs=1, seed=seed),
        "NORMA 1/t 1ep": lambda: NormaSVC(1.0, sigma, epochs=1, seed=seed),
        "NORMA 1/(lam t) 1ep": lambda: NormaSVC(1.0, sigma, eta=float(n), epochs=1, seed=seed),
        "SGD-linear": lambda: SGDClassifier(loss="hinge", random_state=seed),
    }
    for k, make in makers.items():
        fit = sklearn_fit(make)
        res[k] = {**_scored(fit, Xte, positive), "sv": fit.sv if k != "SGD-linear" else None}
    return res


def _columns(results: dict) -> list[str]:
    """Every method of any set, in first-seen order (the table's columns, the figure's colours)."""
    names: list[str] = []
    for _, r in results.values():
        names += [k for k in r if k not in names]
    return names


def table(results: dict) -> str:
    names = _columns(results)
    head = "| data (train / test / d) | " + " | ".join(f"{n} acc % (s, SV)" for n in names) + " |"
    lines = [head, "|---|" + "---|" * len(names)]
    for key, (shape, r) in results.items():
        cells = []
        for n in names:
            if n not in r:
                cells.append("-")
                continue
            sv = "" if r[n]["sv"] is None else f", {r[n]['sv']}"
            cells.append(f"{100 * r[n]['acc']:.2f} ({r[n]['seconds']:.2f} s{sv})")
        lines.append(f"| {key} ({shape}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = _columns(results)
    cols = min(4, len(results))
    rows = -(-len(results) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.6 * rows), squeeze=False)
    for ax, (key, (_, r)) in zip(axes.ravel(), results.items(), strict=False):
        for n, v in r.items():
            ax.scatter(v["seconds"], 100 * v["acc"], label=n, color=f"C{names.index(n)}")
        ax.set_xscale("log")
        ax.set_title(key, fontsize=9)
        ax.set_xlabel("training seconds")
        ax.set_ylabel("test accuracy %")
    axes[0, 0].legend(
        handles=[plt.Line2D([], [], marker="o", ls="", color=f"C{i}", label=n) for i, n in enumerate(names)], fontsize=6
    )
    for ax in axes.ravel()[len(results) :]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _part(name: str) -> Path:
    return PARTS / (name.split(" ")[0] + ".json")


def compute(quick: bool, only: str | None = None, save: bool = False) -> dict:
    """``name -> (shape, run_set(...))`` for every data set (or ``only`` one); ``save``: each set's
    result (with the load average at its end) to ``PARTS``."""
    t0 = time.time()
    results = {}
    for name, make in dataset_makers(quick).items():
        if only and not any(name.startswith(o) for o in only.split(",")):
            continue
        Xtr, ytr, Xte, yte = _standardise(*_unsplit(make()))  # as load(name)
        shape = f"{Xtr.shape[0]} / {Xte.shape[0]} / {Xtr.shape[1]}"
        results[name] = (shape, run_set(Xtr, ytr, Xte, yte))
        print(f"{name} done ({time.time() - t0:.0f} s)", flush=True)
        if save:
            PARTS.mkdir(exist_ok=True)
            load = os.getloadavg()
            _part(name).write_text(json.dumps({"name": name, "shape": shape, "load": load, "result": results[name][1]}))
    return results


def load(name: str, quick: bool = False) -> tuple:
    """The set ``name`` as standardised ``(Xtr, ytr, Xte, yte)``."""
    return _standardise(*_unsplit(dataset_makers(quick)[name]()))


def _unsplit(split: list) -> tuple:
    """``train_test_split``'s ``(Xtr, Xte, ytr, yte)`` as ``(Xtr, ytr, Xte, yte)``."""
    Xtr, Xte, ytr, yte = split
    return Xtr, ytr, Xte, yte


def write(results: dict, suffix: str, header: str) -> str:
    plot(results, HERE / "figures" / f"ouyang_table5{suffix}.png")
    md = table(results)
    (HERE / f"ouyang_table5{suffix}.md").write_text(
        "# Table 5 (seed 002 ch. IV): SFW / MSFW vs SMO (LibSVM), Pegasos, NORMA and a linear SGD\n\n"
        + header
        + " Cells: test accuracy % (training seconds, support vectors). "
        f"Figure: `figures/ouyang_table5{suffix}.png`.\n\n" + md + "\n"
    )
    return md


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument(
        "--only", default=None, help="comma-separated prefixes of the data sets to run (saved to the parts)"
    )
    ap.add_argument("--merge", action="store_true", help="write the table from the saved parts")
    a = ap.parse_args(argv)
    suffix = "_quick" if a.quick else ""
    if a.merge:
        results, loads = {}, []
        for name in dataset_makers(a.quick):
            part = json.loads(_part(name).read_text())
            results[name] = (part["shape"], part["result"])
            loads.append(f"{name.split(' ')[0]} {part['load'][0]:.1f}")
        header = (
            "`python reproductions/ouyang_table5_sfw.py --only <set>` for each set (run side by side), then "
            f"`--merge`; one run each. Load average (1 min) at each set's end on 2 shared cores: {', '.join(loads)}."
        )
        print(write(results, suffix, header))
        return 0
    t0 = time.time()
    results = compute(a.quick, a.only, save=not a.quick)
    if a.only:
        return 0
    load = os.getloadavg()
    header = (
        f"`python reproductions/ouyang_table5_sfw.py {' '.join(argv if argv is not None else sys.argv[1:])}`: one run, "
        f"{time.time() - t0:.0f} s, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on 2 shared cores."
    )
    print(write(results, suffix, header))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
