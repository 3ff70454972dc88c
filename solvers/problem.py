"""The problem protocol shared by every solver in the core: what a problem may offer, and who reads it.

A problem is the minimisation of a finite sum plus an optional constraint or simple regulariser,

    f(x) = (1/n) * sum_{i<n} f_i(x)  [+ r(x)]      subject to  x in C,

seed 001 (Defazio) eq. (1.1), seed 003 section 6.3. Solvers ask only for what they need, so a
problem implements the required members (:class:`Problem`) and whichever optional ones it can
offer. **Every optional member a solver may read is declared in** :data:`CAPABILITIES` below, with
its type, meaning and the solvers that use it; :func:`offers` and :func:`capability` refuse a name
that is not declared there, and so does ``registry.register(needs=...)``. A member that is absent
or ``None`` is not offered. Adding a capability is adding a row here.

Conventions: minimisation; ``value`` is the *mean* over terms (plus regulariser); one "pass" is one
sweep over the data (a full gradient costs one pass, ``n_terms`` term gradients cost one pass).

The callback rule (every solver): ``callback(x)`` is called once per iteration (per epoch for the
finite-sum solvers) with the current iterate; the solver stops, reporting "stopped by callback",
when it returns a **truthy** value (``True``, ``np.True_``, a non-zero number...); ``None`` (what
``list.append`` returns) continues. It is implemented once, :meth:`solvers.monitor.Run.callback_stops`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .errors import InputError


@runtime_checkable
class Problem(Protocol):
    """Required members of every problem (the optional ones are the rows of :data:`CAPABILITIES`)."""

    dim: int
    n_terms: int

    def value(self, x: np.ndarray) -> float: ...

    def grad(self, x: np.ndarray) -> np.ndarray: ...

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]: ...


@dataclass(frozen=True)
class Capability:
    """One optional member of a problem: its name, type, meaning and the solvers that read it."""

    name: str
    type: str
    meaning: str
    used_by: str


_TABLE = """
name :: type :: meaning :: solvers that read it
-- generic members --
hessian :: (x, *, items=None) -> (dim, dim) array :: dense Hessian of f (or a model of it); ``items=`` (optional keyword) averages over a subset of the terms (subsampled); ``free=`` (a boolean mask, the box solver's keyword) reads only those rows and columns :: newton (needs), box_newton (needs, with free=), auto
hvp :: (x, v) -> (dim,) array :: Hessian-vector product :: none today (offered for users)
term_grad :: (i, x) -> (dim,) array :: gradient of term f_i (incl. its share of a ridge term) :: sag, saga, svrg, s2gd, sgd, finito, miso: the generic Python per-term path
project :: (x) -> (dim,) array :: Euclidean projection onto C :: projected_gradient, every prox-based solver when there is no prox
prox :: (x, step) -> (dim,) array :: prox of step * r (l1: soft threshold; sets: projection) :: gd, proximal_gradient, heavy_ball, nesterov, saga, svrg, sgd, sag (monitor's gradient mapping), ista, fista (needs)
constraint :: str :: "none", "simplex", "box", "product"; absent means "none" :: registry (constraints=), newton/lbfgs (simplex QP), em, bm/sbm
bounds :: (lower (dim,), upper (dim,)) arrays :: the box of a "box" problem (infinite entries for no bound) :: lbfgsb (needs)
L :: float :: Lipschitz constant of grad f :: heavy_ball, nesterov, ista, fista (needs), gd, step defaults
L_max :: float :: max over terms of the term Lipschitz constants :: step defaults of the finite-sum solvers
mu :: float | None :: strong-convexity constant of f :: finito, miso, prox_finito, sdca (needs), sgd schedule
x0 :: () -> (dim,) array :: a feasible start :: every solver when no x0 is given
restrict :: (idx) -> problem :: the same problem on coordinates idx, the others fixed at 0 :: newton's working set
screen :: (k) -> int array :: a cheap guess of the k most useful coordinates :: newton's working set
hessian_approximate :: bool :: True when hessian is a model of the curvature, not the exact Hessian (the Rényi weights' Fisher blend) :: newton's growing working set (secant-corrected chord steps)
hessian_cheap :: bool :: True when the Hessian over every term costs a small part of a value-and-gradient pass (the Rényi weights at γ = 1: one column per item) :: newton's working set (no subsampled Hessian)
subsample :: (items) -> problem :: the same problem averaged over the terms items only (no copy of the data) :: newton's working set (warm start)
n_classes :: int :: number of classes K of a log-linear model (pass accounting) :: newton
dtype :: numpy dtype :: storage precision of the data (float32 storage is re-read exactly) :: newton
-- the structured data of model families (read by compiled paths and model-specific solvers) --
linear_terms :: solvers.problems.linear_models.LinearTerms :: rows, labels and loss id of f_i(x) = phi(a_i.x, y_i) + (l2/2)|x|^2, read by the compiled kernels :: sag, saga, svrg, s2gd, sgd, finito, miso, sdca (compiled paths), auto (variance_reduced_auto), monitor
multinomial_terms :: solvers.problems.linear_models.MultinomialTerms :: rows and labels of softmax regression, read by the compiled multinomial kernels :: sag, saga, svrg, s2gd, sgd, finito, miso, sdca, prox_finito (compiled paths), auto, monitor
ridge_terms :: LinearTerms | MultinomialTerms | None :: the terms of a pure ridge model (l2 > 0, l1 = 0), else None :: sdca, prox_finito (needs)
A :: (n_terms, d) array or CSR matrix :: the data rows of a linear / softmax model :: saga, svrg, finito, prox_finito (table sums at BLAS speed), coordinate_descent (the lasso's columns)
sqnorms :: (n_terms,) array :: squared row norms |a_i|^2 :: sdca, prox_finito (multinomial), sgd (hinge step)
curvature :: float :: upper bound on phi'' of a linear model's loss (inf for the hinge) :: sdca
loss :: str :: the loss of a linear model ("logistic", "squared", ...) :: heavy_ball (Polyak tuning), messages
smooth :: bool :: False when the objective is not differentiable (hinge) :: gd, heavy_ball, nesterov, saga, svrg, finito refuse it; auto
smooth_value :: (x) -> float :: value of the smooth part (f without the l1 term) :: gd backtracking, ista, fista (needs)
l2 :: float :: ridge coefficient (l2/2)|x|^2 inside each term :: finite-sum kernels, term strong convexity, bm/sbm
l1 :: float :: lasso coefficient l1|x|_1 (handled by prox) :: saga, svrg, sgd kernels, auto; finito, sdca, bm refuse it
features_ndk :: (n_items, dim, n_classes) array :: features of a conditional log-linear model, agent-major (the log pool's store) :: sag, saga, svrg, sgd, finito (compiled log-pool kernels)
features :: (n_items, n_classes, dim) array or KroneckerFeatures :: features f_n(y) of a conditional log-linear model :: bm, sbm (needs)
labels :: (n_items,) int64 array :: observed classes y_n of a log-linear model :: bm, sbm (needs), compiled log-pool kernels
log_h :: (K,) or (n, K) array | None :: log base measure of a log-linear model :: bm, sbm
lam :: float :: ridge coefficient of a log-linear model (l2 is read when absent) :: bm, sbm
sample_weight :: (n,) array | None :: per-item weights of a log-linear model or a mixture (weighted problems offer no features_ndk / mixture_rows) :: bm, sbm
mixture :: (x) -> (n_items,) array :: (Q x)_n of a mixture likelihood, in the scaled units :: em (needs)
mixture_rows :: (n_items, dim) array :: the rows Q (scaled by their maxima) of an unweighted mixture likelihood :: sag, saga, svrg, sgd, finito (compiled linear-pool kernels)
mixture_offset :: float :: the constant the row scaling removed from a mixture's objective :: em (needs)
responsibilities :: (x) -> (n_items, dim) array :: EM's E-step w_i Q_ni / (Qw)_n :: none today (offered for users)
-- the primal-dual and splitting forms (seed 000 ch. 3, seed 003 section 6.7) --
saddle_point :: () -> solvers.problems.saddle_point.SaddlePoint :: the Sep-CCSP form min_x max_y f(x) + <x, K y> - g*(y) (seed 000 Eq. 3.19-3.28) :: pdcp (needs)
splitting :: () -> QuadraticSplit | ConsensusSplit (solvers.problems.admm_form) :: the two-block form min f(x) + g(z) s.t. A x - z = 0 :: admm (needs)
multi_block :: () -> ConsensusSplit (solvers.problems.admm_form) :: the q-block form min sum_j f_j(X_j) s.t. sum_j X_j = B (seed 000 Eq. 3.24, every A_j = I), block by block :: gauss_seidel_admm (needs)
duality_gap :: (x) -> float :: a duality gap at x (an upper bound on value(x) - min) :: ista, fista, admm (stopping test and trace)
residual :: (x) -> float :: the constraint residual of a constrained problem (RPCA: the Frobenius norm of X_1 + X_2 + X_3 - B) :: pdcp, admm (trace)
phi :: solvers.prox.Loss :: the per-term loss of an ERM problem, with its conjugate and the conjugate's prox :: spdc, adaspdc, stochastic_admm, online_admm, fobos, coordinate_descent (needs)
reg :: a regulariser of solvers.prox (value, prox, strong_convexity) :: the regulariser r(x) of an ERM problem :: spdc, adaspdc, stochastic_admm, online_admm, fobos, coordinate_descent (needs)
scale :: float :: the weight s of an ERM problem's loss sum (1/N: the mean) :: spdc, adaspdc, coordinate_descent
-- stochastic smoothing (seed 002 ch. II) and the kernel SVM of chapter IV --
smoothed_term_grad :: (i, x, gamma) -> (dim,) array :: gradient of the Nesterov-smoothed term f_gamma(x, xi_i) + g(x) (seed 002 eq. 23); gamma = 0 gives a subgradient :: ansgd (needs)
nesterov_smoothing :: solvers.smoothing.SmoothingConstants :: L_g, mu of g, D_U, zeta of omega and the estimate of E|A_xi|^2 (seed 002 Table 1, L986) :: ansgd (needs), acsa (L of the smooth part)
cvm_kernel :: solvers.problems.cvm_svm.CVMDual :: the CVM-form L2-SVM dual (seed 002 eq. 116): entries A_pq = y_p y_q (k_pq + 1) + delta_pq / 2C computed on demand, with an optional column cache :: sfw, msfw (needs)
"""
"""The declaration of every optional member, one row each: ``name :: type :: meaning :: solvers that read it``."""


def _parse(table: str) -> dict[str, Capability]:
    rows = [ln.split(" :: ") for ln in table.strip().splitlines()[1:] if " :: " in ln]
    return {r[0]: Capability(*r) for r in rows}


CAPABILITIES: dict[str, Capability] = _parse(_TABLE)
"""Every optional member a problem may offer, by name (generic members first, then the structured
data of the model families that compiled paths read)."""


def _declared(names: tuple[str, ...], field: str) -> None:
    for m in names:
        if m not in CAPABILITIES:
            raise InputError(field, f"{m!r} is not a declared problem capability; declared: {sorted(CAPABILITIES)}")


def offers(problem: object, *members: str) -> bool:
    """True when ``problem`` offers every named optional member (and it is not ``None``).

    Every name must be declared in :data:`CAPABILITIES` (a typo raises instead of reading as absent).
    """
    _declared(members, "members")
    return all(getattr(problem, m, None) is not None for m in members)


def capability(problem: object, name: str, default: Any = None) -> Any:
    """The problem's member ``name`` (declared in :data:`CAPABILITIES`), or ``default`` when absent."""
    if name not in CAPABILITIES:
        _declared((name,), "name")
    v = getattr(problem, name, None)
    return default if v is None else v


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


def prox_of(problem: object) -> Callable[[np.ndarray, float], np.ndarray]:
    """``prox(x, step)``: the problem's prox, else its projection, else the identity (unconstrained)."""
    if offers(problem, "prox"):
        return problem.prox  # type: ignore[attr-defined]
    if offers(problem, "project"):
        proj = problem.project  # type: ignore[attr-defined]
        return lambda x, step: proj(x)
    if constraint_of(problem) != "none":
        raise InputError(
            "problem",
            f"{type(problem).__name__} is constrained ({constraint_of(problem)!r}) but offers neither prox nor project",
        )
    return lambda x, step: x


def constant(problem: object, name: str, default: float | None = None) -> float | None:
    """The problem's constant ``name`` (``L``, ``L_max``, ``mu``...) as a float, ``default`` when absent or infinite."""
    v = capability(problem, name)
    if v is None:
        return default
    v = float(v)
    return v if math.isfinite(v) else default
