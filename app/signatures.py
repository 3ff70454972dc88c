"""Keyword parameters type-checked at the edge: one strict pydantic model per callable, generated
from its signature (the estimators' ``__init__`` for pool ``params``, each registered solver for
``/v1/solve``'s ``options`` and a pool's ``solver_options``).

Strict means no coercion: ``"0.7"`` is not a number, ``true`` not an integer, ``2.0`` not an
integer; an option the callable does not take is refused. A few names carry a range checked here
(``tol`` >= 0, ``max_iter`` >= 0, ``cv`` >= 2, ``memory`` >= 1...), so that a bad value is a 422
naming ``<field>.<name>`` instead of a type error deep in a kernel.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from solvers.errors import InputError

#: parameters never taken from a request (the problem, the start point, Python callables)
SKIP = frozenset({"self", "problem", "x0", "callback", "progress", "projection"})

#: (lower bound, inclusive) of numeric parameters by name; ``None`` values are always allowed
BOUNDS: dict[str, tuple[float, bool]] = {
    **dict.fromkeys(("tol", "fixed_point_tol", "max_iter", "alpha"), (0.0, True)),
    **dict.fromkeys(("step", "step0"), (0.0, False)),
    **dict.fromkeys(("memory", "m", "k", "batch_size", "check_every"), (1.0, True)),
    **dict.fromkeys(("cv", "n_folds"), (2.0, True)),
}


def _annotation(fn: Callable[..., Any], p: inspect.Parameter) -> Any:
    ann = p.annotation
    if ann is p.empty:  # unannotated: the default's type (a None default: an optional number)
        return float | None if p.default is None else type(p.default)
    if isinstance(ann, str):
        ns = {**vars(typing), **getattr(fn, "__globals__", {})}
        try:
            ann = eval(ann, ns)  # noqa: S307 - annotations of our own library's signatures
        except Exception:
            return Any
    return ann


@cache
def model_of(fn: Callable[..., Any]) -> type[BaseModel]:
    """The strict model of ``fn``'s keyword parameters (those a request may set)."""
    fields: dict[str, Any] = {}
    for p in inspect.signature(fn).parameters.values():
        if p.name in SKIP or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        default = ... if p.default is p.empty else p.default
        fields[p.name] = (_annotation(fn, p), default)
    name = getattr(fn, "__qualname__", "params").replace(".", "_")
    return create_model(
        name, __config__=ConfigDict(strict=True, extra="forbid", arbitrary_types_allowed=True), **fields
    )


def check_kwargs(fn: Callable[..., Any], values: dict[str, Any], field: str, owner: str) -> None:
    """Raise :class:`InputError` naming ``<field>.<name>`` for the first parameter of ``values``
    that ``fn`` does not take, has the wrong type or is out of its range (``owner`` names ``fn``)."""
    model = model_of(fn)
    try:
        model.model_validate({k: v for k, v in values.items()})
    except ValidationError as exc:
        e = exc.errors()[0]
        name = str(e["loc"][0]) if e.get("loc") else ""
        where = f"{field}.{name}" if name else field
        if e.get("type") == "extra_forbidden":
            taken = ", ".join(model.model_fields) or "nothing"
            raise InputError(
                where, f"{owner} does not take {name!r}; it takes: {taken}", code="unknown_parameter"
            ) from None
        raise InputError(where, f"{e['msg'].lower()} (got {_shown(values.get(name))})", code="invalid_type") from None
    for name, v in values.items():
        if name in BOUNDS and isinstance(v, (int, float)) and not isinstance(v, bool):
            lo, inclusive = BOUNDS[name]
            if v < lo or (v == lo and not inclusive):
                op = ">=" if inclusive else ">"
                raise InputError(f"{field}.{name}", f"must be {op} {lo:g}; got {v!r}", code="out_of_range")


def _shown(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."
