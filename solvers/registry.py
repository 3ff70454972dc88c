"""Solvers by name: ``minimize(problem, method="newton")`` whatever the method.

Every solver is a plain function ``fn(problem, x0=None, *, <its own options>, **stop: Unpack[Stop])
-> SolveResult`` registered here with the problem members it needs (each declared in
:data:`solvers.problem.CAPABILITIES`; an undeclared name is refused), so that pools (and the API's
``/v1/solve``) pick solvers by name and ``available(problem)`` lists the applicable ones. The
callback rule (a truthy return stops) is stated in :mod:`solvers.problem`.

The stopping and reporting options every solver takes (``tol``, ``max_iter``, ``callback``,
``progress``: :class:`solvers.monitor.Stop`) are declared once, not in each solver's signature:
:func:`register` takes the solver's own defaults of ``tol`` and ``max_iter``, fills the four in on
every call, refuses an option the solver does not take (a ``TypeError``, as Python would) and gives
the registered function its whole signature (``inspect.signature`` and ``help`` show all of them;
the API builds its option schemas from it).

``method="auto"`` consults the rules of :data:`AUTO_PRIORITY`, in that order (the first rule that
names an applicable solver wins), then falls back to the first applicable solver by name:

==========  ===========================================  ==============================================
priority    rule (module)                                 decides
==========  ===========================================  ==============================================
10          ``variance_reduced_auto_multinomial``          softmax regression: ``saga`` with l1, else ``lbfgs``
20          ``variance_reduced_auto``                      linear models: ``sdca`` (hinge), ``saga`` (l1), ``lbfgs``
25          ``splitting_auto``                             primal-dual forms: ``coordinate_descent`` (lasso), ``fista``, ``admm``
30          ``quasi_newton``                               no Hessian: ``lbfgs`` (unconstrained, simplex dim <= 500)
40          ``newton``                                     a Hessian: ``newton`` (simplex; unconstrained dim <= 1000)
==========  ===========================================  ==============================================

The order is the one import order used to give (newest first); it is now explicit, so it no longer
depends on module names.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .checks import check_count, check_tol
from .errors import InputError
from .problem import _declared, constraint_of, offers
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
AUTO_PRIORITY: dict[str, int] = {
    "variance_reduced_auto_multinomial": 10,
    "variance_reduced_auto": 20,
    "splitting_auto": 25,
    "quasi_newton": 30,
    "newton": 40,
}
"""The ``auto`` rules by name and priority (lower first); see the module docstring."""
_AUTO: list[tuple[int, str, Callable[[object], str | None]]] = []


def with_stop_options(fn: SolverFn, *, tol: float, max_iter: int) -> SolverFn:
    """``fn(problem, x0=None, *, <own options>, **stop)`` with the :class:`~solvers.monitor.Stop`
    options filled in and checked (``tol`` >= 0 and ``max_iter`` a count, defaulting to the values given
    here; ``callback`` and ``progress`` to None) and its whole signature declared."""
    sig = inspect.signature(fn, eval_str=True)
    own = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
    kw = inspect.Parameter.KEYWORD_ONLY
    defaults: dict[str, Any] = {"tol": tol, "max_iter": max_iter, "callback": None, "progress": None}
    types: dict[str, Any] = {"tol": float, "max_iter": int}
    stop = [
        inspect.Parameter(n, kw, default=v, annotation=types.get(n, inspect.Parameter.empty))
        for n, v in defaults.items()
    ]
    full = sig.replace(parameters=own[:2] + stop + own[2:])
    names = frozenset(p.name for p in own[2:]) | defaults.keys()

    @functools.wraps(fn)
    def solver(problem: object, x0: np.ndarray | None = None, **options: Any) -> SolveResult:
        unknown = options.keys() - names
        if unknown:
            raise TypeError(f"{fn.__name__}() got an unexpected keyword argument {min(unknown)!r}")
        stop = {**defaults, **options}
        check_tol(stop["tol"])
        check_count(stop["max_iter"])
        return fn(problem, x0, **stop)

    solver.__signature__ = full  # type: ignore[attr-defined]
    return solver


def register(
    name: str,
    *,
    tol: float,
    max_iter: int,
    needs: tuple[str, ...] = (),
    constraints: tuple[str, ...] = ("none",),
    summary: str = "",
) -> Callable[[SolverFn], SolverFn]:
    """Decorator: register ``fn`` under ``name`` (and return it with its stop options, see
    :func:`with_stop_options`).

    ``tol`` and ``max_iter`` are the solver's defaults; ``needs`` lists the optional problem members
    it requires (``"hessian"``, ``"term_grad"``...); ``constraints`` the constraint kinds it handles
    (``"none"``, ``"simplex"``...).
    """

    _declared(tuple(needs), "needs")

    def deco(fn: SolverFn) -> SolverFn:
        solver = with_stop_options(fn, tol=tol, max_iter=max_iter)
        _REGISTRY[name] = SolverInfo(
            name, solver, tuple(needs), tuple(constraints), summary or (fn.__doc__ or "").strip().split("\n")[0]
        )
        return solver

    return deco


def register_auto_rule(name: str, rule: Callable[[object], str | None]) -> None:
    """Add the ``auto`` rule called ``name`` (a key of :data:`AUTO_PRIORITY`, which fixes its rank)."""
    if name not in AUTO_PRIORITY:
        raise InputError(
            "name", f"auto rule {name!r} has no priority in registry.AUTO_PRIORITY; known: {sorted(AUTO_PRIORITY)}"
        )
    _AUTO[:] = sorted([r for r in _AUTO if r[1] != name] + [(AUTO_PRIORITY[name], name, rule)], key=lambda r: r[0])


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
    for _, _, rule in _AUTO:
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
        why = (
            f"needs {missing}"
            if missing
            else f"handles constraints {list(s.constraints)}, not {constraint_of(problem)!r}"
        )
        raise InputError("method", f"solver {name!r} does not apply to {type(problem).__name__}: it {why}")
    return s.fn(problem, x0, **options)
