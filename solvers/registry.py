"""Solvers by name: ``minimize(problem, method="newton")`` whatever the method.

Every solver is a plain function ``fn(problem, x0=None, *, tol, max_iter, callback, progress,
**options) -> SolveResult`` registered here with the problem members it needs, so that pools (and
the API's ``/v1/solve``) pick solvers by name and ``available(problem)`` lists the applicable ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .errors import InputError
from .problem import constraint_of, offers
from .result import SolveResult

SolverFn = Callable[..., SolveResult]


@dataclass(frozen=True)
class SolverInfo:
    name: str
    fn: SolverFn
    needs: tuple[str, ...]
    constraints: tuple[str, ...]
    summary: str


_REGISTRY: dict[str, SolverInfo] = {}
_AUTO: list[Callable[[object], str | None]] = []


def register(
    name: str,
    *,
    needs: tuple[str, ...] = (),
    constraints: tuple[str, ...] = ("none",),
    summary: str = "",
) -> Callable[[SolverFn], SolverFn]:
    """Decorator: register ``fn`` under ``name``.

    ``needs`` lists the optional problem members it requires (``"hessian"``, ``"term_grad"``...);
    ``constraints`` the constraint kinds it handles (``"none"``, ``"simplex"``...).
    """

    def deco(fn: SolverFn) -> SolverFn:
        _REGISTRY[name] = SolverInfo(name, fn, tuple(needs), tuple(constraints), summary or (fn.__doc__ or "").strip().split("\n")[0])
        return fn

    return deco


def register_auto_rule(rule: Callable[[object], str | None]) -> None:
    """Add a rule mapping a problem to a preferred method name (first match wins, newest first)."""
    _AUTO.insert(0, rule)


def _load_all() -> None:
    # importing the package registers every solver module
    import solvers.methods  # noqa: F401


def info(name: str) -> SolverInfo:
    _load_all()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise InputError("method", f"unknown solver {name!r}; known: {sorted(_REGISTRY)}") from None


def applicable(problem: object, name: str) -> bool:
    s = info(name)
    return constraint_of(problem) in s.constraints and offers(problem, *s.needs)


def available(problem: object | None = None) -> list[str]:
    """Names of registered solvers (those applicable to ``problem`` when one is given)."""
    _load_all()
    if problem is None:
        return sorted(_REGISTRY)
    return sorted(n for n in _REGISTRY if applicable(problem, n))


def choose(problem: object) -> str:
    """The method ``"auto"`` resolves to for this problem."""
    _load_all()
    for rule in _AUTO:
        name = rule(problem)
        if name is not None and name in _REGISTRY and applicable(problem, name):
            return name
    names = available(problem)
    if not names:
        raise InputError("method", f"no registered solver applies to {type(problem).__name__}")
    return names[0]


def minimize(
    problem: object,
    method: str = "auto",
    x0: np.ndarray | None = None,
    **options: Any,
) -> SolveResult:
    """Minimise ``problem`` with the solver called ``method`` (``"auto"`` picks one)."""
    name = choose(problem) if method == "auto" else method
    s = info(name)
    if not applicable(problem, name):
        missing = [m for m in s.needs if not offers(problem, m)]
        why = f"needs {missing}" if missing else f"handles constraints {list(s.constraints)}, not {constraint_of(problem)!r}"
        raise InputError("method", f"solver {name!r} does not apply to {type(problem).__name__}: it {why}")
    return s.fn(problem, x0, **options)
