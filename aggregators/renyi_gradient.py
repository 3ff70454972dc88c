"""Exact gradients of the Rényi pool's validation log-likelihood, by implicit differentiation.

Seed 000 section 2.6: the weights (and γ, and the annealing λ of Eq. 2.21-2.22) are learnt by
maximising ``Σ_n log P_agg(y_n | w, γ, λ)`` on a validation set. ``P_agg`` is defined implicitly by
the fixed point ``r = F(r; θ)`` of Eq. (2.8) (``r = log P_agg``), so

    dr/dθ = (I - ∂F/∂r)^{-1} ∂F/∂θ = H^{-1} D_Q ∂F/∂θ,

with the symmetric positive-definite ``H`` of :mod:`aggregators.renyi_kernels`. The adjoint of the
log-likelihood of label ``y`` is one solve with ``H`` per item, ``H λ = e_y`` (dense, Woodbury or CG by
shape, :mod:`aggregators.renyi_hessian`), and then (per agent j,
``S = Σ_i w_i/γ_i``, ``w'_j = (w_j/γ_j)/S``, ``d_j = log P_j - r``):

    ∂ log P(y)/∂w_j = (λ·Q_j - λ·Q) / (γ_j S)
    ∂ log P(y)/∂γ_j = w'_j Σ_y λ Q_j (d_j - Q_j·d_j) - (w'_j/γ_j)(λ·Q_j - λ·Q)
    ∂ log P(y)/∂λ_j = w'_j γ_j Σ_y λ Q_j (log P_j - Q_j·log P_j)       (raw, un-annealed log P_j)

(the last two are checked against finite differences in the tests, like the first).

:class:`RenyiProblem` is the weight-learning problem in the protocol of :mod:`solvers.problem`
(mean negative log-likelihood, minimised). Its variable is the weights alone (constraint
``"simplex"``), or the weights followed by ``log γ`` (shared or per agent) and ``log λ`` (per agent)
(constraint ``"product"``: simplex times a box, with ``project``). Fixed points are warm-started
from the previous evaluation, so after the first few solver iterations each evaluation costs one or
two Newton sweeps.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.errors import InputError
from solvers.simplex import project_simplex

from .renyi_fixed_point import anneal, check_no_zero, hessian_mode, mixture_weights, solve_fixed_point

__all__ = ["RenyiProblem", "renyi_loglik_grad"]

FIT_ADJOINT_RTOL = 1e-10
"""CG's relative residual for the adjoint in the weight fits (:class:`RenyiProblem`; elsewhere
:data:`aggregators.renyi_kernels.ADJOINT_RTOL`, 1e-12).
The gradient's error is then about 1e-10 relative, a hundred times below the fits' stopping tests
(relative gap 1e-8) and the primal residual's own effect; at 8,000 × 269 × 64 (gaussian-logit) it
saved 7-9 % of a fit's time (1.5-2 CG products an item in every value-and-gradient pass; session 26,
``benchmarks/results/session26.md``)."""

LOG_GAMMA_BOUNDS = (np.log(1e-4), 0.0)
"""Box for ``log γ`` when γ is learnt: γ in [1e-4, 1]."""
LOG_LAM_BOUNDS = (np.log(0.05), np.log(20.0))
"""Box for ``log λ`` when the annealing exponents are learnt: λ in [0.05, 20]."""


def renyi_loglik_grad(
    L: np.ndarray,
    labels: np.ndarray,
    w: np.ndarray,
    gamma: np.ndarray,
    lam: np.ndarray | None = None,
    *,
    init: np.ndarray | None = None,
    tol: float = 1e-12,
    want: tuple[str, ...] = ("w",),
    solved: np.ndarray | None = None,
    hessian: str = "auto",
    sample_weight: np.ndarray | None = None,
    check_finite: bool = True,
    adjoint_rtol: float | None = None,
) -> tuple[float, dict[str, np.ndarray], np.ndarray, int]:
    """Mean log-likelihood of ``labels`` under the Rényi pool and its exact gradients.

    ``L`` (n, A, K) validated finite log-probs; ``w`` (A,) on the simplex (not renormalised here:
    the gradient is the one of the formula with ``S = Σ w/γ``, valid on the simplex); ``gamma``
    (A,); ``lam`` (A,) or None. ``want`` picks gradients among ``"w"``, ``"gamma"``, ``"lam"``
    (each per agent). ``solved`` passes an already solved aggregate (n, K) for these parameters,
    so only the adjoint pass runs. ``hessian`` picks the solve with ``H`` (as in
    :func:`aggregators.renyi_fixed_point.solve_fixed_point`). ``sample_weight``: ``None`` or checked
    per-item weights; every mean over items is then the weighted mean. ``check_finite=False``: ``L``
    is known to hold no ``-inf`` (:func:`solve_fixed_point` skips its pass over it). ``adjoint_rtol``:
    the relative residual to which CG solves the adjoint ``H λ = e_y`` (default
    :data:`aggregators.renyi_kernels.ADJOINT_RTOL`; the direct solves are exact; the weight fits pass
    :data:`FIT_ADJOINT_RTOL`). Returns ``(mean loglik, grads, log_q, sweeps)``.
    """
    from . import renyi_block as rb
    from . import renyi_kernels as rk

    adjoint_rtol = rk.ADJOINT_RTOL if adjoint_rtol is None else float(adjoint_rtol)
    La = anneal(L, lam)
    n = L.shape[0]
    A = L.shape[1]
    fused_W = None
    if solved is None:
        # the weights' gradient alone: the adjoint runs in the fixed point's pass where it can
        # (:mod:`aggregators.renyi_fused`)
        adj = (
            (labels.astype(np.int64), np.empty((n, A)), adjoint_rtol)
            if tuple(want) == ("w",) and hessian == "auto"
            else None
        )
        fp = solve_fixed_point(
            La, w, gamma, tol=tol, init=init, hessian=hessian, check_finite=check_finite, adjoint=adj
        )
        log_q, sweeps, stable = fp.log_q, int(fp.sweeps.sum()), fp.mode == "stable"
        if fp.adjoint_done and adj is not None:
            fused_W = adj[1]
    else:
        log_q, sweeps, stable = solved, 0, bool(gamma.min() < rk.STABLE_BELOW)
    c = None if sample_weight is None else sample_weight / sample_weight.sum()

    def mean(v: np.ndarray) -> np.ndarray:
        return v.mean(axis=0) if c is None else c @ v

    ll = float(mean(log_q[np.arange(n), labels]))
    grads: dict[str, np.ndarray] = {}
    if not want:
        return ll, grads, log_q, sweeps
    wp = mixture_weights(w, gamma)
    Wm = np.empty((n, A)) if fused_W is None else fused_W
    GG = np.empty((n, A))
    LLm = np.empty((n, A))
    lam_grad = "lam" in want
    if fused_W is None:  # the adjoint's own pass
        if not (stable or lam_grad) and hessian == "auto" and rb.fits(A, L.shape[2]):
            rb.adjoint_items(np.ascontiguousarray(La), wp, gamma, log_q, labels.astype(np.int64), Wm, GG)
        else:
            _adjoint_per_item(
                La, L, wp, gamma, log_q, labels, hessian, stable, lam_grad, Wm, GG, LLm, "gamma" in want, adjoint_rtol
            )
    S = float(np.sum(w / gamma))
    wbar = mean(Wm)
    if "w" in want:
        grads["w"] = wbar / (gamma * S)
    if "gamma" in want:
        grads["gamma"] = wp * mean(GG) - (wp / gamma) * wbar
    if lam_grad:
        grads["lam"] = wp * gamma * mean(LLm)
    return ll, grads, log_q, sweeps + n


def _adjoint_per_item(
    La, L, wp, gamma, log_q, labels, hessian, stable, lam_grad, Wm, GG, LLm, gamma_grad=True, rtol=None
):
    """:func:`aggregators.renyi_kernels.adjoint_items` with the Hessian solve chosen for the agents of
    positive weight."""
    from . import renyi_kernels as rk

    ugam, gidx = np.unique(gamma, return_inverse=True)
    rk.adjoint_items(
        np.ascontiguousarray(La),
        wp,
        gamma,
        gidx.astype(np.int64),
        ugam,
        log_q,
        labels.astype(np.int64),
        hessian_mode(hessian, int(np.count_nonzero(wp)), L.shape[2], float(gamma[wp > 0].min())),
        stable,
        lam_grad,
        np.ascontiguousarray(L),
        Wm,
        GG,
        LLm,
        gamma_grad,
        rk.ADJOINT_RTOL if rtol is None else rtol,
    )


class RenyiProblem:
    """Negative mean validation log-likelihood of the Rényi pool, in the solver protocol.

    Parameters
    ----------
    log_probs : (n, A, K) validated, floored, normalised log-probabilities.
    labels : (n,) int labels.
    gamma : scalar or (A,) fixed γ (the start when γ is learnt).
    lam : None or (A,) fixed annealing exponents (the start when λ is learnt).
    learn_gamma : ``None`` (fixed), ``"shared"`` (one γ) or ``"per_agent"``; learnt as ``log γ``.
    learn_lam : learn per-agent ``log λ``.
    tol : fixed-point tolerance per evaluation.
    checked : ``log_probs`` are known to hold no ``-inf`` (they passed
        :func:`aggregators.validation.as_floored_log_probs`, as a pool's do); otherwise they are tested
        once here (one pass), not at every evaluation.
    sample_weight : ``None`` or checked per-item weights (the objective is the weighted mean).
    adjoint_rtol : CG's relative residual for the adjoint (default :data:`FIT_ADJOINT_RTOL`).

    The variable is ``x = [w (A), log γ (0, 1 or A), log λ (0 or A)]``; ``project`` maps onto the
    simplex times the boxes :data:`LOG_GAMMA_BOUNDS`, :data:`LOG_LAM_BOUNDS`. With nothing but the
    weights free the constraint is ``"simplex"`` (any simplex solver applies), else ``"product"``.
    """

    def __init__(
        self,
        log_probs: np.ndarray,
        labels: np.ndarray,
        gamma: Any = 1.0,
        lam: Any = None,
        *,
        learn_gamma: str | None = None,
        learn_lam: bool = False,
        tol: float = 1e-12,
        sample_weight: np.ndarray | None = None,
        checked: bool = False,
        adjoint_rtol: float | None = None,
    ) -> None:
        self.L = np.ascontiguousarray(log_probs, dtype=np.float64)
        if not checked:
            check_no_zero(self.L)
        self.sample_weight = sample_weight
        self.labels = np.asarray(labels, dtype=np.int64)
        n, A, K = self.L.shape
        self.n_agents = A
        g = np.asarray(gamma, dtype=np.float64)
        self.gamma0 = np.full(A, float(g)) if g.ndim == 0 else g.copy()
        self.lam0 = None if lam is None else np.broadcast_to(np.asarray(lam, dtype=np.float64), (A,)).copy()
        if learn_gamma not in (None, "shared", "per_agent"):
            raise InputError("learn_gamma", f"must be None, 'shared' or 'per_agent'; got {learn_gamma!r}")
        self.learn_gamma = learn_gamma
        self.learn_lam = bool(learn_lam)
        self.n_gamma = 0 if learn_gamma is None else (1 if learn_gamma == "shared" else A)
        self.n_lam = A if self.learn_lam else 0
        self.dim = A + self.n_gamma + self.n_lam
        self.n_terms = n
        self.constraint = "simplex" if self.dim == A else "product"
        self.tol = tol
        self.adjoint_rtol = float(FIT_ADJOINT_RTOL if adjoint_rtol is None else adjoint_rtol)
        self._warm: np.ndarray | None = None
        self._cache: tuple[bytes, float, np.ndarray | None] | None = None
        self.sweeps = 0
        self.n_evals = 0

    # -- parameters ------------------------------------------------------------------------------
    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(w, gamma (A,), lam (A,) or None)`` from the variable ``x``."""
        A = self.n_agents
        w = np.asarray(x[:A], dtype=np.float64)
        if self.learn_gamma == "shared":
            gamma = np.full(A, np.exp(x[A]))
        elif self.learn_gamma == "per_agent":
            gamma = np.exp(x[A : 2 * A])
        else:
            gamma = self.gamma0
        gamma = np.minimum(gamma, 1.0)
        lam = np.exp(x[A + self.n_gamma :]) if self.learn_lam else self.lam0
        return w, gamma, lam

    def x0(self) -> np.ndarray:
        parts = [np.full(self.n_agents, 1.0 / self.n_agents)]
        if self.learn_gamma == "shared":
            parts.append(np.log([float(np.exp(np.mean(np.log(self.gamma0))))]))
        elif self.learn_gamma == "per_agent":
            parts.append(np.log(self.gamma0))
        if self.learn_lam:
            parts.append(np.log(self.lam0) if self.lam0 is not None else np.zeros(self.n_agents))
        return np.concatenate(parts)

    def rest_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The box of the variables after the weights (``log γ``, ``log λ``): lower and upper arrays."""
        lo = [LOG_GAMMA_BOUNDS[0]] * self.n_gamma + [LOG_LAM_BOUNDS[0]] * self.n_lam
        hi = [LOG_GAMMA_BOUNDS[1]] * self.n_gamma + [LOG_LAM_BOUNDS[1]] * self.n_lam
        return np.array(lo, dtype=np.float64), np.array(hi, dtype=np.float64)

    def project(self, x: np.ndarray) -> np.ndarray:
        A = self.n_agents
        out = np.array(x, dtype=np.float64, copy=True)
        out[:A] = project_simplex(out[:A])
        if self.n_gamma:
            out[A : A + self.n_gamma] = np.clip(out[A : A + self.n_gamma], *LOG_GAMMA_BOUNDS)
        if self.n_lam:
            out[A + self.n_gamma :] = np.clip(out[A + self.n_gamma :], *LOG_LAM_BOUNDS)
        return out

    # -- objective -------------------------------------------------------------------------------
    def _evaluate(self, x: np.ndarray, grad: bool) -> tuple[float, np.ndarray | None]:
        key = np.asarray(x, dtype=np.float64).tobytes()
        solved = None
        if self._cache is not None and self._cache[0] == key:
            if self._cache[2] is not None or not grad:
                return self._cache[1], self._cache[2]
            if np.isfinite(self._cache[1]):
                solved = self._warm  # value() solved this very point: only the adjoint pass is needed
        w, gamma, lam = self.unpack(x)
        if np.any(w < 0) or w.sum() <= 0:
            return np.inf, None
        w = w / w.sum()
        want: tuple[str, ...] = ()
        if grad:
            want = ("w",) + (("gamma",) if self.n_gamma else ()) + (("lam",) if self.n_lam else ())
        ll, gr, log_q, sweeps = renyi_loglik_grad(
            self.L,
            self.labels,
            w,
            gamma,
            lam,
            init=self._warm,
            tol=self.tol,
            want=want,
            solved=solved,
            sample_weight=self.sample_weight,
            check_finite=lam is not None,  # L was checked once; annealing (an extreme λ) is checked
            adjoint_rtol=self.adjoint_rtol,
        )
        self.sweeps += sweeps
        self.n_evals += 1
        if np.isfinite(log_q).all():
            self._warm = log_q
        f = -ll
        g = None
        if grad:
            parts = [-gr["w"]]
            if self.learn_gamma == "shared":
                parts.append(np.array([-np.sum(gr["gamma"]) * gamma[0]]))
            elif self.learn_gamma == "per_agent":
                parts.append(-gr["gamma"] * gamma)
            if self.learn_lam:
                parts.append(-gr["lam"] * lam)
            g = np.concatenate(parts)
        self._cache = (key, f, g)
        return f, g

    def value(self, x: np.ndarray) -> float:
        return self._evaluate(x, grad=False)[0]

    def grad(self, x: np.ndarray) -> np.ndarray:
        return self._evaluate(x, grad=True)[1]  # type: ignore[return-value]

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        f, g = self._evaluate(x, grad=True)
        return f, g  # type: ignore[return-value]

    @property
    def hessian(self) -> Any:
        """The Fisher model of the Hessian in ``[w, log γ]``
        (:func:`aggregators.renyi_joint_curvature.joint_hessian`, ``hessian(x, free=None)``), offered when
        γ is learnt (shared or per agent) and λ is not; ``None`` otherwise (the protocol's "absent")."""
        if self.learn_gamma is None or self.learn_lam:
            return None
        from .renyi_joint_curvature import joint_hessian

        return lambda x, *, free=None: joint_hessian(self, x, free)

    def _solved_at(self, x: np.ndarray) -> np.ndarray | None:
        """The aggregate at ``x`` when the last evaluation was at that very point, else ``None``."""
        x = np.asarray(x, dtype=np.float64)
        if self._cache is not None and self._cache[0] == x.tobytes() and np.isfinite(self._cache[1]):
            return self._warm
        return None

    def solved_log_q(self, x: np.ndarray) -> np.ndarray:
        """The aggregate at ``x``: the last evaluation's when it was at ``x`` (:meth:`_solved_at`), else solved."""
        log_q = self._solved_at(x)
        return self.log_q(x) if log_q is None else log_q

    def log_q(self, x: np.ndarray) -> np.ndarray:
        """The aggregate at ``x`` on the problem's data (n, K)."""
        w, gamma, lam = self.unpack(x)
        La = anneal(self.L, lam)
        return solve_fixed_point(
            La, w / w.sum(), gamma, tol=self.tol, init=self._warm, check_finite=La is not self.L
        ).log_q
