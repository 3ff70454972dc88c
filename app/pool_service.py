"""Pools as stored resources: fit (inline or as a job), restore, predict, views.

The numerical work is the library's (:func:`aggregators.registry.make_pool`, the estimators'
``fit``/``predict``, :mod:`aggregators.metrics`); this module moves data between HTTP, the
database and the estimators.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from aggregators.registry import make_pool, pool_class
from aggregators.renyi_pool import DEFAULT_GAMMA_GRID
from aggregators.validation import as_labels
from evaluation.metrics import metrics_of
from evaluation.weight_posterior import fit_posterior
from markets.estimator import MarketPool
from solvers.errors import InputError
from solvers.progress import scaled
from solvers.registry import available, info

from . import estimator_store as store
from .arrays import delete_blobs, load_blobs, save_blob
from .errors import ProblemError
from .jobs import JobContext, handler, on_end
from .models import JobRow, PoolRow, aware, utcnow
from .signatures import check_kwargs, model_of


def build_params(method: str, gamma: Any, solver: str | None, params: dict[str, Any]) -> dict[str, Any]:
    """Estimator hyper-parameters from the request: ``gamma`` a number (fixed), a list (a sweep:
    the estimator's grid mode over those values) or a mode name; ``solver`` by name."""
    p = dict(params)
    if gamma is not None:
        if isinstance(gamma, list):
            p["gamma"] = "grid"
            p["gamma_grid"] = gamma
        else:
            p["gamma"] = gamma
    if solver is not None:
        p["solver"] = solver
    return p


def check_params(method: str, solver: str | None, params: dict[str, Any]) -> None:
    """Type-check a pool request at the edge: ``params`` against the estimator's signature,
    ``solver`` against the registry, ``params.solver_options`` against that solver's signature
    (each a 422 naming its field)."""
    init = pool_class(method).__init__
    owner = pool_class(method).__name__
    check_kwargs(init, params, "params", owner)
    taken = model_of(init).model_fields
    if solver is not None and "solver" not in taken:
        raise InputError("solver", f"{owner} does not use a solver", code="unknown_parameter")
    name = (
        solver if solver is not None else params.get("solver", taken["solver"].default if "solver" in taken else None)
    )
    if name is None or name == "auto":
        return
    field = "solver" if solver is not None else "params.solver"
    try:
        fn = info(name).fn
    except InputError:
        raise InputError(
            field, f"unknown solver {name!r}; known: {available()} or 'auto'", code="unknown_solver"
        ) from None
    if params.get("solver_options"):
        check_kwargs(fn, params["solver_options"], "params.solver_options", f"solver {name!r}")


def check_posterior(method: str, posterior: Any, sample_weight: Any, background: bool | None) -> None:
    """A weight posterior is offered for the log, linear and Rényi (at its fitted γ) pools, without
    sample weights, as a job."""
    if posterior is None:
        return
    if method not in ("log", "linear", "renyi"):
        raise InputError("posterior", f"is offered for the 'log', 'linear' and 'renyi' pools; got {method!r}")
    if sample_weight is not None:
        raise InputError("posterior", "does not take sample_weight (the likelihood counts every item once)")
    if background is False:
        raise InputError("background", "a fit with a posterior runs as a background job; leave background unset")


def work_size(n_items: int, n_agents: int, n_classes: int, params: dict[str, Any]) -> int:
    """``n_items x n_agents x n_classes``, times the number of γ values of a sweep."""
    g = params.get("gamma_grid")
    if g is None and isinstance(params.get("gamma"), str):
        g = DEFAULT_GAMMA_GRID
    sweep = len(g) if isinstance(g, (list, tuple)) else 1
    return int(n_items) * int(n_agents) * int(n_classes) * max(1, sweep)


@handler("pool_fit")
def fit_pool(ctx: JobContext) -> dict[str, Any]:
    """Fit the pool described by ``ctx.spec`` on ``ctx.inputs`` and store it under ``spec['pool_id']``."""
    spec = ctx.spec
    pool, values, arrays = fit(
        spec, ctx.inputs["predictions"], ctx.inputs["labels"], ctx.progress, ctx.inputs.get("sample_weight")
    )
    with ctx.db.sessions() as s:
        row = s.get(PoolRow, spec["pool_id"])
        if row is None:  # deleted while fitting
            return {"pool_id": spec["pool_id"], "deleted": True}
        store_fit(s, row, values, arrays)
        s.commit()
    _cache_put(spec["pool_id"], pool)
    return {"pool_id": spec["pool_id"]}


def fit(
    spec: dict[str, Any],
    lp: np.ndarray,
    y: np.ndarray,
    progress: Any = None,
    sample_weight: np.ndarray | None = None,
) -> tuple[Any, dict[str, Any], dict]:
    """Fit the pool of ``spec`` (with per-item ``sample_weight``): the estimator, the row's new column
    values and its arrays."""
    pool = make_pool(spec["method"], **spec.get("params", {}))
    kind = spec.get("kind", "log_probs")
    post = spec.get("posterior")
    fit_progress = scaled(progress, 0.0, 0.1) if post else progress
    pool.fit(lp, y, sample_weight=sample_weight, kind=kind, progress=fit_progress)
    if post:  # stored with the pool's learnt state (posterior_, posterior_weights_)
        fit_posterior(pool, lp, y, kind=kind, progress=scaled(progress, 0.1, 1.0), **post)
    agg = pool.predict(lp, kind=kind)
    # JSON columns cannot hold inf/NaN (PostgreSQL refuses them): non-finite metrics become null
    metrics = store.public(store.jsonable({"validation": metrics_of(agg, np.asarray(pool_labels(y, agg)))}))
    st, arrays = store.dump(pool)
    result = st.get("fit_result_")
    values = {
        "status": "ready",
        "state": st,
        "metrics": metrics,
        "fit": store.public(result) if result is not None else {},
        "n_items": int(agg.shape[0]),
        "n_agents": int(pool.n_agents_),
        "n_classes": int(pool.n_classes_),
    }
    return pool, values, arrays


def store_fit(s: Session, row: PoolRow, values: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """Write a fit's values and arrays on ``row`` (the caller commits)."""
    for k, v in values.items():
        setattr(row, k, v)
    for name, arr in arrays.items():
        save_blob(s, "pool", row.id, name, arr)


def fitted(pid: str, pool: Any) -> None:
    """Remember a pool fitted in this process (predictions need not restore it)."""
    _cache_put(pid, pool)


def pool_labels(y: Any, agg: np.ndarray) -> np.ndarray:
    return as_labels(y, agg.shape[0], agg.shape[1])


@on_end("pool_fit")
def _pool_fit_ended(s: Session, jid: str, spec: dict[str, Any], state: str, error: dict[str, Any] | None) -> None:
    row = s.get(PoolRow, spec["pool_id"])
    if row is not None:
        row.status = "failed"
        row.error = error or {"detail": f"fit {state}"}


# -- restoring fitted pools (cached: a pool never changes once fitted) ---------------------------------
_CACHE: OrderedDict[str, Any] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 64


def _cache_put(pid: str, pool: Any) -> None:
    with _CACHE_LOCK:
        _CACHE[pid] = pool
        _CACHE.move_to_end(pid)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)


def cache_drop(pid: str) -> None:
    with _CACHE_LOCK:
        _CACHE.pop(pid, None)


def _estimator(method: str, params: dict[str, Any]) -> Any:
    """An unfitted estimator of ``method``: a pool of the registry, or ``"market"`` (the isoelastic
    market a competition run stores; not a method ``POST /v1/pools`` fits)."""
    return MarketPool(**params) if method == "market" else make_pool(method, **params)


def restore_pool(session: Session, row: PoolRow) -> Any:
    with _CACHE_LOCK:
        hit = _CACHE.get(row.id)
    if hit is not None:
        return hit
    pool = _estimator(row.method, row.params or {})
    store.restore(pool, row.state or {}, load_blobs(session, "pool", row.id))
    if isinstance(pool, MarketPool):
        pool.rebuild_agents()  # its agents are not stored: they follow from the trained wealth
    _cache_put(row.id, pool)
    return pool


def delete_pool(session: Session, row: PoolRow) -> None:
    delete_blobs(session, "pool", row.id)
    session.delete(row)
    if row.job_id:
        job = session.get(JobRow, row.job_id)
        if job is not None and job.state in ("queued", "running"):
            job.cancel_requested = True
            if job.state == "queued":
                job.state = "cancelled"
                job.finished_at = utcnow()
    session.commit()
    cache_drop(row.id)


def _learnt(row: PoolRow, arrays: dict[str, np.ndarray], name: str) -> Any:
    if name in arrays:
        return arrays[name].tolist()
    v = (row.state or {}).get(name)
    return store.public(v)


def pool_view(session: Session, row: PoolRow) -> dict[str, Any]:
    arrays = load_blobs(session, "pool", row.id) if row.status == "ready" else {}
    w = _learnt(row, arrays, "weights_")
    shown = {"weights_", "gamma_", "validation_curve_", "fit_result_", "_skipped", "posterior_", "posterior_weights_"}
    other = {k: store.public(v) for k, v in (row.state or {}).items() if k not in shown}
    for k, v in arrays.items():
        if k not in shown:
            other[k] = {"shape": list(v.shape), "dtype": str(v.dtype)}
    return {
        "id": row.id,
        "name": row.name,
        "method": row.method,
        "status": row.status,
        "params": row.params or {},
        "kind": row.kind,
        "n_items": row.n_items,
        "n_agents": row.n_agents,
        "n_classes": row.n_classes,
        "weights": None if w is None else list(np.ravel(np.asarray(w, dtype=float)).tolist()),
        "gamma": _learnt(row, arrays, "gamma_"),
        "validation_curve": _learnt(row, arrays, "validation_curve_"),
        "fit": row.fit or {},
        "metrics": row.metrics or {},
        "state": other,
        "posterior": store.public((row.state or {}).get("posterior_")),
        "job_id": row.job_id,
        "error": row.error,
        "created_at": aware(row.created_at),
        "links": row.links("pools", "predict"),
    }


def require_ready(row: PoolRow | None, pid: str) -> PoolRow:
    if row is None:
        raise ProblemError(404, f"no pool {pid!r}", field="pool_id", reason="not found", code="not-found")
    unusable = {
        "pending": (f"is still being fitted (job {row.job_id})", "not fitted yet", "not-ready"),
        "failed": (f"failed to fit: {(row.error or {}).get('detail', '')}", "fit failed", "fit-failed"),
    }.get(row.status)
    if unusable is None:
        return row
    detail, reason, code = unusable
    raise ProblemError(409, f"pool {pid!r} {detail}", field="pool_id", reason=reason, code=code)
