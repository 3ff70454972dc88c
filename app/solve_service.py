"""/v1/solve's catalogue and runner: any registered solver on any problem of ``solvers.problems``.

Problems are found at run time: every public class of a module of :mod:`solvers.problems` that
implements the protocol (``value``, ``grad``, ``value_and_grad``) is offered under its class name,
and each of its ``from_*`` class methods under ``Class.from_x``. The posted ``data`` are the
constructor's keyword arguments: nested lists (or ``{"npy"}``/``{"array_id"}``) become NumPy arrays,
scalars and strings pass through. Solvers come from :func:`solvers.available`.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

import solvers.problems as pkg
from solvers.errors import InputError
from solvers.registry import available, choose, info, minimize

from . import estimator_store as store
from .errors import ProblemError
from .jobs import JobContext, handler
from .signatures import check_kwargs


@lru_cache
def problem_catalogue() -> dict[str, tuple[str, Callable[..., Any]]]:
    out: dict[str, tuple[str, Callable[..., Any]]] = {}
    for m in pkgutil.iter_modules(pkg.__path__):
        if m.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{pkg.__name__}.{m.name}")
        for name, cls in vars(mod).items():
            if name.startswith("_") or not inspect.isclass(cls) or cls.__module__ != mod.__name__:
                continue
            if not all(callable(getattr(cls, a, None)) for a in ("value", "grad", "value_and_grad")):
                continue
            out[name] = (mod.__name__, cls)
            for attr, v in vars(cls).items():
                if attr.startswith("from_") and isinstance(v, classmethod):
                    out[f"{name}.{attr}"] = (mod.__name__, getattr(cls, attr))
    return out


def _params(fn: Callable[..., Any]) -> list[dict[str, Any]]:
    out = []
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return out
    for p in sig.parameters.values():
        if p.name in ("self", "cls") or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        d: dict[str, Any] = {"name": p.name, "required": p.default is p.empty}
        if p.default is not p.empty:
            try:
                d["default"] = store.public(store.jsonable(p.default))
            except TypeError:
                d["default"] = repr(p.default)
        out.append(d)
    return out


def problems_view() -> list[dict[str, Any]]:
    res = []
    for name, (mod, fn) in sorted(problem_catalogue().items()):
        doc = (inspect.getdoc(fn) or "").strip().split("\n")[0]
        target = fn.__init__ if inspect.isclass(fn) else fn
        res.append({"name": name, "module": mod, "summary": doc, "parameters": _params(target)})
    return res


def solvers_view() -> list[dict[str, Any]]:
    out = []
    for n in available():
        s = info(n)
        out.append({"name": n, "needs": list(s.needs), "constraints": list(s.constraints), "summary": s.summary})
    return out


def numeric_array(value: list[Any], field: str) -> np.ndarray:
    """A posted list as a numeric array; a 422 naming ``field`` when it is ragged or not numbers."""
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):  # ragged
        arr = None
    if arr is None or arr.dtype.kind not in "biuf":
        reason = "not a rectangular numeric array"
        raise ProblemError(422, f"{field}: {reason}", field=field, reason=reason)
    return arr


def build_problem(name: str, data: dict[str, Any]) -> Any:
    cat = problem_catalogue()
    if name not in cat:
        raise ProblemError(
            422,
            f"problem: unknown problem {name!r}; known: {sorted(cat)}",
            field="problem",
            reason=f"unknown problem {name!r}",
            code="unknown-problem",
        )
    fn = cat[name][1]
    kwargs = {}
    for k, v in data.items():
        kwargs[k] = numeric_array(v, f"data.{k}") if isinstance(v, list) else v
    try:
        return fn(**kwargs)
    except InputError:
        raise
    except TypeError as exc:
        raise ProblemError(422, f"data: {exc}", field="data", reason=str(exc), code="bad-arguments") from None


def check_options(problem: Any, method: str, options: dict[str, Any], field: str = "options") -> str:
    """The solver ``method`` resolves to for ``problem``, after type-checking ``options`` against
    that solver's signature (a 422 naming ``options.<name>``)."""
    name = choose(problem) if method == "auto" else method
    check_kwargs(info(name).fn, options, field, f"solver {name!r}")
    return name


@handler("solve")
def run_solve(ctx: JobContext) -> dict[str, Any]:
    spec = ctx.spec
    data = dict(spec.get("scalars", {}))
    data.update({k[5:]: v for k, v in ctx.inputs.items() if k.startswith("data.")})
    problem = build_problem(spec["problem"], data)
    opts = dict(spec.get("options", {}))
    if spec.get("tol") is not None:
        opts["tol"] = spec["tol"]
    if spec.get("max_iter") is not None:
        opts["max_iter"] = spec["max_iter"]
    if ctx.progress is not None:
        opts["progress"] = ctx.progress
    x0 = ctx.inputs.get("x0")
    method = check_options(problem, spec.get("method", "auto"), dict(spec.get("options", {})))
    try:
        res = minimize(problem, method, x0, **opts)
    except InputError:
        raise
    except TypeError as exc:  # an unknown or ill-typed solver option
        raise InputError("options", str(exc)) from None
    d = store.public(store.result_dict(res))
    d.pop("extra", None)
    d["problem"] = spec["problem"]
    d["available"] = available(problem)
    return d
