"""Machine learning markets with real classifiers under sample-selection bias (issue [markets]).

Reproduces the setting of Storkey et al. (2012), as summarised in seed 000 section 2.8.2: agents of
different model families (scikit-learn) are trained on sample-selection-biased subsets of real data,
trade over labelled data (market training, Algorithm 2.4), and the equilibrium prices on held-out
data are compared with the linear, log and Rényi pools and the best single agent. The claim under
test: markets of isoelastic agents beat log-utility (linear pool) and exponential (product) markets
when the agents' data is biased.

Data: scikit-learn's bundled ``digits`` (1,797 x 64, 10 classes) and ``wine`` (178 x 13, 3 classes).
Each split (stratified, per seed): 45% agent pool, 25% trading set (market training and pool
fitting), 30% test set. Bias: Algorithm 2.2's annealed rejection applied to the class label, as in
the seed's synthetic task: agent ``i`` draws ``f_i(y) ~ U[0, 1]`` per class and keeps a pool point
with probability ``f_i(y)^beta / max_y f_i(y)^beta`` (beta = 0: no bias); each agent first takes a
random half of the pool so that agents differ even without bias. Ten agents, two per family:
logistic regression, Gaussian naive Bayes, k-nearest neighbours, a depth-limited tree, and a small
random forest. Agents' probabilities are floored at 1e-3 and renormalised (trees and k-NN output
zeros; exponential agents cannot hold a zero belief).

Metrics on the test set: mean negative log-likelihood (NLL, lower is better) and accuracy.

Markets are trained until the wealth stops moving (``max_i |dW_i| <= 1e-8`` per epoch, Algorithm
2.4; cap 300,000 epochs); the test NLL at epoch 200 is kept as well (the early-stopping sensitivity
row). Paired comparisons across seeds (paired t-test and Wilcoxon signed-rank) are computed by
:func:`paired_results`; every table is rebuilt from the saved per-seed records (``--from-json``).

Run: ``.venv/bin/python reproductions/market_simulation.py`` (full: 2 datasets x 3 biases x 10 seeds,
about 15 minutes on a loaded 2-core machine) or ``--short``; writes the plot
``reproductions/markets_wealth.png`` and the per-seed results ``reproductions/markets_results.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from markets import MarketPool  # noqa: E402

AGENT_FLOOR = 1e-3
ETAS = (2.0, 5.0, 10.0)


def _families():
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.tree import DecisionTreeClassifier

    return [
        ("logreg", lambda s: LogisticRegression(C=0.5, max_iter=300)),
        ("naive_bayes", lambda s: GaussianNB()),
        ("knn", lambda s: KNeighborsClassifier(n_neighbors=7)),
        ("tree", lambda s: DecisionTreeClassifier(max_depth=6, random_state=s)),
        ("forest", lambda s: RandomForestClassifier(n_estimators=25, max_depth=8, random_state=s)),
    ]


def load(name):
    from sklearn.datasets import load_digits, load_wine

    d = {"digits": load_digits, "wine": load_wine}[name]()
    return d.data.astype(float), d.target.astype(int)


def biased_subset(y, beta, rng):
    """Algorithm 2.2-style annealed rejection on the label: keep with prob f(y)^beta / max f^beta."""
    K = int(y.max()) + 1
    f = rng.uniform(0.0, 1.0, K)
    accept = (f / f.max()) ** beta
    half = rng.random(y.size) < 0.5
    keep = half & (rng.random(y.size) < accept[y])
    return np.flatnonzero(keep)


def agent_log_probs(models, classes_seen, X, K):
    out = np.empty((X.shape[0], len(models), K))
    for i, (m, cl) in enumerate(zip(models, classes_seen)):
        p = np.zeros((X.shape[0], K))
        p[:, cl] = m.predict_proba(X)
        p = np.maximum(p, AGENT_FLOOR)
        p /= p.sum(axis=1, keepdims=True)
        out[:, i, :] = np.log(p)
    return out


def nll_acc(log_pred, y):
    lp = log_pred - np.log(np.exp(log_pred).sum(axis=1, keepdims=True))
    return float(-lp[np.arange(y.size), y].mean()), float((lp.argmax(axis=1) == y).mean())


# ------------------------------------------------------------------------------------------------
# one (dataset, beta, seed) run
# ------------------------------------------------------------------------------------------------

EARLY_EPOCHS = 200  # the cap of the first version of this reproduction; reported as "early stopped"
MAIN_METHODS = [  # ranked in the tables (the extra rows below are derived or early-stopped variants)
    "best single agent",
    "simple average",
    "log market (linear pool)",
    "exponential market (log pool, equal)",
    *[f"isoelastic market eta={e:g}" for e in ETAS],
    "isoelastic market eta=5, online",
    "linear pool (ML)",
    "log pool (ML)",
    *[f"Rényi pool gamma={1 / e:g} (ML)" for e in ETAS],
]


def _market_eval(pool, L_te, yte, W):
    """Test NLL and accuracy of a trained market evaluated at wealth ``W`` (same agents)."""
    fitted = pool.agents_
    pool.agents_ = fitted.with_wealth(W)
    try:
        return nll_acc(pool.predict(L_te), yte)
    finally:
        pool.agents_ = fitted


TINY_WEALTH = 1e-300


def fit_market(u, L_tr, yt, *, max_epochs, wealth_tol):
    """``MarketPool(u, mode="batch", ...).fit(L_tr, yt)``, tolerating agents that go bankrupt.

    Long training can drive a losing log or isoelastic agent's wealth to exactly 0.0 (underflow:
    its wealth shrinks geometrically), which ``MarketPool.fit`` rejects when it rebuilds the agents
    (``check_wealth`` wants W > 0). Training itself (:func:`markets.training.train_market`, same
    options as ``MarketPool.fit``) is unchanged; such agents are given wealth 1e-300 for the test
    phase, which changes no price in double precision. Returns ``(pool, n_bankrupt)``.
    """
    from markets.agents import make_agents
    from markets.training import train_market

    pool = MarketPool(utilities=u, mode="batch", max_epochs=max_epochs, wealth_tol=wealth_tol)
    if u == "exp":  # exponential agents may hold any wealth
        return pool.fit(L_tr, yt), 0
    res = train_market(
        L_tr,
        yt,
        pool._agents(L_tr.shape[1]),
        mode="batch",
        max_epochs=max_epochs,
        wealth_tol=wealth_tol,
        tol=pool.tol,
        method=pool.method,
        floor=pool.floor,
    )
    W = res.wealth
    n_bankrupt = int((W <= 0).sum())
    pool.agents_ = make_agents(u, np.maximum(W, TINY_WEALTH), L_tr.shape[1])
    pool.wealth_, pool.wealth_history_, pool.n_epochs_, pool.converged_ = (
        W,
        res.wealth_history,
        res.n_epochs,
        res.converged,
    )
    pool.training_, pool.n_agents_, pool.n_floored_ = res, L_tr.shape[1], res.n_floored
    return pool, n_bankrupt


def run_one(dataset, beta, seed, *, max_epochs=300_000, wealth_tol=1e-8, exp_epochs=EARLY_EPOCHS, with_pools=True):
    """Train the agents, markets and pools for one (dataset, beta, seed); return per-method results.

    Batch markets run until the wealth changes by at most ``wealth_tol`` in an epoch (or ``max_epochs``);
    for each, the test NLL at epoch ``EARLY_EPOCHS`` (if it ran that long) is read off the wealth
    history, which is exactly what a run capped at ``EARLY_EPOCHS`` returns (same deterministic path).
    The exponential market's prices do not depend on the wealth (seed 000 Table 2.4), so it runs at
    most ``exp_epochs`` epochs.

    Returns ``(record, histories)``: ``record`` is JSON-serialisable: ``methods`` maps a method name to
    ``{"nll", "acc"}`` (test set; ``train_nll`` on the trading set for markets) and ``markets`` holds
    the convergence diagnostics (epochs, converged, last max |dW|, |dW| and NLL at epoch 200).
    """
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = load(dataset)
    K = int(y.max()) + 1
    rng = np.random.default_rng(seed)
    Xp, Xr, yp, yr = train_test_split(X, y, test_size=0.55, stratify=y, random_state=seed)
    Xt, Xte, yt, yte = train_test_split(Xr, yr, test_size=30 / 55, stratify=yr, random_state=seed)
    sc = StandardScaler().fit(Xp)
    Xp, Xt, Xte = sc.transform(Xp), sc.transform(Xt), sc.transform(Xte)

    models, seen, sizes = [], [], []
    for _fam_name, make in _families():
        for rep in range(2):
            idx = biased_subset(yp, beta, rng)
            if np.unique(yp[idx]).size < 2:  # a classifier needs two classes: take the whole half
                idx = np.flatnonzero(rng.random(yp.size) < 0.5)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = make(seed * 10 + rep).fit(Xp[idx], yp[idx])
            models.append(m)
            seen.append(m.classes_.astype(int))
            sizes.append(int(idx.size))
    L_tr = agent_log_probs(models, seen, Xt, K)
    L_te = agent_log_probs(models, seen, Xte, K)
    A = L_tr.shape[1]

    res, diag, histories = {}, {}, {}
    t_all = time.perf_counter()
    # best single agent, chosen on the trading set
    ll_tr = L_tr[np.arange(yt.size), :, yt].mean(axis=0)
    best = int(np.argmax(ll_tr))
    res["best single agent"] = nll_acc(L_te[:, best, :], yte)
    res["simple average"] = nll_acc(np.log(np.exp(L_te).mean(axis=1)), yte)
    # markets (batch, equal initial wealth)
    specs = [("log market (linear pool)", "log"), ("exponential market (log pool, equal)", "exp")]
    specs += [(f"isoelastic market eta={e:g}", e) for e in ETAS]
    train_nll = {}
    for name, u in specs:
        cap = exp_epochs if u == "exp" else max_epochs
        t0 = time.perf_counter()
        pool, n_bankrupt = fit_market(u, L_tr, yt, max_epochs=cap, wealth_tol=wealth_tol)
        h = pool.wealth_history_
        dW = np.abs(np.diff(h, axis=0)).max(axis=1)  # max_i |W_i(e) - W_i(e-1)|, e = 1..n_epochs
        res[name] = nll_acc(pool.predict(L_te), yte)
        train_nll[name] = nll_acc(pool.predict(L_tr), yt)[0]
        d = {
            "n_epochs": int(pool.n_epochs_),
            "converged": bool(pool.converged_),
            "dW_last": float(dW[-1]),
            "seconds": time.perf_counter() - t0,
            "train_nll": train_nll[name],
            "n_bankrupt": n_bankrupt,
        }
        if u != "exp" and pool.n_epochs_ >= EARLY_EPOCHS:
            d["dW_at_early"] = float(dW[EARLY_EPOCHS - 1])
            d["nll_at_early"], d["acc_at_early"] = (
                res[name] if pool.n_epochs_ == EARLY_EPOCHS else _market_eval(pool, L_te, yte, h[EARLY_EPOCHS])
            )
        elif u != "exp" and pool.converged_:  # converged before the early cap: the same market
            d["dW_at_early"] = 0.0
            d["nll_at_early"], d["acc_at_early"] = res[name]
        diag[name] = d
        histories[name] = h
    pool = MarketPool(utilities=5.0, mode="online", max_epochs=1).fit(L_tr, yt)
    res["isoelastic market eta=5, online"] = nll_acc(pool.predict(L_te), yte)
    # derived rows: eta = 10 stopped at 200 epochs; the isoelastic market whose eta fits the trading set best
    e10 = f"isoelastic market eta={ETAS[-1]:g}"
    if "nll_at_early" in diag[e10]:
        res[f"{e10}, {EARLY_EPOCHS} epochs"] = (diag[e10]["nll_at_early"], diag[e10]["acc_at_early"])
    iso = [f"isoelastic market eta={e:g}" for e in ETAS]
    best_iso = min(iso, key=lambda n: train_nll[n])
    res["isoelastic market, eta chosen on trading set"] = res[best_iso]
    if with_pools:
        try:
            from aggregators.linear import LinearPool

            fp = LinearPool().fit(L_tr, yt)
            res["linear pool (ML)"] = nll_acc(fp.predict(L_te), yte)
            train_nll["linear pool (ML)"] = nll_acc(fp.predict(L_tr), yt)[0]
        except Exception as e:  # pragma: no cover - depends on the other engineers' modules
            res["linear pool (ML)"] = (float("nan"), float("nan"))
            print("linear pool failed:", e)
        try:
            from aggregators.logpool import LogPool

            fp = LogPool().fit(L_tr, yt)
            res["log pool (ML)"] = nll_acc(fp.predict(L_te), yte)
            train_nll["log pool (ML)"] = nll_acc(fp.predict(L_tr), yt)[0]
        except Exception as e:  # pragma: no cover
            res["log pool (ML)"] = (float("nan"), float("nan"))
            print("log pool failed:", e)
        for e_ in ETAS:
            g = 1.0 / e_
            try:
                from aggregators.renyi import RenyiPool

                fp = RenyiPool(gamma=g).fit(L_tr, yt)
                res[f"Rényi pool gamma={g:g} (ML)"] = nll_acc(fp.predict(L_te), yte)
                train_nll[f"Rényi pool gamma={g:g} (ML)"] = nll_acc(fp.predict(L_tr), yt)[0]
            except Exception as e:  # pragma: no cover
                res[f"Rényi pool gamma={g:g} (ML)"] = (float("nan"), float("nan"))
                print("Rényi pool failed:", e)
    record = {
        "dataset": dataset,
        "beta": float(beta),
        "seed": int(seed),
        "methods": {n: {"nll": v[0], "acc": v[1]} for n, v in res.items()},
        "markets": diag,
        "train_nll": train_nll,  # trading-set NLL (the objective the markets' fixed points and the ML pools optimise)
        "info": {
            "agent_sizes": sizes,
            "best_agent": best,
            "best_eta": float(best_iso.split("=")[1]),
            "n_trading": int(yt.size),
            "n_test": int(yte.size),
            "A": A,
            "seconds": time.perf_counter() - t_all,
        },
    }
    return record, histories


# ------------------------------------------------------------------------------------------------
# statistics (everything below works on the saved records, so tables can be rebuilt from the JSON)
# ------------------------------------------------------------------------------------------------


def paired_test(a, b):
    """Paired comparison of per-seed values ``a`` and ``b`` (same seeds, same order).

    Returns ``n`` (pairs), ``mean`` of ``d = a - b``, its standard error, the paired t statistic
    ``mean / se`` with its two-sided p-value from Student's t with ``n - 1`` degrees of freedom, and the
    two-sided Wilcoxon signed-rank p-value (``scipy.stats.wilcoxon``: exact for small ``n`` without
    ties or zeros, normal approximation otherwise). Pairs with a NaN are dropped.
    """
    from scipy import stats

    a, b = np.asarray(a, float), np.asarray(b, float)
    ok = np.isfinite(a) & np.isfinite(b)
    d = a[ok] - b[ok]
    n = int(d.size)
    out = {
        "n": n,
        "mean": float(d.mean()) if n else float("nan"),
        "se": float("nan"),
        "t": float("nan"),
        "p_t": float("nan"),
        "p_wilcoxon": float("nan"),
        "n_negative": int((d < 0).sum()),
    }
    if n < 2:
        return out
    se = d.std(ddof=1) / np.sqrt(n)
    out["se"] = float(se)
    if se > 0:
        t = d.mean() / se
        out["t"] = float(t)
        out["p_t"] = float(2.0 * stats.t.sf(abs(t), n - 1))
    if np.any(d != 0):
        out["p_wilcoxon"] = float(stats.wilcoxon(d).pvalue)
    return out


COMPARISONS = [  # (label, a, b): d = NLL(a) - NLL(b) per seed; negative = a better
    ("isoelastic eta=10 vs log market", "isoelastic market eta=10", "log market (linear pool)"),
    ("isoelastic eta=10 vs exponential market", "isoelastic market eta=10", "exponential market (log pool, equal)"),
    (
        "isoelastic (eta chosen on trading set) vs best single agent",
        "isoelastic market, eta chosen on trading set",
        "best single agent",
    ),
    ("isoelastic eta=10 vs Rényi pool gamma=0.1 (Eq. 2.36)", "isoelastic market eta=10", "Rényi pool gamma=0.1 (ML)"),
    ("log pool (ML) vs isoelastic eta=10", "log pool (ML)", "isoelastic market eta=10"),
    # the same comparisons for the market stopped at 200 epochs, and the effect of the cap itself
    (
        "[200 epochs] isoelastic eta=10 vs log market",
        "isoelastic market eta=10, 200 epochs",
        "log market (linear pool)",
    ),
    (
        "[200 epochs] isoelastic eta=10 vs exponential market",
        "isoelastic market eta=10, 200 epochs",
        "exponential market (log pool, equal)",
    ),
    (
        "[200 epochs] isoelastic eta=10 vs Rényi pool gamma=0.1",
        "isoelastic market eta=10, 200 epochs",
        "Rényi pool gamma=0.1 (ML)",
    ),
    ("[200 epochs] log pool (ML) vs isoelastic eta=10", "log pool (ML)", "isoelastic market eta=10, 200 epochs"),
    ("isoelastic eta=10: converged vs 200 epochs", "isoelastic market eta=10", "isoelastic market eta=10, 200 epochs"),
]


def settings_of(records):
    out = []
    for r in records:
        k = (r["dataset"], r["beta"])
        if k not in out:
            out.append(k)
    return out


def per_seed(records, setting, method, field="nll"):
    rs = sorted((r for r in records if (r["dataset"], r["beta"]) == setting), key=lambda r: r["seed"])
    return np.array([r["methods"].get(method, {}).get(field, np.nan) for r in rs]), [r["seed"] for r in rs]


def paired_results(records):
    """Every comparison of ``COMPARISONS`` per setting and pooled over all settings (pairs = seeds)."""
    out = []
    sets = settings_of(records)
    for label, a, b in COMPARISONS:
        row = {"label": label, "a": a, "b": b, "settings": {}}
        pa, pb = [], []
        for s in sets:
            xa, sa = per_seed(records, s, a)
            xb, sb = per_seed(records, s, b)
            assert sa == sb
            row["settings"][f"{s[0]}, beta={s[1]:g}"] = paired_test(xa, xb)
            pa.append(xa)
            pb.append(xb)
        row["pooled"] = paired_test(np.concatenate(pa), np.concatenate(pb)) if pa else paired_test([], [])
        out.append(row)
    return out


def _fmt_p(p):
    return "–" if not np.isfinite(p) else (f"{p:.1e}" if p < 1e-3 else f"{p:.3f}")


def format_tables(records):
    lines = []
    for s in settings_of(records):
        names = [n for n in MAIN_METHODS if any(n in r["methods"] for r in records)]
        extra = sorted({n for r in records if (r["dataset"], r["beta"]) == s for n in r["methods"]} - set(names))
        nll = np.array([per_seed(records, s, n)[0] for n in names]).T  # (seeds, methods)
        S = nll.shape[0]
        lines.append(
            f"\n#### {s[0]}, beta = {s[1]:g} ({S} seed{'s' if S > 1 else ''}; mean ± s.e.; NLL lower is better)\n"
        )
        lines.append("| method | test NLL | test accuracy | rank by NLL (mean) |")
        lines.append("|---|---|---|---|")
        ranks = np.argsort(np.argsort(np.where(np.isnan(nll), np.inf, nll), axis=1), axis=1) + 1
        for j, n in enumerate(names + extra):
            x = per_seed(records, s, n)[0]
            xa = per_seed(records, s, n, "acc")[0]
            se = x.std(ddof=1) / np.sqrt(S) if S > 1 else 0.0
            sea = xa.std(ddof=1) / np.sqrt(S) if S > 1 else 0.0
            rk = f"{ranks[:, j].mean():.1f}" if j < len(names) else "–"
            lines.append(f"| {n} | {x.mean():.4f} ± {se:.4f} | {xa.mean():.3f} ± {sea:.3f} | {rk} |")
    return "\n".join(lines)


def format_convergence(records):
    lines = [
        "\n| setting | market | converged | epochs (median, max) | max abs dW at epoch 200 (median, max) | "
        "test NLL at 200 epochs | test NLL converged |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in settings_of(records):
        rs = [r for r in records if (r["dataset"], r["beta"]) == s]
        for m in ["log market (linear pool)", *[f"isoelastic market eta={e:g}" for e in ETAS]]:
            ds = [r["markets"][m] for r in rs if m in r["markets"]]
            if not ds:
                continue
            ep = np.array([d["n_epochs"] for d in ds])
            dw = np.array([d.get("dW_at_early", np.nan) for d in ds])
            ne = np.array([d.get("nll_at_early", np.nan) for d in ds])
            nc = np.array([r["methods"][m]["nll"] for r in rs])
            lines.append(
                f"| {s[0]}, beta={s[1]:g} | {m} | {sum(d['converged'] for d in ds)}/{len(ds)} | "
                f"{np.median(ep):.0f}, {ep.max()} | {np.nanmedian(dw):.1e}, {np.nanmax(dw):.1e} | "
                f"{np.nanmean(ne):.4f} | {nc.mean():.4f} |"
            )
    return "\n".join(lines)


def format_paired(records):
    pr = paired_results(records)
    lines = []
    for row in pr:
        lines.append(f"\n**{row['label']}** (d = NLL({row['a']}) − NLL({row['b']}); negative: the first is better)\n")
        lines.append("| setting | pairs | mean d ± s.e. | a better in | paired t p | Wilcoxon p |")
        lines.append("|---|---|---|---|---|---|")
        for k, t in list(row["settings"].items()) + [("pooled (all settings)", row["pooled"])]:
            lines.append(
                f"| {k} | {t['n']} | {t['mean']:+.4f} ± {t['se']:.4f} | {t['n_negative']}/{t['n']} | "
                f"{_fmt_p(t['p_t'])} | {_fmt_p(t['p_wilcoxon'])} |"
            )
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# plot and driver
# ------------------------------------------------------------------------------------------------


def plot_wealth(histories, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n in histories if not n.startswith("exponential")]
    fig, axes = plt.subplots(1, len(names) + 1, figsize=(3.4 * (len(names) + 1), 3.2))
    for ax, n in zip(axes, names):
        h = histories[n]
        for i in range(h.shape[1]):
            ax.plot(np.arange(h.shape[0]), h[:, i], lw=1)
        ax.axvline(EARLY_EPOCHS, color="0.6", ls=":", lw=1)
        ax.set_title(f"{n} ({h.shape[0] - 1} epochs)", fontsize=8)
        ax.set_xlabel("epoch")
        ax.set_xscale("symlog", linthresh=1)
        ax.set_xlim(0, h.shape[0])
        ax.set_ylim(-0.02, max(0.5, float(np.max([histories[m].max() for m in names]))) + 0.02)
    axes[0].set_ylabel("wealth")
    ax = axes[-1]
    for n in names:
        h = histories[n]
        dW = np.abs(np.diff(h, axis=0)).max(axis=1)
        ax.plot(np.arange(1, h.shape[0]), np.maximum(dW, 1e-16), lw=1, label=n.replace("isoelastic market ", ""))
    ax.axvline(EARLY_EPOCHS, color="0.6", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_title("max_i |W_i(e) - W_i(e-1)| per epoch", fontsize=8)
    ax.set_xlabel("epoch")
    ax.legend(fontsize=6)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None, *, short=None):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description="ML markets with biased real classifiers")
    p.add_argument("--short", action="store_true", help="one dataset, one bias, one seed, few epochs")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--betas", type=float, nargs="+", default=[0.0, 2.0, 4.0])
    p.add_argument("--datasets", nargs="+", default=["digits", "wine"])
    p.add_argument("--max-epochs", type=int, default=300_000, help="cap on market training epochs")
    p.add_argument("--wealth-tol", type=float, default=1e-8, help="stop when max |dW| over an epoch is below")
    p.add_argument("--plot", default=os.path.join(here, "markets_wealth.png"))
    p.add_argument("--json", default=None, help="per-seed results (default: reproductions/markets_results.json)")
    p.add_argument("--from-json", default=None, help="rebuild the tables and tests from saved results; no run")
    args = p.parse_args(argv if argv is not None else ([] if short else None))
    if short or args.short:
        args.seeds, args.betas, args.datasets = 1, [3.0], ["wine"]
        args.max_epochs, pools, args.plot, exp_epochs = 20, False, None, 20
    else:
        pools, exp_epochs = True, EARLY_EPOCHS
        if args.json is None and args.from_json is None:
            args.json = os.path.join(here, "markets_results.json")
    t0 = time.perf_counter()
    if args.from_json:
        with open(args.from_json) as f:
            saved = json.load(f)
        records = saved["records"]
    else:
        records, plot_hist = [], None
        options = dict(max_epochs=args.max_epochs, wealth_tol=args.wealth_tol, exp_epochs=exp_epochs, with_pools=pools)
        for ds in args.datasets:
            for beta in args.betas:
                for seed in range(args.seeds):
                    rec, hist = run_one(ds, beta, seed, **options)
                    records.append(rec)
                    print(
                        f"{ds} beta={beta:g} seed={seed}: {rec['info']['seconds']:.1f} s", file=sys.stderr, flush=True
                    )
                    if ds == "digits" and beta == max(args.betas) and seed == 0:
                        plot_hist = hist
        if args.plot and plot_hist is not None:
            plot_wealth(
                plot_hist,
                args.plot,
                f"digits, beta={max(args.betas):g}, seed 0: wealth of 10 agents over epochs (dotted: epoch 200)",
            )
        if args.json:
            with open(args.json, "w") as f:
                json.dump(
                    {
                        "command": " ".join(["reproductions/market_simulation.py", *(argv or sys.argv[1:])]),
                        "config": {
                            "seeds": args.seeds,
                            "betas": args.betas,
                            "datasets": args.datasets,
                            "max_epochs": args.max_epochs,
                            "wealth_tol": args.wealth_tol,
                            "exp_epochs": exp_epochs,
                            "early_epochs": EARLY_EPOCHS,
                            "etas": list(ETAS),
                            "agent_floor": AGENT_FLOOR,
                        },
                        "seconds": time.perf_counter() - t0,
                        "records": records,
                    },
                    f,
                    indent=1,
                )
    text = format_tables(records)
    print(text)
    if len({r["seed"] for r in records}) > 1:
        print("\n### Market convergence\n" + format_convergence(records))
        print("\n### Paired tests across seeds\n" + format_paired(records))
    print(f"\n(total {time.perf_counter() - t0:.0f} s)")
    return records


if __name__ == "__main__":
    main()
