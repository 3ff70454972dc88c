"""Quasi-Newton and truncated Newton on a box: SciPy's TNC (Nash 1984), SLSQP (Kraft 1988) and L-BFGS-B
(Byrd, Lu, Nocedal & Zhu 1995) behind the registry.

For problems whose feasible set is a box ``lower <= x <= upper`` (``constraint = "box"`` and a
``bounds`` member; infinite bounds allowed). A model of the curvature is what a badly scaled box
needs: on the Rényi pool's joint weights-and-γ problem (:class:`solvers.problems.orthant.SimplexAsOrthant`
over ``aggregators.renyi_gradient.RenyiProblem``) spectral projected gradient, one step length for
every coordinate, stopped 3e-4 to 2.2e-3 above the best objective in 7 of 8 problems (four families,
800 × 12 × 8 and 2,000 × 30 × 16; ``benchmarks/bench_renyi_per_agent.py``, session 25).

- ``tnc``: truncated Newton, each step by CG on Hessian-vector products from gradient differences;
  ``O(dim)`` memory and work an iteration (``max_iter`` counts its evaluations). On those 8 problems it
  reached the best objective in all 8 (4-960 evaluations): the Rényi pool's choice.
- ``slsqp``: a dense BFGS model and an exact quadratic subproblem on the box each iteration
  (``O(dim³)``: measured 0.7 ms an iteration at 60 variables, 141 ms at 538, 820 ms at 1,000); 11-772
  evaluations on the 8 problems, once 8.3e-6 and once 4e-7 above the best. Its own stopping test (the
  change of ``f``) can stop it short of the measure, by how much depends on the machine (on a
  16-variable convex test problem at a projected gradient 2.6e-9 of ``|f|`` on an Intel Xeon, 2e-8 and
  6e-8 on an AMD EPYC; a restart from there does not move).
- ``lbfgsb``: a limited-memory model (``O(dim · memory)`` an iteration); 5-2,043 evaluations, unconverged
  after 2,000 iterations on two of the 8 (on gaussian-logit 800 × 12 × 8 its first run stopped at a
  projected gradient of 5e-4, 1.5e-3 above the optimum; one restart reached it).

All three are restarted afresh from where SciPy's own tests stopped them short of the target, up to
:data:`RESTARTS` times while a restart lowers the objective by more than ``1e-3 * tol * max(1, |f|)``.

Stopping (both): the projected-gradient measure ``max |clip(x - g) - x|`` (the one
``projected_gradient`` uses on a box) at most ``tol * max(1, |f|)``. SciPy's own tests are set so
that it stops at that measure (L-BFGS-B's ``pgtol``) or at the precision limit (relative change
1e-15); a run stopped at the precision limit with the measure within ten times the target is
reported converged, as ``projected_gradient`` does; otherwise ``converged`` is False.
"""

from __future__ import annotations

from typing import Any, Unpack

import numpy as np
from scipy.optimize import minimize as scipy_minimize

from ..checks import check_count, check_tol
from ..errors import InputError
from ..linesearch import gap_progress, rel_tol_scale
from ..monitor import Run, Stop
from ..problem import start_point
from ..registry import register
from ..result import SolveResult

RESTARTS = 50
"""How many times a run stopped by SciPy's own tests (L-BFGS-B's relative reduction or a failed line
search, SLSQP's change of ``f``) short of the target is restarted afresh from where it stopped (a new
curvature model), while each restart still lowers the objective."""


class _Box:
    """The bookkeeping both drivers share: the box, the evaluations (counted as passes, the last one
    kept for reuse), the measure, the trace and progress, and the callback rule."""

    def __init__(self, problem: Any, x0: np.ndarray | None, run: Run, tol: float) -> None:
        lower, upper = (np.asarray(b, dtype=np.float64) for b in problem.bounds)
        dim = int(problem.dim)
        if lower.shape != (dim,) or upper.shape != (dim,):
            raise InputError(
                "problem", f"bounds must be two arrays of shape ({dim},); got {lower.shape}, {upper.shape}"
            )
        if np.any(np.isnan(lower)) or np.any(np.isnan(upper)) or np.any(lower > upper):
            raise InputError("problem", "bounds must satisfy lower <= upper (no NaN)")
        self.problem, self.run, self.tol = problem, run, tol
        self.lower, self.upper = lower, upper
        self.last: tuple[np.ndarray, float, np.ndarray] | None = None
        self.stopped = False
        self.stop_x = np.empty(0)
        self.x = np.clip(start_point(problem, x0), lower, upper)
        self.f, g = self.fg(self.x)
        if not np.isfinite(self.f):
            raise InputError("x0", "the objective is not finite at the start")
        run.record(self.f)
        self.gap0 = self.gap = self.measure(self.x, g)

    def measure(self, x: np.ndarray, g: np.ndarray) -> float:
        return float(np.max(np.abs(np.clip(x - g, self.lower, self.upper) - x))) if x.size else 0.0

    def target(self, f: float) -> float:
        return self.tol * rel_tol_scale(f)

    def fg(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        f, g = self.problem.value_and_grad(z)
        self.run.passes += 1
        g = np.asarray(g, dtype=np.float64)
        self.last = (np.array(z, dtype=np.float64), float(f), g)
        if not np.isfinite(f):  # both drivers back off from a non-finite value
            return np.inf, np.zeros_like(g)
        return float(f), g

    def at(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """Value and gradient at ``x``, from the last evaluation when it was there."""
        if self.last is not None and np.array_equal(self.last[0], x):
            return self.last[1], self.last[2]
        return self.fg(x)

    def callback(self, xk: np.ndarray) -> None:
        fk, gk = self.at(np.asarray(xk, dtype=np.float64))
        gap = self.measure(xk, gk)
        self.run.record(fk, gap=gap)
        gap_progress(self.run.progress, self.gap0, gap, self.target(fk))
        if self.run.callback_stops(xk):
            self.stopped = True
            self.stop_x = np.array(xk, dtype=np.float64)
            raise StopIteration  # SciPy ends L-BFGS-B and SLSQP on it; TNC lets it through (caught in _drive)

    def settle(self, x_new: np.ndarray) -> tuple[bool, bool]:
        """Move to ``x_new`` (clipped); returns ``(reached the target, lowered the objective)``."""
        x_new = np.clip(np.asarray(x_new, dtype=np.float64), self.lower, self.upper)
        f_new, g = self.at(x_new)
        # a restart is worth it while it lowers f by more than a thousandth of the tolerance (restarts that
        # gained less cost TNC 700 evaluations for 1e-10 on near-duplicate 2,000 x 30 x 16)
        lowered = f_new < self.f - 1e-3 * self.tol * rel_tol_scale(self.f)
        self.x, self.f, self.gap = x_new, f_new, self.measure(x_new, g)
        return self.gap <= self.target(self.f), lowered

    def result(self, n_iter: int, converged: bool, message: str, **extra: Any) -> SolveResult:
        if self.stopped:
            converged, message = self.gap <= self.target(self.f), "stopped by callback"
        return self.run.result(self.x, float(self.f), n_iter, converged, message, gap=self.gap, **extra)


def _at_limit(message: str) -> bool:
    """SciPy stopped on its own test or a failed line search (L-BFGS-B's "ABNORMAL", TNC's "Linear search
    failed": seen on a restricted joint Rényi problem), not on the iteration budget: worth a restart."""
    m = message.upper()
    return any(
        k in m for k in ("REDUCTION OF F", "ABNORMAL", "POSITIVE DIRECTIONAL DERIVATIVE", "SUCCESS", "SEARCH FAILED")
    )


def _drive(box: _Box, method: str, label: str, options: Any, max_iter: int) -> SolveResult:
    """Run SciPy's ``method`` from ``box.x`` (``options(iterations left)``: its options), restarted while
    it stops at its own tests short of the target and a restart still lowers the objective."""
    if box.gap <= box.target(box.f):
        return box.result(0, True, "gap below tolerance")
    nit, restarts = 0, 0
    while True:
        try:
            res = scipy_minimize(
                box.fg,
                box.x,
                jac=True,
                method=method,
                bounds=list(zip(box.lower, box.upper, strict=True)),
                callback=box.callback,
                options=options(max_iter - nit),
            )
        except StopIteration:
            box.settle(box.stop_x)
            return box.result(nit, False, "stopped by callback", restarts=restarts)
        nit += int(res.nfev if method == "TNC" else res.nit)  # TNC's budget is evaluations
        done, lowered = box.settle(res.x)
        if done or box.stopped:
            return box.result(nit, True, "gap below tolerance", restarts=restarts)
        limit = _at_limit(str(res.message)) or bool(res.success)
        if limit and lowered and restarts < RESTARTS and nit < max_iter:
            restarts += 1
            continue
        converged = limit and box.gap <= 10 * box.target(box.f)
        why = "precision limit" if limit else "not converged"
        return box.result(nit, converged, f"{why} ({label}: {res.message})", restarts=restarts)


@register("lbfgsb", constraints=("box",), needs=("bounds",), tol=1e-8, max_iter=15000)
def lbfgsb(problem, x0=None, *, memory: int = 20, **stop: Unpack[Stop]) -> SolveResult:
    """L-BFGS-B (SciPy) on a box, restarted when it stalls, stopped on the projected-gradient measure
    (see the module docstring). Options: ``memory`` (correction pairs of the limited-memory model)."""
    tol, max_iter = stop["tol"], stop["max_iter"]
    check_tol(tol, positive=True)
    check_count(memory, field="memory", minimum=1)
    box = _Box(problem, x0, Run("lbfgsb", **stop), tol)
    pgtol = box.target(box.f)

    def options(left: int) -> dict:
        return {"maxiter": left, "maxfun": 10 * left + 10, "maxcor": memory, "ftol": 1e-15, "gtol": pgtol}

    return _drive(box, "L-BFGS-B", "L-BFGS-B", options, max_iter)


@register("slsqp", constraints=("box",), needs=("bounds",), tol=1e-8, max_iter=5000)
def slsqp(problem, x0=None, **stop: Unpack[Stop]) -> SolveResult:
    """SLSQP (SciPy) on a box: dense BFGS and an exact box-constrained quadratic step each iteration
    (``O(dim³)``; see the module docstring), stopped on the projected-gradient measure."""
    tol, max_iter = stop["tol"], stop["max_iter"]
    check_tol(tol, positive=True)
    box = _Box(problem, x0, Run("slsqp", **stop), tol)
    return _drive(box, "SLSQP", "SLSQP", lambda left: {"maxiter": left, "ftol": 1e-15 * rel_tol_scale(box.f)}, max_iter)


@register("tnc", constraints=("box",), needs=("bounds",), tol=1e-8, max_iter=5000)
def tnc(problem, x0=None, **stop: Unpack[Stop]) -> SolveResult:
    """Truncated Newton (SciPy's TNC, Nash 1984) on a box: Newton steps solved by CG with Hessian-vector
    products from gradient differences, ``O(dim)`` memory; stopped on the projected-gradient measure.
    ``max_iter`` bounds its evaluations (TNC counts those, not iterations)."""
    tol, max_iter = stop["tol"], stop["max_iter"]
    check_tol(tol, positive=True)
    box = _Box(problem, x0, Run("tnc", **stop), tol)
    pgtol = box.target(box.f)
    return _drive(
        box, "TNC", "TNC", lambda left: {"maxfun": left, "ftol": 1e-15 * rel_tol_scale(box.f), "gtol": pgtol}, max_iter
    )
