"""Shared driver pieces of the finite-sum solvers: access orders, prox lookup, stopping, the trace.

Not a solver module (leading underscore: not auto-imported by :mod:`solvers.methods`).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..errors import InputError
from ..problem import constraint_of, offers, start_point
from ..progress import report
from ..result import Clock, SolveResult, Trace

ORDERS = ("cyclic", "permuted", "random")
DEFAULT_TOL = 1e-10


def check_common(order: str, max_iter: int, tol: float) -> None:
    if order not in ORDERS:
        raise InputError("order", f"must be one of {ORDERS}; got {order!r}")
    if not (isinstance(max_iter, (int, np.integer)) and max_iter >= 0):
        raise InputError("max_iter", f"must be an integer >= 0; got {max_iter!r}")
    if not (tol >= 0):
        raise InputError("tol", f"must be >= 0; got {tol!r}")


def indices(rng: np.random.Generator, n: int, order: str, length: int | None = None) -> np.ndarray:
    """One epoch of term indices (seed 001 L378-388): cyclic ``0..n-1``; ``permuted``, a fresh
    permutation every epoch; ``random``, uniform with replacement."""
    m = n if length is None else int(length)
    if order == "cyclic":
        return (np.arange(m) % n).astype(np.int64)
    if order == "permuted":
        if m == n:
            return rng.permutation(n).astype(np.int64)
        reps = -(-m // n)
        return np.concatenate([rng.permutation(n) for _ in range(reps)])[:m].astype(np.int64)
    return rng.integers(0, n, size=m, dtype=np.int64)


def prox_of(problem: object) -> Callable[[np.ndarray, float], np.ndarray]:
    """``prox(x, step)``: the problem's prox, else its projection, else the identity (unconstrained)."""
    if offers(problem, "prox"):
        return problem.prox  # type: ignore[attr-defined]
    if offers(problem, "project"):
        proj = problem.project  # type: ignore[attr-defined]
        return lambda x, step: proj(x)
    if constraint_of(problem) != "none":
        raise InputError("problem", f"{type(problem).__name__} is constrained ({constraint_of(problem)!r}) but offers neither prox nor project")
    return lambda x, step: x


def smooth_value(problem: object, x: np.ndarray) -> float:
    f = getattr(problem, "smooth_value", None)
    return float(f(x)) if f is not None else float(problem.value(x))  # type: ignore[attr-defined]


def constant(problem: object, name: str, default: float | None = None) -> float | None:
    v = getattr(problem, name, None)
    if v is None:
        return default
    v = float(v)
    return v if math.isfinite(v) else default


def term_mu(problem: object) -> float:
    """Strong-convexity constant of EACH term (what Finito/SAGA's theory needs): ``l2`` for the
    linear models (the data part of a term is not strongly convex), else the problem's ``mu``."""
    if getattr(problem, "linear_terms", None) is not None or hasattr(problem, "l2") and getattr(problem, "mu", None) is None:
        return float(getattr(problem, "l2", 0.0) or 0.0)
    return constant(problem, "mu", 0.0) or 0.0


def require_smooth(problem: object, method: str) -> None:
    if getattr(problem, "smooth", True) is False:
        raise InputError("problem", f"solver {method!r} needs a smooth objective; {getattr(problem, 'loss', type(problem).__name__)!r} is not (use 'sdca' or 'sgd')")


class Monitor:
    """Trace, clock, progress, callback and the stopping test, shared by every solver here.

    The stopping measure is the gradient-mapping norm ``|x - prox(x - t g, t)| / t`` with
    ``t = 1/L`` (seed 003 section 6.4 proximal gradient; the gradient norm when there is no prox),
    unless a solver passes its own measure (SDCA: the duality gap).
    """

    def __init__(self, problem: object, method: str, *, tol: float, max_iter: int, callback: Any, progress: Any):
        self.problem = problem
        self.method = method
        self.tol = float(tol)
        self.max_iter = int(max_iter)
        self.callback = callback
        self.progress = progress
        self.clock = Clock()
        self.trace = Trace()
        self.prox = prox_of(problem)
        #: True when the prox is the identity (a linear model without l1, an unconstrained problem):
        #: the gradient mapping is then the gradient, whatever t, and L is never needed (for a large
        #: sparse model it costs a truncated SVD)
        self.plain = ((getattr(problem, "linear_terms", None) is not None or getattr(problem, "multinomial_terms", None) is not None)
                      and getattr(problem, "l1", 0.0) == 0 and constraint_of(problem) == "none") or (
            not offers(problem, "prox") and not offers(problem, "project") and constraint_of(problem) == "none")
        self._t: float | None = None
        self.passes = 0.0
        self.measure = float("inf")
        #: True: the stopping test, trace evaluation and callback are kept off the clock (benchmarks)
        self.off_clock = False
        #: evaluate the stopping test every this many epochs (1: every epoch)
        self.check_every = 1

    @property
    def t(self) -> float:
        """The gradient-mapping step ``1/L`` (computed on first use)."""
        if self._t is None:
            L = constant(self.problem, "L") or constant(self.problem, "L_max") or 1.0
            self._t = 1.0 / L
        return self._t

    def grad_mapping(self, x: np.ndarray, g: np.ndarray) -> float:
        if self.plain:
            return float(np.linalg.norm(g))
        t = self.t
        return float(np.linalg.norm(x - self.prox(x - t * g, t)) / t)

    def check(self, x: np.ndarray, epoch: int, *, value_grad: tuple[float, np.ndarray] | None = None, measure: float | None = None, **extra: float) -> bool:
        """Record the trace at ``x`` and return True when the solver should stop.

        With ``check_every = k > 1`` only every k-th epoch (and the last) is evaluated.
        """
        if self.check_every > 1 and epoch % self.check_every and epoch < self.max_iter and epoch > 0:
            return False
        off = self.off_clock
        if off:
            now = self.clock()
            self.clock.pause()
        if value_grad is None:
            value_grad = self.problem.value_and_grad(x)  # type: ignore[attr-defined]
        fx, g = value_grad
        self.measure = float(measure) if measure is not None else self.grad_mapping(x, g)
        self.fun = float(fx)
        if not off:
            now = self.clock()
        self.trace.record(fx, self.passes, now, measure=self.measure, **extra)
        if off:
            self.clock.resume()
        report(self.progress, epoch / max(1, self.max_iter))
        if not np.isfinite(fx):
            self.message = "diverged (non-finite objective); reduce the step"
            self.converged = False
            return True
        if self.measure <= self.tol:
            self.message = f"converged: stopping measure {self.measure:.3g} <= tol {self.tol:.3g}"
            self.converged = True
            return True
        if off:
            self.clock.pause()
        stop_cb = self.callback is not None and self.callback(x) is True
        if off:
            self.clock.resume()
        if stop_cb:
            self.message = "stopped by callback"
            self.converged = False
            return True
        if epoch >= self.max_iter:
            self.message = f"max_iter ({self.max_iter}) reached; stopping measure {self.measure:.3g}"
            self.converged = False
            return True
        return False

    def result(self, x: np.ndarray, n_iter: int, **extra: Any) -> SolveResult:
        return SolveResult(
            x=x,
            fun=self.fun,
            n_iter=int(n_iter),
            n_passes=float(self.passes),
            converged=bool(self.converged),
            message=self.message,
            method=self.method,
            seconds=self.clock(),
            trace=self.trace,
            extra={"stopping_measure": self.measure, **extra},
        )


def start(problem: object, x0: np.ndarray | None) -> np.ndarray:
    return start_point(problem, x0)


def rng_of(seed: Any) -> np.random.Generator:
    return np.random.default_rng(seed)
