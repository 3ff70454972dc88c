"""Shared driver pieces of the finite-sum solvers: access orders, argument checks, term constants.

The bookkeeping (trace, clock, stopping test) is :class:`solvers.monitor.Monitor`, re-exported here.

Not a solver module (leading underscore: not auto-imported by :mod:`solvers.methods`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..checks import check_choice
from ..errors import InputError
from ..monitor import Monitor
from ..problem import capability, constant, constraint_of, prox_of, start_point

__all__ = ["IndexDraws", "Monitor", "constant", "prox_of", "require_smooth", "smooth_value", "start", "term_mu"]

ORDERS = ("cyclic", "permuted", "random")
DEFAULT_TOL = 1e-10


def term_family(problem: object) -> str:
    """Which compiled loops a finite-sum problem can run: ``"linear"`` (``linear_terms``),
    ``"multinomial"`` (``multinomial_terms``), ``"loglinear"`` (the log pool's conditional log-linear
    terms, unconstrained or on the simplex), ``"mixture"`` (the linear pool's rows), else ``"generic"``."""
    if capability(problem, "linear_terms") is not None:
        return "linear"
    if capability(problem, "multinomial_terms") is not None:
        return "multinomial"
    if (
        capability(problem, "features_ndk") is not None
        and capability(problem, "labels") is not None
        and constraint_of(problem) in ("none", "simplex")
    ):
        return "loglinear"
    return "mixture" if capability(problem, "mixture_rows") is not None else "generic"


class IndexDraws:
    """The order in which a finite-sum solver visits its terms (seed 001 L378-388): ``order`` checked
    once, the generator seeded once; ``draw()`` is one epoch of ``n`` indices, ``draw(m)`` ``m`` of
    them: cyclic ``0..n-1``; ``permuted``, a fresh permutation every epoch; ``random``, uniform with
    replacement."""

    def __init__(self, order: str, seed: Any, n: int) -> None:
        self.order = check_choice(order, ORDERS, field="order")
        self.rng = np.random.default_rng(seed)
        self.n = int(n)

    def __call__(self, length: int | None = None) -> np.ndarray:
        n, rng = self.n, self.rng
        m = n if length is None else int(length)
        if self.order == "cyclic":
            return (np.arange(m) % n).astype(np.int64)
        if self.order == "permuted":
            if m == n:
                return rng.permutation(n).astype(np.int64)
            reps = -(-m // n)
            return np.concatenate([rng.permutation(n) for _ in range(reps)])[:m].astype(np.int64)
        return rng.integers(0, n, size=m, dtype=np.int64)


def smooth_value(problem: object, x: np.ndarray) -> float:
    f = capability(problem, "smooth_value")
    return float(f(x)) if f is not None else float(problem.value(x))  # type: ignore[attr-defined]


def term_mu(problem: object) -> float:
    """Strong-convexity constant of EACH term (what Finito/SAGA's theory needs): ``l2`` for the
    linear models (the data part of a term is not strongly convex), else the problem's ``mu``."""
    if (
        capability(problem, "linear_terms") is not None
        or capability(problem, "l2") is not None
        and capability(problem, "mu") is None
    ):
        return float(capability(problem, "l2", 0.0) or 0.0)
    return constant(problem, "mu", 0.0) or 0.0


def require_smooth(problem: object, method: str) -> None:
    if capability(problem, "smooth", True) is False:
        raise InputError(
            "problem",
            f"solver {method!r} needs a smooth objective; {capability(problem, 'loss', type(problem).__name__)!r} is not (use 'sdca' or 'sgd')",
        )


def start(problem: object, x0: np.ndarray | None) -> np.ndarray:
    return start_point(problem, x0)


def rng_of(seed: Any) -> np.random.Generator:
    return np.random.default_rng(seed)
