"""Coordinate descent with working sets for the lasso and the elastic net, stopped on the duality gap.

For the ERM form with the squared loss (:class:`solvers.problems.erm.ERM`, ``loss="squared"``, any scale s)
and ``r = L1(lam)`` or ``ElasticNet(lam, gamma)`` (seed 000 Eq. 3.64 with ``s = 1``; scikit-learn's ``Lasso``
with ``s = 1/N``):

    J(x) = (s/2) |b - A x|^2 + lam |x|_1 + (lam gamma/2) |x|^2.

Outer iteration (celer/skglm's working-set scheme, Massias et al. 2018, Bertrand et al. 2022):

1. ``u = A^T R`` (``R = b - A x``, one pass) and the duality gap at x with the dual point ``y = -c R``,
   ``c = min(1, lam/(s |u|_inf))`` for the lasso (:meth:`ERM.duality_gap`'s point: the same number);
   stop when it is ``<= tol``;
2. a working set: every ``j`` with ``x_j != 0`` and the columns closest to violating the dual constraint,
   ranked by ``(lam/s - |u_j|) / |A_j|`` (the distance of the dual point to the constraint's boundary),
   ``max(ws_start, 2 nnz(x))`` of them, never fewer than twice the previous set;
3. cyclic coordinate descent (:mod:`solvers.kernels.lasso_cd`) on the working set's columns until the
   restricted problem's gap is ``<= max(0.3 * gap, tol, 1e-15 J)`` (checked every ``check_every`` sweeps;
   the last term is rounding's floor, so that ``tol = 0`` runs ``max_iter`` outer iterations) or a sweep
   changes nothing, with
   ``anderson=True`` an Anderson extrapolation of every 5 sweeps' iterates (skglm's; kept only when it lowers
   the objective), which pays on ill-conditioned designs.

``working_set=False`` sweeps every column (scikit-learn's method, with the same gap test). ``max_iter``
counts outer iterations; a pass is ``N * D`` multiply-adds (a sweep over k columns is ``k/D`` of a pass). The
trace (one row per outer iteration) holds the objective, the gap and the size of the working set the sweeps
before it used (0 at the start).
"""

from __future__ import annotations

from typing import Any, Unpack

import numpy as np
import scipy.sparse as sp

from ..checks import check_count
from ..errors import InputError
from ..kernels.lasso_cd import cd_sweeps, column_dots, residual, storage
from ..monitor import Run, Stop
from ..problem import start_point
from ..prox import L1, ElasticNet
from ..registry import register
from ..result import SolveResult
from ._stopping import record_and_stop

MAX_INNER_SWEEPS = 100_000
ANDERSON_K = 5


def lasso_form(problem: object) -> tuple[float, float] | None:
    """``(t1, t2) = (lam/s, lam gamma/s)`` when ``problem`` is a squared-loss ERM with an l1 or elastic-net
    regulariser (the form this solver takes), else None."""
    phi, reg, s = (getattr(problem, k, None) for k in ("phi", "reg", "scale"))
    if getattr(phi, "kind", None) != "squared" or s is None or not isinstance(reg, (L1, ElasticNet)):
        return None
    l2 = reg.lam * reg.gamma if isinstance(reg, ElasticNet) else 0.0
    return reg.lam / s, l2 / s


def gap_and_value(u: np.ndarray, R: np.ndarray, b: np.ndarray, x: np.ndarray, t1: float, t2: float):
    """Duality gap and primal value of ``(1/2)|R|^2 + t1 |x|_1 + (t2/2)|x|^2`` (``R = b - A x``, ``u = A^T R``
    over the columns of ``x``); the dual point is ``y = -c R`` scaled into the conjugate's domain."""
    rr, br = float(R @ R), float(b @ R)
    primal = 0.5 * rr + t1 * float(np.abs(x).sum()) + 0.5 * t2 * float(x @ x)
    if t2 == 0.0:
        m = float(np.max(np.abs(u), initial=0.0))
        c = 1.0 if m <= t1 else t1 / m
        dual = c * br - 0.5 * c * c * rr
    else:
        dual = br - 0.5 * rr - float(np.sum(np.maximum(np.abs(u) - t1, 0.0) ** 2)) / (2 * t2)
    return primal - dual, primal


class _Columns:
    """The data matrix in column-major storage with its squared column norms, and its sweeps."""

    def __init__(self, A) -> None:
        self.sparse = sp.issparse(A)
        self.A: Any
        if self.sparse:
            self.A = sp.csc_matrix(A, dtype=float)
            sq = self.A.multiply(self.A).sum(axis=0)
            self.M = storage(csc=self.A)
        else:
            self.A = np.asfortranarray(A, dtype=float)
            sq = np.einsum("ij,ij->j", self.A, self.A)
            self.M = storage(self.A)
        self.L = np.asarray(sq, dtype=float).ravel()

    def sweeps(self, ws: np.ndarray, R: np.ndarray, x: np.ndarray, t1: float, t2: float, n: int) -> float:
        """``n`` coordinate-descent sweeps over the columns ``ws``, updating ``x`` and ``R`` in place; returns the
        largest coordinate change of the last sweep."""
        return cd_sweeps(self.M, ws, R, x, self.L, t1, t2, n)

    def dots(self, ws: np.ndarray, R: np.ndarray) -> np.ndarray:
        """``A[:, ws]^T R``."""
        return column_dots(self.M, ws, R)

    def residual(self, ws: np.ndarray, x_ws: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``b - A[:, ws] x_ws``."""
        return residual(self.M, ws, x_ws, b)


def _objective(R: np.ndarray, x: np.ndarray, t1: float, t2: float) -> float:
    return 0.5 * float(R @ R) + t1 * float(np.abs(x).sum()) + 0.5 * t2 * float(x @ x)


def _anderson(cols: _Columns, ws: np.ndarray, history: list[np.ndarray], R: np.ndarray, x: np.ndarray, b, t1, t2):
    """Anderson extrapolation of the last sweeps' iterates on ``ws`` (skglm's, Bertrand & Massias 2021): the
    affine combination ``sum_k c_k x^k`` with ``c`` minimising ``|sum_k c_k (x^{k+1} - x^k)|``, kept (with its
    residual) only when it lowers the objective."""
    X = np.array(history)
    U = np.diff(X, axis=0)
    try:
        z = np.linalg.solve(U @ U.T, np.ones(len(U)))
    except np.linalg.LinAlgError:
        return
    if not np.all(np.isfinite(z)) or z.sum() == 0:
        return
    x_acc = (z / z.sum()) @ X[1:]
    R_acc = cols.residual(ws, x_acc, b)
    if _objective(R_acc, x_acc, t1, t2) < _objective(R, x[ws], t1, t2):
        x[ws] = x_acc
        R[:] = R_acc


def _solve_working_set(cols, ws, R, x, b, t1, t2, inner_tol, check_every, anderson) -> int:
    """Coordinate-descent sweeps on the columns ``ws`` (Anderson-extrapolated every ``ANDERSON_K`` sweeps when
    asked) until the restricted problem's gap is ``<= inner_tol``; returns the number of sweeps."""
    history: list[np.ndarray] = []
    for sweep in range(1, MAX_INNER_SWEEPS + 1):
        if cols.sweeps(ws, R, x, t1, t2, 1) == 0.0:
            break  # a fixed point: no sweep will change anything
        if anderson:
            history.append(x[ws].copy())
            if len(history) == ANDERSON_K + 1:
                _anderson(cols, ws, history, R, x, b, t1, t2)
                history = []
        if sweep % check_every == 0 and gap_and_value(cols.dots(ws, R), R, b, x[ws], t1, t2)[0] <= inner_tol:
            break
    return sweep


@register("coordinate_descent", needs=("A", "phi", "reg", "scale"), tol=1e-8, max_iter=200)
def coordinate_descent(
    problem, x0=None, *, working_set=True, anderson=True, ws_start=100, check_every=10, **stop: Unpack[Stop]
) -> SolveResult:
    """Lasso / elastic-net coordinate descent with working sets and a duality-gap stop; max_iter counts outer
    iterations (see the module docstring)."""
    tol, max_iter = stop["tol"], stop["max_iter"]
    form = lasso_form(problem)
    if form is None:
        raise InputError(
            "problem", "coordinate_descent takes a squared-loss ERM with an L1 or ElasticNet regulariser (the lasso)"
        )
    check_count(ws_start, field="ws_start", minimum=1)
    check_count(check_every, field="check_every", minimum=1)
    t1, t2 = form
    s = float(problem.scale)
    cols = _Columns(problem.A)
    A, b = cols.A, np.asarray(problem.phi.b, dtype=float)
    D = problem.dim
    run = Run("coordinate_descent", **stop)
    x = start_point(problem, x0)
    R = b - A @ x
    size = 0
    converged, message, k = False, f"max_iter ({max_iter} outer iterations) reached", 0
    for k in range(1, max_iter + 1):
        u = A.T @ R
        run.passes += 1
        gap, primal = gap_and_value(u, R, b, x, t1, t2)
        done = s * gap <= tol
        ok = "converged: duality gap <= tol" if done else None
        why = record_and_stop(run, x, s * primal, ok, gap=s * gap, working_set=size)
        if why or k == max_iter:
            converged, message = done, why or message
            break
        if working_set:
            score = (t1 - np.abs(u)) / np.sqrt(np.where(cols.L > 0, cols.L, np.inf))
            score[x != 0] = -np.inf
            size = min(D, max(ws_start, 2 * int(np.count_nonzero(x)), 2 * size))
            ws = np.sort(np.argpartition(score, size - 1)[:size]) if size < D else np.arange(D)
        else:
            ws, size = np.arange(D), D
        inner_tol = max(0.3 * gap, tol / s, 1e-15 * primal)  # the floor: rounding, when tol = 0
        sweeps = _solve_working_set(cols, ws, R, x, b, t1, t2, inner_tol, check_every, anderson)
        run.passes += sweeps * (1 + 1 / check_every + (1 / ANDERSON_K if anderson else 0)) * size / D
    return run.result(x, float(problem.value(x)), k, converged, message)
