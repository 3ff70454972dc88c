"""Aggregating the submissions of a competition: the reason Agora exists (seed 000, 2.7.3.1).

The organiser's labelled validation part (the public items: the seed learns the aggregation
parameters on its 20,000 validation pixels and reports results on the 20,000 test pixels) is used to
fit every pool on the submissions; each pool is then scored on the private part, split in 10
subsets for the mean ± std and the one-sided p-value against the linear pool of Table 2.3.

Pools come from :func:`aggregators.registry.make_pool` (``topk``, ``power_bma``, ``linear``,
``log``, ``renyi``); the isoelastic market from :mod:`evaluation.market`. A method that fails is
reported as a row with an ``error`` instead of sinking the whole run.

The service runs :func:`aggregate_submissions` on a competition's stored submissions; a researcher
can call it directly on arrays::

    from evaluation.aggregation import aggregate_submissions
    result = aggregate_submissions(val_log_probs, val_y, test_log_probs, test_y)
    print(result["rows"])  # Table 2.3

Per-submission credit: the learnt weight of the log pool and of the chosen Rényi pool (Fig. 2.6),
the leave-one-out gain in private perplexity of the log pool (perplexity without the submission
minus perplexity with it: positive means the submission helps), and the market wealth.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from aggregators.metrics import log_loss, perplexity
from aggregators.registry import make_pool
from aggregators.renyi_pool import secant_start
from aggregators.validation import as_floored_log_probs
from evaluation.leave_one_out import loo_log_pool_perplexities
from solvers.errors import InputError
from solvers.progress import ProgressFn, report, scaled

from .market import MAX_EPOCHS as MARKET_MAX_EPOCHS
from .market import fit_market
from .split import private_subsets
from .table import subset_log_losses, table_row
from .weight_posterior import credit_bands


def eta_grid(eta_min: float = 1.5, eta_max: float = 100.0, n_points: int = 7) -> tuple[float, ...]:
    """``n_points`` values of η = 1/γ spaced evenly in log η from ``eta_min`` to ``eta_max`` (3
    significant digits): the axis of Fig. 2.5a (seed 000), where perplexity is plotted against η.
    η = 1 is the linear pool (Eq. 2.34 with γ = 1) and η → ∞ approaches the log pool."""
    if not 1.0 <= eta_min < eta_max or int(n_points) < 2:
        raise InputError("etas", f"need 1 <= eta_min < eta_max and n_points >= 2; got {eta_min}, {eta_max}, {n_points}")
    return tuple(float(f"{e:.3g}") for e in np.geomspace(eta_min, eta_max, int(n_points)))


DEFAULT_ETAS: tuple[float, ...] = eta_grid()
"""η = 1/γ of the Rényi sweep: 7 log-spaced points from 1.5 to 100, enough to draw Fig. 2.5a's curve.
η = 1 is the linear pool and η → ∞ the log pool, both fitted anyway: the sweep adds the linear
pool's point at η = 1 (8 points in all)."""
RENYI_OPTIONS = {"tol": 1e-5, "max_iter": 40, "fixed_point_tol": 1e-9}
"""Solver settings of the sweep's Rényi fits (each warm-started from the previous γ's weights)."""

METHODS: tuple[str, ...] = ("average", "topk", "power_bma", "linear", "log", "renyi", "market")
LABELS = {
    "best_single": "Best single entry",
    "average": "Simple average",
    "topk": "Top-k average",
    "power_bma": "Power BMA (heuristic)",
    "linear": "Linear pool",
    "log": "Log pool",
    "renyi": "Rényi pool",
    "market": "Isoelastic market",
}
LOO_REFIT_BUDGET = 20_000_000
"""The leave-one-out gain refits the log pool without each submission when
``n_items x n_agents x n_classes x n_agents`` of the validation part is at most this; above it the
fitted weights are renormalised without the submission (no refit), which is cheap but ignores how
the others' weights would adapt."""


def fit_method(
    method: str, val_lp: np.ndarray, val_y: np.ndarray, test_lp: np.ndarray, progress: ProgressFn | None = None
) -> tuple[Any, float, np.ndarray]:
    """One pool of ``method`` fitted on the public part: the pool, its public perplexity and its
    aggregate on the private part (a Dask task when the run has a cluster)."""
    pool = make_pool(method)
    val = pool.prepare(val_lp)  # validated once for the fit and the score
    pool.fit(val, val_y, progress=progress)
    return pool, float(np.exp(-pool.score(val, val_y))), pool.predict(test_lp)


def sweep_point(
    val_lp: Any,
    val_y: np.ndarray,
    test_lp: Any,
    test_y: np.ndarray,
    eta: float,
    w0: list[float] | None = None,
    progress: ProgressFn | None = None,
    client: Any = None,
) -> tuple[Any, float, np.ndarray, float]:
    """One point of Fig. 2.5a: the Rényi pool at ``gamma = 1/eta`` fitted on the public part from the
    weights ``w0`` (the sweep's warm start); the pool, its public perplexity, its aggregate on the
    private part and the private perplexity.

    With a ``client``, ``val_lp`` and ``test_lp`` are item blocks on its workers
    (:class:`cluster.scattered.Scattered`): the fit's passes (:func:`cluster.chunked_fit.fit_chunked`)
    and the predictions run there, block by block, with the same results."""
    pool = make_pool("renyi", gamma=1.0 / float(eta), weights=w0, **RENYI_OPTIONS)
    if client is None:
        pool.fit(val_lp, val_y, progress=progress)
        val_agg, pred = pool.predict(val_lp), pool.predict(test_lp)
    else:
        from cluster.chunked_fit import fit_chunked
        from cluster.scattered import predict_blocks

        fit_chunked(pool, val_lp, val_y, client=client, progress=progress)
        val_agg, pred = predict_blocks(pool, val_lp, client), predict_blocks(pool, test_lp, client)
    public = float(val_agg[np.arange(len(val_y)), np.asarray(val_y)].mean())  # pool.score on val_lp
    return pool, float(np.exp(-public)), pred, perplexity(pred, test_y)


def sweep_floor() -> float | None:
    """The floor of the sweep's Rényi pools: the data validated and floored with it once serve every
    point (:func:`warm_points`; on a cluster :func:`cluster.scattered.floored_blocks`)."""
    return make_pool("renyi", **RENYI_OPTIONS).floor


def warm_points(
    val_lp: Any,
    val_y: np.ndarray,
    test_lp: Any,
    test_y: np.ndarray,
    etas: Sequence[float],
    w0: list[float] | None = None,
    progress: ProgressFn | None = None,
    client: Any = None,
) -> Iterator[tuple[Any, float, np.ndarray, float]]:
    """The warm chain of Fig. 2.5a: :func:`sweep_point` at each ``eta`` in the order given, the first
    from the weights ``w0``, the second from the first point's weights, each later one from the secant
    through the last two points' weights in ``log γ`` (:func:`aggregators.renyi_pool.secant_start`, as
    ``RenyiPool(gamma="grid")`` does) (``progress`` goes from 0 to 1 over the chain). ``client`` as in
    :func:`sweep_point`.

    In this process the two arrays are validated and floored once, for every point's fit and
    predictions (each took its own pass and copy of them before session 12)."""
    n = len(etas)
    if client is None and n:
        val_lp, test_lp = (as_floored_log_probs(x, floor=sweep_floor()) for x in (val_lp, test_lp))
    path: list[tuple[float, np.ndarray]] = []  # (log γ, weights) of the points so far
    for i, eta in enumerate(etas):
        t = -float(np.log(eta))
        if len(path) >= 2:
            w0 = secant_start(path[-2], path[-1], t, path[-1][1].size).tolist()
        point = sweep_point(val_lp, val_y, test_lp, test_y, eta, w0, scaled(progress, i / n, (i + 1) / n), client)
        w0 = _weights(point[0])
        path = path + [(t, np.asarray(w0, dtype=np.float64))] if w0 is not None else []
        yield point


def loo_perplexity(val_lp: np.ndarray, val_y: np.ndarray, test_lp: np.ndarray, test_y: np.ndarray, a: int) -> float:
    """The log pool refitted without submission ``a``: its private perplexity."""
    keep = np.arange(val_lp.shape[1]) != a
    return perplexity(make_pool("log").fit(val_lp[:, keep], val_y).predict(test_lp[:, keep]), test_y)


def _public_params(pool) -> dict:
    """The hyper-parameters a fitted pool chose, JSON-ready (k, alpha, gamma...)."""
    out = {}
    for name in ("k_", "alpha_", "gamma_", "k", "alpha", "gamma"):
        v = getattr(pool, name, None)
        if v is None or name.rstrip("_") in out:
            continue
        if np.ndim(v) == 0 and isinstance(v, (int, float, np.integer, np.floating)):
            out[name.rstrip("_")] = float(v)
    return out


def _weights(pool) -> list[float] | None:
    w = getattr(pool, "weights_", None)
    if w is None:
        return None
    w = np.asarray(w, dtype=float).ravel()
    return [float(x) for x in w]


def progress_plan(
    methods: Sequence[str],
    n_etas: int,
    n_agents: int,
    *,
    loo: bool = True,
    loo_refit: bool = True,
    bands: bool = True,
    market_epochs: int = 200,
) -> list[tuple[str, float]]:
    """The steps of a run and their weights in its progress fraction: ``(name, weight)``: 1 per
    plain method and per Rényi fit, 3 per 200 epochs of the market's cap (a market runs to its cap
    unless it converges), ``n_agents / 4`` for the leave-one-out refits. With a log pool and
    ``bands`` the HMC credible bands of its weights (on at most :data:`evaluation.weight_posterior.BANDS_BUDGET` numbers of the
    validation part, subsampled above) are a step of weight 10, about 3.4 times the 200-epoch market's measured cost
    (``benchmarks/results/aggregation-eta.md``)."""
    market = 3.0 * market_epochs / 200.0
    steps = [(m, {"renyi": float(n_etas), "market": market}.get(m, 1.0)) for m in methods]
    if bands and "log" in methods:
        steps.append(("bands", 10.0))
    if loo:
        steps.append(("loo", n_agents / 4.0 if loo_refit else 0.2))
    return steps


def stage_at(plan: Sequence[tuple[str, float]], fraction: float) -> tuple[str, float]:
    """Which step of ``plan`` a run's progress ``fraction`` falls in, and how far into it (0..1):
    what the organiser sees as "renyi 2/4", "market epoch 12/30" while the run goes."""
    total = sum(w for _, w in plan) or 1.0
    at = min(1.0, max(0.0, fraction)) * total
    for name, w in plan:
        if at < w or name == plan[-1][0]:
            return name, (min(1.0, at / w) if w else 1.0)
        at -= w
    return "done", 1.0


def aggregate_submissions(
    val_lp: np.ndarray,
    val_y: np.ndarray,
    test_lp: np.ndarray,
    test_y: np.ndarray,
    *,
    seed: int = 0,
    etas: Sequence[float] = DEFAULT_ETAS,
    methods: Sequence[str] = METHODS,
    loo: bool = True,
    progress: ProgressFn | None = None,
    predict_lp: np.ndarray | None = None,
    market_max_epochs: int = MARKET_MAX_EPOCHS,
    client: Any = None,
    sweep_chains: Any = "auto",
) -> dict[str, Any]:
    """Fit every pool on ``(val_lp, val_y)`` and score it on ``(test_lp, test_y)``.

    Parameters
    ----------
    val_lp, test_lp : normalised log-probabilities ``(n_items, n_agents, n_classes)``; the agents
        (submissions) are the same columns in both.
    val_y, test_y : integer labels.
    seed : fixes the 10 private subsets.
    client : ``None``, or a Dask client or scheduler address: the fits then run as Dask tasks
        (:class:`cluster.fanout.CompetitionTasks`): every method but the market, and the leave-one-out
        refits, all submitted at the start; the γ sweep as ``sweep_chains`` says.
    sweep_chains : how the γ sweep runs on a cluster (:func:`cluster.fanout.resolve_chains`; no effect
        without one). ``"auto"``: one warm chain per worker, each one task on that worker's copy of the
        data, when three times the public and private arrays fit in every worker's memory limit, else
        data-parallel; ``None``: data-parallel (the warm chain here, each γ's fit over item blocks on
        every worker); an integer: that many chains. Data-parallel gives the results of a run without
        the cluster. With chains, the first chain's points are those of the serial sweep bit for bit;
        each later chain starts from the log pool's fitted weights (when ``"log"`` is a method; else
        the pool's own start) instead of the previous γ's weights, so its
        points (and the Rényi row and credit when the chosen γ is among them) agree with the serial
        run's to the sweep's solver tolerance (``RENYI_OPTIONS["tol"]``), and so does everything else.

    Returns a JSON-ready dict: ``rows`` (Table 2.3: one per method plus the best single entry, with
    ``public_perplexity`` on the validation part, ``private_perplexity`` on the whole private
    part and the subset statistics), ``gamma_sweep`` (Fig. 2.5a), ``credit`` (per submission) and
    ``market`` (wealth over epochs) when a market ran. With ``predict_lp`` (the submissions on
    every item, ``(n, n_agents, n_classes)``) it also holds ``predictions``: each fitted method's
    aggregate on those items (and the best single entry's), as arrays, and ``models``: the fitted
    pools by method, for the caller to store (the only keys that are not JSON).
    """
    t0 = time.perf_counter()
    n_agents = val_lp.shape[1]
    subsets = private_subsets(len(test_y), seed)
    loo_refit = val_lp.size * n_agents <= LOO_REFIT_BUDGET
    steps = progress_plan(
        methods,
        len(etas),
        n_agents,
        loo=loo,
        loo_refit=loo_refit,
        bands=True,
        market_epochs=market_max_epochs,
    )
    total = sum(w for _, w in steps) or 1.0
    done = [0.0]
    high = [0.0]  # the progress reported so far: it never goes back, whatever a step's own callback does

    def emit(fraction: float) -> None:
        high[0] = max(high[0], fraction)
        report(progress, high[0])

    def sub(weight: float) -> Callable[[float], None]:
        start = done[0] / total

        def cb(f: float) -> None:
            emit(start + weight / total * min(1.0, max(0.0, f)))

        return cb

    def finish(weight: float) -> None:
        done[0] += weight
        emit(done[0] / total)

    remote = None
    if client is not None:
        from cluster.fanout import CompetitionTasks

        loo_tasks = loo and loo_refit and "log" in methods and n_agents > 1
        remote = CompetitionTasks(
            client, (val_lp, val_y, test_lp, test_y), methods, loo=loo_tasks, sweep_chains=sweep_chains
        )
    results: dict[str, dict] = {}
    test_preds: dict[str, np.ndarray] = {}

    # the best single entry, ranked on the validation (public) part as the seed does
    val_ppl_agents = np.array([perplexity(val_lp[:, a], val_y) for a in range(n_agents)])
    best = int(np.argmin(val_ppl_agents))
    test_preds["best_single"] = test_lp[:, best]
    results["best_single"] = {"params": {"submission_index": best}, "public_perplexity": float(val_ppl_agents[best])}

    gamma_sweep: list[dict] = []
    fitted: dict[str, Any] = {}
    for method, weight in steps:
        if method in ("bands", "loo"):
            continue
        t = time.perf_counter()
        try:
            if method == "renyi":
                best_val = np.inf
                cb = sub(weight)
                w0 = _weights(fitted["linear"]) if "linear" in fitted else None
                if "linear" in test_preds:  # η = 1: the Rényi pool is the linear pool
                    gamma_sweep.append(
                        {
                            "eta": 1.0,
                            "gamma": 1.0,
                            "public_perplexity": results["linear"]["public_perplexity"],
                            "private_perplexity": perplexity(test_preds["linear"], test_y),
                        }
                    )
                order = sorted(float(e) for e in etas)
                if remote is None:
                    points = warm_points(val_lp, val_y, test_lp, test_y, order, w0, cb)
                else:
                    # later chains start from the log pool's weights (the limit eta -> infinity)
                    w_top = _weights(fitted["log"]) if "log" in fitted else None
                    points = remote.sweep(order, w0, cb, w_top=w_top)
                for i, (eta, (pool, pv, pred, pt)) in enumerate(zip(order, points)):
                    gamma = 1.0 / eta
                    gamma_sweep.append({"eta": eta, "gamma": gamma, "public_perplexity": pv, "private_perplexity": pt})
                    if pv < best_val:
                        best_val, fitted["renyi"], test_preds["renyi"] = pv, pool, pred
                        results["renyi"] = {"params": {"gamma": gamma, "eta": float(eta)}, "public_perplexity": pv}
                    cb((i + 1) / len(etas))
            elif method == "market":
                eta = results.get("renyi", {}).get("params", {}).get("eta", 10.0)
                pred, info = fit_market(
                    val_lp, val_y, test_lp, eta=eta, max_epochs=market_max_epochs, progress=sub(weight)
                )
                test_preds["market"] = pred
                fitted["market"] = info
                results["market"] = {"params": info.get("params", {}), "public_perplexity": info["public_perplexity"]}
            else:
                if remote is None:
                    pool, pv, test_preds[method] = fit_method(method, val_lp, val_y, test_lp, sub(weight))
                else:
                    pool, pv, test_preds[method] = remote.fits[method].result()
                fitted[method] = pool
                results[method] = {"params": _public_params(pool), "public_perplexity": pv}
        except Exception as exc:  # noqa: BLE001 - one failing method must not sink the run
            results[method] = {"error": f"{exc.__class__.__name__}: {exc}"}
        results[method]["seconds"] = round(time.perf_counter() - t, 3)
        finish(weight)

    # Table 2.3
    baseline = None
    if "linear" in test_preds:
        baseline = subset_log_losses(test_preds["linear"], test_y, subsets)
    rows = []
    for key in ["best_single", *methods]:
        if key not in results:
            continue
        row = {"method": key, "label": LABELS.get(key, key), **results[key]}
        if key in test_preds:
            ll = subset_log_losses(test_preds[key], test_y, subsets)
            row["private_perplexity"] = perplexity(test_preds[key], test_y)
            row["private_log_loss"] = log_loss(test_preds[key], test_y)
            row.update(table_row(ll, None if key == "linear" else baseline))
            if key == "linear":
                row.update(diff_mean=0.0, diff_std=0.0, p_value=None)
        rows.append(row)

    # credit per submission
    credit = [{"index": a, "public_perplexity": float(val_ppl_agents[a])} for a in range(n_agents)]
    for key, name in (("log", "weight_log"), ("renyi", "weight_renyi"), ("linear", "weight_linear")):
        w = _weights(fitted[key]) if key in fitted else None
        if w is not None and len(w) == n_agents:
            for a in range(n_agents):
                credit[a][name] = w[a]
    # the log pool's credible bands for the weight chart (evaluation.weight_posterior)
    bands = "no log pool in this run"
    if "log" in fitted:
        cb = sub(dict(steps).get("bands", 0.0))
        bands = credit_bands(credit, fitted["log"], val_lp, val_y, progress=cb)
    finish(dict(steps).get("bands", 0.0))
    if "market" in fitted and "wealth" in fitted["market"]:
        for a in range(n_agents):
            credit[a]["market_wealth"] = float(fitted["market"]["wealth"][a])
    loo_mode = None
    if loo and "log" in fitted and n_agents > 1:
        cb = sub(dict(steps)["loo"])
        base_ppl = perplexity(test_preds["log"], test_y)
        refit = loo_refit
        loo_mode = "refit" if refit else "renormalised"
        w_all = np.asarray(fitted["log"].weights_, dtype=float)
        try:
            if refit and remote is not None:  # the refits are independent: one Dask task each
                for a, ppl in enumerate(remote.client.gather(remote.loo)):
                    credit[a]["loo_gain"] = ppl - base_ppl
            if not refit:  # every submission's pool in one pass (evaluation.leave_one_out)
                for a, ppl in enumerate(loo_log_pool_perplexities(test_lp, test_y, w_all)):
                    credit[a]["loo_gain"] = float(ppl) - base_ppl
                cb(1.0)
            for a in range(n_agents if remote is None and refit else 0):
                credit[a]["loo_gain"] = loo_perplexity(val_lp, val_y, test_lp, test_y, a) - base_ppl
                cb((a + 1) / n_agents)
        except Exception as exc:  # noqa: BLE001 - a failing refit loses the gains, not the table
            loo_mode = f"failed: {exc.__class__.__name__}: {exc}"
        finish(dict(steps)["loo"])

    out: dict[str, Any] = {
        "rows": rows,
        "gamma_sweep": gamma_sweep,
        "credit": credit,
        "loo_mode": loo_mode,
        "weight_bands": bands,
        "n_validation": int(len(val_y)),
        "n_private": int(len(test_y)),
        "n_subsets": len(subsets),
        "n_agents": int(n_agents),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    if "market" in fitted:
        out["market"] = {k: v for k, v in fitted["market"].items() if k in ("wealth_history", "params")}
    if predict_lp is not None:
        # the fitted pools, the market's estimator included
        out["models"] = {k: m.get("model") if isinstance(m, dict) else m for k, m in fitted.items()}
        out["predictions"] = {"best_single": np.ascontiguousarray(predict_lp[:, best])}
        for key, model in fitted.items():
            model = model.get("model") if isinstance(model, dict) else model
            if model is not None:
                out["predictions"][key] = np.asarray(model.predict(predict_lp), dtype=np.float64)
    if remote is not None:
        remote.cancel()  # the refits of a run whose log pool failed
    report(progress, 1.0)
    return out
