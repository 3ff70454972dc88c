"""Estimator persistence: saving and restoring a fitted estimator's learnt state without pickles.

An estimator (pool or market) is rebuilt from its method and hyper-parameters, then given back its
learnt attributes (the scikit-learn ``name_`` convention): numeric arrays are stored as ``.npy``
blobs, scalars and small containers as JSON (non-finite floats tagged), solver results as their
``to_dict()`` plus the ``x`` array. Attributes of any other type are not stored and are listed
under ``"_skipped"``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from solvers.result import SolveResult, Trace


def jsonable(v: Any) -> Any:
    """A JSON-ready copy of ``v`` (numpy to Python, non-finite floats tagged); raises TypeError."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return f if math.isfinite(f) else {"__float__": repr(f)}
    if isinstance(v, np.ndarray):
        if v.dtype.kind not in "biuf":
            raise TypeError("non-numeric array")
        return [jsonable(x) for x in v.tolist()] if v.ndim else jsonable(v.item())
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, SolveResult):
        return {"__solve_result__": result_dict(v)}
    if isinstance(v, Trace):
        return {"__trace__": jsonable(v.to_dict())}
    raise TypeError(f"cannot store {type(v).__name__}")


def _untag(v: Any, tags: dict[str, Callable[[Any], Any]]) -> Any:
    """``v`` rebuilt with every tagged object (``{"__float__": ...}``, ``{"__solve_result__": ...}``,
    ``{"__trace__": ...}``) replaced by ``tags[tag](value)``."""
    if isinstance(v, dict):
        if len(v) == 1:
            ((tag, x),) = v.items()
            if tag in tags:
                return tags[tag](x)
        return {k: _untag(x, tags) for k, x in v.items()}
    if isinstance(v, list):
        return [_untag(x, tags) for x in v]
    return v


def unjson(v: Any) -> Any:
    """Inverse of :func:`jsonable`: tags become floats, solve results and traces again."""
    return _untag(v, {"__float__": float, "__solve_result__": solve_result_from, "__trace__": _trace_from})


def public(v: Any) -> Any:
    """A JSON value for responses: tags removed (non-finite floats become null)."""
    return _untag(v, {"__float__": lambda _: None, "__solve_result__": public, "__trace__": public})


def result_dict(r: SolveResult) -> dict[str, Any]:
    d = r.to_dict()
    d["x"] = jsonable(np.asarray(r.x))
    d["fun"] = jsonable(r.fun)
    d["trace"] = jsonable(d["trace"])
    d["extra"] = {}
    for k, x in (r.extra or {}).items():
        try:
            d["extra"][k] = jsonable(x)
        except TypeError:
            pass
    return d


def _trace_from(d: dict[str, Any]) -> Trace:
    d = unjson(d)
    t = Trace(list(d.get("objective", [])), list(d.get("passes", [])), list(d.get("seconds", [])))
    t.extra = {k: list(v) for k, v in d.items() if k not in ("objective", "passes", "seconds") and isinstance(v, list)}
    return t


def solve_result_from(d: dict[str, Any]) -> SolveResult:
    return SolveResult(
        x=np.asarray(unjson(d.get("x", [])), dtype=np.float64),
        fun=float(unjson(d.get("fun", float("nan")))),
        n_iter=int(d.get("n_iter", 0)),
        n_passes=float(d.get("n_passes", 0.0)),
        converged=bool(d.get("converged", False)),
        message=str(d.get("message", "")),
        method=str(d.get("method", "")),
        seconds=float(d.get("seconds", 0.0)),
        trace=_trace_from(d.get("trace", {})),
        extra=unjson(d.get("extra", {})),
    )


def dump(est: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(JSON state, arrays) of ``est``'s learnt attributes."""
    state: dict[str, Any] = {}
    arrays: dict[str, np.ndarray] = {}
    skipped: list[str] = []
    for k, v in vars(est).items():
        if not k.endswith("_") or k.startswith("_"):
            continue
        if isinstance(v, np.ndarray) and v.dtype.kind in "biuf" and v.size > 64:
            arrays[k] = v
            continue
        try:
            state[k] = jsonable(v)
        except TypeError:
            skipped.append(k)
    if skipped:
        state["_skipped"] = skipped
    return state, arrays


def restore(est: Any, state: dict[str, Any], arrays: dict[str, np.ndarray]) -> Any:
    """Give ``est`` back the attributes saved by :func:`dump`."""
    for k, v in state.items():
        if k == "_skipped":
            continue
        val = unjson(v)
        if isinstance(val, list):
            try:
                arr = np.asarray(val)
                if arr.dtype.kind in "biuf":
                    val = arr
            except ValueError:
                pass
        setattr(est, k, val)
    for k, v in arrays.items():
        setattr(est, k, v)
    return est
