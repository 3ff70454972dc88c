"""The problem protocol shared by every solver in the core.

A problem is the minimisation of a finite sum plus an optional constraint or simple regulariser,

    f(x) = (1/n) * sum_{i<n} f_i(x)  [+ r(x)]      subject to  x in C,

seed 001 (Defazio) eq. (1.1), seed 003 section 6.3. Solvers ask only for what they need, so a
problem implements the required members and whichever optional ones it can offer:

required
    ``dim``, ``n_terms`` (1 for a problem that is not a sum), ``value(x)``, ``grad(x)``,
    ``value_and_grad(x)``.
optional (detected with ``hasattr`` / :func:`offers`)
    ``hessian(x)`` (dense ``(dim, dim)``), ``hvp(x, v)``, ``term_grad(i, x)``,
    ``project(x)`` (Euclidean projection onto C), ``prox(x, step)`` (prox of ``step * r``),
    ``constraint`` (a string: ``"none"``, ``"simplex"``, ``"box"``...),
    ``L`` (Lipschitz constant of the gradient of f), ``L_max`` (max over terms of the term
    constants), ``mu`` (strong-convexity constant), ``x0()`` (a feasible start).

Conventions: minimisation; ``value`` is the *mean* over terms (plus regulariser); one "pass" is one
sweep over the data (a full gradient costs one pass, ``n_terms`` term gradients cost one pass).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from .errors import InputError


@runtime_checkable
class Problem(Protocol):
    """Required members of every problem (see the module docstring for the optional ones)."""

    dim: int
    n_terms: int

    def value(self, x: np.ndarray) -> float: ...

    def grad(self, x: np.ndarray) -> np.ndarray: ...

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]: ...


OPTIONAL_MEMBERS = ("hessian", "hvp", "term_grad", "project", "prox", "L", "L_max", "mu", "x0")


def offers(problem: object, *members: str) -> bool:
    """True when ``problem`` offers every named optional member (and it is not ``None``)."""
    return all(getattr(problem, m, None) is not None for m in members)


def constraint_of(problem: object) -> str:
    """The problem's constraint kind, ``"none"`` when it declares none."""
    return str(getattr(problem, "constraint", "none") or "none")


def start_point(problem: object, x0: np.ndarray | None) -> np.ndarray:
    """``x0`` as a float64 copy, or the problem's own start, or zeros."""
    if x0 is not None:
        x = np.array(x0, dtype=np.float64, copy=True)
        if x.shape != (problem.dim,):  # type: ignore[attr-defined]
            raise InputError("x0", f"must have shape ({problem.dim},); got {x.shape}")  # type: ignore[attr-defined]
        return x
    if offers(problem, "x0"):
        return np.array(problem.x0(), dtype=np.float64, copy=True)  # type: ignore[attr-defined]
    return np.zeros(problem.dim)  # type: ignore[attr-defined]
