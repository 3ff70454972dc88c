"""The bookkeeping of every solver: one clock, one trace, one pass count, one callback rule, one result.

:class:`Run` is what every driver (Newton, quasi-Newton, EM, projected gradient, bound
majorization, the first-order and finite-sum solvers) uses to record the trace (objective, passes
over the data, seconds), report progress, ask the callback whether to stop (a truthy return stops:
the rule stated in :mod:`solvers.problem`) and build the :class:`~solvers.result.SolveResult`. Each
solver keeps its own stopping test, since the tests differ by method (Newton decrement, Frank-Wolfe
gap, step norm...); :class:`Monitor` adds the finite-sum solvers' shared one (the gradient-mapping
norm, or a measure the solver passes, e.g. SDCA's duality gap) and the off-clock mode of the
benchmarks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict, Unpack

import numpy as np

from .problem import capability, constant, constraint_of, offers, prox_of
from .progress import ProgressFn, report
from .result import Clock, SolveResult, Trace


class Stop(TypedDict):
    """The stopping and reporting options of every solver, declared once: a solver's signature ends
    with ``**stop: Unpack[Stop]`` and :func:`solvers.registry.register` fills them in (``tol`` and
    ``max_iter`` with the solver's own defaults). ``Run(method, **stop)`` keeps them."""

    tol: float
    max_iter: int
    callback: Callable[[np.ndarray], Any] | None
    progress: ProgressFn | None


class Run:
    """Clock, trace, passes, progress and callback of one solve, and the result it returns.

    ``passes`` is incremented by the driver (one value+gradient, one value or one Hessian evaluation
    over the data counts one pass); :meth:`record` stamps the trace with the passes and the seconds
    so far.
    """

    def __init__(
        self,
        method: str,
        *,
        tol: float = 0.0,
        max_iter: int = 0,
        callback: Callable[[np.ndarray], Any] | None = None,
        progress: ProgressFn | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.method = method
        self.tol = float(tol)
        self.max_iter = int(max_iter)
        self.callback = callback
        self.progress = progress
        self.clock = clock or Clock()
        self.trace = Trace()
        self.passes = 0.0

    def record(self, objective: float, *, at: float | None = None, **extra: float) -> None:
        """Append ``objective`` (and ``extra`` columns) to the trace with the passes and the seconds so
        far (``at``: a time read earlier, for a value evaluated off the clock)."""
        self.trace.record(objective, self.passes, self.clock() if at is None else at, **extra)

    def callback_stops(self, x: np.ndarray) -> bool:
        """Call ``callback(x)``; a truthy return asks the solver to stop (the one callback rule)."""
        return self.callback is not None and bool(self.callback(x))

    def done(self, converged: bool) -> None:
        """Report 100 % progress when the solve converged."""
        if converged:
            report(self.progress, 1.0)

    def result(
        self,
        x: np.ndarray,
        fun: float,
        n_iter: int,
        converged: bool,
        message: str,
        *,
        seconds: float | None = None,
        **extra: Any,
    ) -> SolveResult:
        """The :class:`SolveResult` (``seconds``: the clock now, unless given); reports 100 % progress
        when the solve converged."""
        self.done(converged)
        return SolveResult(
            x,
            fun,
            n_iter,
            self.passes,
            converged,
            message,
            self.method,
            self.clock() if seconds is None else seconds,
            self.trace,
            extra,
        )


class Monitor(Run):
    """Trace, clock, progress, callback and the stopping test, shared by every solver here.

    The stopping measure is the gradient-mapping norm ``|x - prox(x - t g, t)| / t`` with
    ``t = 1/L`` (seed 003 section 6.4 proximal gradient; the gradient norm when there is no prox),
    unless a solver passes its own measure (SDCA: the duality gap).
    """

    def __init__(self, problem: object, method: str, **stop: Unpack[Stop]):
        super().__init__(method, **stop)
        self.problem = problem
        self.prox = prox_of(problem)
        #: True when the prox is the identity (a linear model without l1, an unconstrained problem):
        #: the gradient mapping is then the gradient, whatever t, and L is never needed (for a large
        #: sparse model it costs a truncated SVD)
        self.plain = (
            (capability(problem, "linear_terms") is not None or capability(problem, "multinomial_terms") is not None)
            and capability(problem, "l1", 0.0) == 0
            and constraint_of(problem) == "none"
        ) or (not offers(problem, "prox") and not offers(problem, "project") and constraint_of(problem) == "none")
        self._t: float | None = None
        self.measure = float("inf")
        #: True: the stopping test, trace evaluation and callback are kept off the clock (benchmarks)
        self.off_clock = False
        #: evaluate the stopping test every this many epochs (1: every epoch)
        self.check_every = 1

    def run_epochs(self, x: np.ndarray, epoch: Callable[[np.ndarray], Any], draw: Callable[[], np.ndarray]) -> int:
        """Run ``epoch(idx)`` (a compiled epoch updating ``x`` in place) on the index lists ``draw()``
        gives, one pass each, until :meth:`check` stops; returns the number of epochs run."""
        k = 0
        stop = self.check(x, k)
        while not stop:
            epoch(draw())
            self.passes += 1
            k += 1
            stop = self.check(x, k)
        return k

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

    def check(
        self,
        x: np.ndarray,
        epoch: int,
        *,
        value_grad: tuple[float, np.ndarray | None] | None = None,
        measure: float | None = None,
        **extra: float,
    ) -> bool:
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
        if measure is None:
            assert g is not None, "a gradient or a stopping measure is needed"
            measure = self.grad_mapping(x, g)
        self.measure = float(measure)
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
        stop_cb = self.callback_stops(x)
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

    # the finite-sum drivers know fun and the stopping state already: a narrower signature
    def result(self, x: np.ndarray, n_iter: int, **extra: Any) -> SolveResult:  # type: ignore[override]
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
