"""``RenyiPool``: the weighted Rényi divergence aggregator with learnt weights (seed 000, §2.4-2.6).

The estimator maximises the validation log-likelihood ``Σ_n log P_agg(y_n | w, γ, λ)`` over the
weights ``w`` on the simplex (exact gradients by implicit differentiation,
:mod:`aggregators.renyi_gradient`), through :func:`solvers.minimize` with a registered solver.
``solver="auto"`` (the default) is working-set Newton with the curvature (Fisher and empirical
Fisher, blended) of :mod:`aggregators.renyi_weight_hessian` when only the weights are learnt; when γ or λ
are learnt with them, the simplex times their box becomes one box (:mod:`solvers.problems.orthant`) for
projected Newton with the joint Fisher model (:data:`JOINT_SOLVER`; γ learnt) or SciPy's truncated Newton
(:data:`JOINT_FALLBACK`; λ learnt, or the weights fixed); spectral projected gradient, the choice before
both, stalled. From a start (the log pool's weights,
a neighbouring γ's optimum) Newton grows its working set from it; without one, from 1,000 items up, it
first solves a random quarter of the items (recursively). Either way it then takes full exact-gradient
passes with float32 curvatures over at most 2,000 sampled items, BFGS-corrected between steps.

γ (``gamma``):

- a number in (0, 1] or one per agent: fixed;
- ``"grid"``: fit the weights at every γ of ``gamma_grid`` by continuation (smallest first, from
  the log pool's weights, the limit γ → 0 of Eq. 2.8; each later fit warm-started with the previous
  γ's weights, aggregate and working set, to ``grid_tol``), keep the best (refitted to ``tol``);
  ``validation_curve_`` holds the curve behind Fig. 2.1a / 2.5a (log-likelihood and perplexity
  against γ);
- ``"learn"``: the grid, then the maximum of the profile likelihood ``max_w ℓ(w, γ)`` in ``log γ``
  between the grid neighbours of the best grid point (safeguarded secant on its exact derivative:
  by the envelope theorem it is ``γ ∂ℓ/∂γ`` at the fitted weights, from the implicit gradient);
- ``"learn_per_agent"``: as ``"learn"``, then one γ_i per agent (in [1e-4, 1]) refined jointly with
  ``w`` by the solver on the product set simplex x box.

``converged_`` says whether the final solver run met its tolerance; when it did not (the joint
per-agent γ problem is badly scaled and may stop at ``max_iter``), ``fit`` warns with scikit-learn's
``ConvergenceWarning``.

With ``cv=k`` the grid is scored by k-fold held-out log-likelihood instead of the in-sample fit
(the curve then records both). ``learn_lam=True`` also learns the per-agent annealing exponents
λ_i of the maximum-entropy form (Eq. 2.21-2.22); ``lam=`` fixes them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import KW_ONLY, dataclass
from typing import Any

import numpy as np

from solvers.methods.newton import WS_MIN
from solvers.problems.loglinear import ConditionalLogLinear
from solvers.problems.orthant import SimplexAsOrthant
from solvers.progress import ProgressFn, report, scaled
from solvers.registry import minimize

from .base import Pool
from .renyi_fixed_point import anneal, check_gamma, check_lam, renyi_aggregate
from .renyi_gradient import RenyiProblem
from .renyi_joint_curvature import InGamma
from .renyi_weight_hessian import RenyiWeightProblem
from .validation import DEFAULT_FLOOR, PredictionError, Predictions

__all__ = ["RenyiPool", "DEFAULT_GAMMA_GRID"]

DEFAULT_GAMMA_GRID = tuple(float(g) for g in np.logspace(-3, 0, 13))
"""γ from 1e-3 to 1, four points per decade (log-spaced, as the seed's figures)."""

_GAMMA_MODES = ("grid", "learn", "learn_per_agent")

TNC_EVALS_PER_ITER = 4
"""``max_iter`` counts iterations; TNC's budget is evaluations: it gets this many per iteration allowed."""

JOINT_SOLVER = "box_newton"
"""Solver of the joint weights-and-γ stage, on the box form (:mod:`solvers.problems.orthant`): projected
Newton (:mod:`solvers.methods.box_newton`) with the Fisher model of
:mod:`aggregators.renyi_joint_curvature`, BFGS-corrected. Measured against TNC from the same start
(``benchmarks/bench_renyi_per_agent.py``, session 27; ``benchmarks/RESULTS.md``)."""

JOINT_OPTIONS = {"ridge": 1e-3, "adapt_ridge": True}
""":data:`JOINT_SOLVER`'s options: a floor of 1e-3 times the mean free curvature under the Fisher model,
adapted (between 1e-6 and 0.1: :func:`solvers.methods.box_newton.box_newton`'s ``adapt_ridge``). Near-
duplicate agents make the model near-singular along weight exchanges between copies, where Newton's steps
overshot every other iteration; a fixed floor slows the last steps along the flat directions. Session 27,
1,000 × 269 × 64, the joint stage alone, seconds for a fixed ridge 0 / 1e-4 / 1e-3 / 1e-2: near-duplicate
44.3 / 18.4 / 11.0 / 11.9, gaussian-logit 17.6 / 16.7 / 15.1 / 17.7, noise 13.8 / 13.2 / 11.2 / 8.0,
many-active 22.5 / 23.4 / 17.8 / 17.5; with 1e-2 gaussian-logit 2,000 × 30 × 16
(``benchmarks/bench_renyi_per_agent.py``) took 2,724 evaluations against 1e-3's 253. Session 28, the pool
end to end at 1,000 × 269 × 64, fixed 1e-3 against adapted: near-duplicate 24.9 → 18.1 s (TNC's stage:
18.8 s in session 27), gaussian-logit 16.7 / 17.2, many-active 21.7 / 20.3, noise 14.4 / 14.0, competition
2.7 / 2.6; the benchmark's gaussian-logit 2,000 × 30 × 16 253 → 52 evaluations, near-duplicate 220 → 92."""

JOINT_FALLBACK = "tnc"
"""Solver of the joint stages without a curvature model (λ learnt, or the weights held fixed):
SciPy's truncated Newton. On four families at 800 × 12 × 8 and 2,000 × 30 × 16 (same start;
``benchmarks/bench_renyi_per_agent.py``, session 25) it reached the best objective of five solvers in 8 of 8
problems with 4-960 evaluations; SLSQP on the same box form 11-772 evaluations but once 8.3e-6 and once 4e-7
worse; L-BFGS-B did not converge in 2,000 iterations on two; spectral projected gradient (the choice before)
stopped 3e-4 to 2.2e-3 above the best in 7 of 8. TNC's memory and iteration are ``O(dim)`` (SLSQP's
``O(dim³)``). If it stops short of the tolerance, L-BFGS-B continues from its point."""

LIMIT_START_GAMMA = 0.25
"""A fit at one shared γ up to this starts from the log pool's weights (the γ → 0 limit)."""

SHUFFLE_MIN_ENTRIES = 1 << 25
"""Inputs of at least this many numbers (268 MB of float64) are fitted with their items shuffled
(:meth:`RenyiPool._fit_shuffle`). Below it the warm start's copies cost little (its quarter: 67 MB,
about 0.16 s at this VM's 2.4 ns a fresh byte) and the fit takes the solver's own random subsets, the
very ones the chunked fit (:mod:`cluster.chunked_problem`) takes: the two fits are then the same to
1e-10, as ``tests/cluster`` checks. Above it the two start on different random quarters and agree to
the tolerance only."""
SHUFFLE_MIN_ITEM = 1024
"""... and items of at least this many numbers (agents × classes): the shuffled pass gathers whole items,
at the speed of the plain pass for large ones (1.01-1.06× from 1,600 numbers an item) but not small
ones (1.10-1.51× at 100-400, 2.0-4.5× at 4-20; 2^25-number inputs, ``benchmarks/results/session21.md``
§3), where it would cost more than the copies it saves."""

START_NEGLIGIBLE = 1e-6
"""A start's weights below ``START_NEGLIGIBLE / A`` (after normalising) are set to zero
(:func:`sparse_start`): a start from an iterative fit that never reaches the boundary (the linear
pool's EM, its default until session 14, left dropped agents at 1e-24 to 1e-121, not 0) would
otherwise put every agent in the Newton solver's first working set."""


def sparse_start(w: np.ndarray) -> np.ndarray:
    """The start ``w`` normalised, its negligible weights (:data:`START_NEGLIGIBLE`) set to zero and
    the rest renormalised. Measured on the competition's sweep (first γ = 1/1.5 from the linear pool's
    weights, gaussian-logit 2,000 × 1,000 × 16, all 1,000 weights non-zero, 135 above 1e-5): 9.97 s
    (3 Newton steps on a 1,000-agent working set) → 1.68 s, the same optimum; a fresh fit 4.5 s."""
    w = np.asarray(w, dtype=np.float64)
    w = w / w.sum()
    w = np.where(w >= START_NEGLIGIBLE / w.size, w, 0.0)
    return w / w.sum()


def secant_start(a: tuple[float, np.ndarray], b: tuple[float, np.ndarray], t: float, A: int) -> np.ndarray:
    """The start of the fit at ``t = log γ`` predicted from the solutions at the two previous grid
    points ``a = (t_a, x_a)`` and ``b = (t_b, x_b)``: the secant (first-order) extrapolation of the
    weights along the optimum's path in ``log γ``, clipped at zero and renormalised; the variables
    after the ``A`` weights are ``x_b``'s. (The predictor of predictor-corrector continuation; the fit
    at ``t`` is the corrector.)

    Measured on the 10-γ sweep (0.01 to 1) at 5,000 × 269 × 64 against starting from ``x_b``, one
    process each, warm cache: gaussian-logit 12.1 → 11.0-11.2 s, noise 9.5-9.8 → 8.3-8.7 s, competition
    6.3-6.4 → 5.3-5.4 s; fewer Newton iterations at 3 of the 8 predicted γ on each family (at γ = 1 on
    the competition family 8 → 2). A three-point (quadratic) predictor was tried: no better on
    gaussian-logit and 12 iterations instead of 2 at γ = 1 on the noise family; not kept. Known loss:
    near-duplicate agents at 2,000 × 100 × 256, 1.05× (the split of weight among duplicates is extrapolated;
    ``benchmarks/results/session33.md`` §2)."""
    (ta, xa), (tb, xb) = a, b
    x = np.array(xb, dtype=np.float64)
    if tb == ta:  # a repeated grid value: no slope
        return x
    w = xb[:A] + (xb[:A] - xa[:A]) * ((t - tb) / (tb - ta))
    w = np.clip(w, 0.0, None)
    x[:A] = w / w.sum() if w.sum() > 0 else xb[:A]
    return x


@dataclass(eq=False, repr=False)
class RenyiPool(Pool):
    """Weighted Rényi divergence aggregator with weights learnt on a validation set.

    Parameters
    ----------
    gamma : float in (0, 1], array (one per agent), or ``"grid"``, ``"learn"``, ``"learn_per_agent"``.
    gamma_grid : the γ values tried by the grid modes (default :data:`DEFAULT_GAMMA_GRID`).
    lam : fixed annealing exponents λ_i (scalar or per agent), or None (λ = 1).
    learn_lam : learn per-agent λ_i (in [0.05, 20]) jointly with the weights.
    learn_weights : if False the weights stay ``weights`` (uniform by default), only γ/λ are fitted.
    weights : the weights used when ``learn_weights=False``; also the start of the fit, taken as a
        warm start (Newton from them on a growing working set with reused model Hessians, as from a
        neighbouring γ's optimum: the competition's sweep passes the previous γ's weights; since
        session 12, 32.7 s -> 9.1 s for its 7 γ on 2,000 × 269 × 64 gaussian-logit agents,
        ``benchmarks/bench_sweep_points.py``). Weights below ``1e-6 / A`` start at zero
        (:func:`sparse_start`: an EM fit, e.g. ``LinearPool(solver="em")``, leaves dropped agents at
        1e-24, not 0).
    solver : ``"auto"`` or a registered solver name (``solvers.available(problem)`` lists the
        applicable ones); ``"auto"``: Newton on the weights alone, else projected gradient.
    solver_options : extra keyword arguments for the solver (e.g. ``{"hessian_sample": 0.25}`` for
        Newton); not passed to the projected-gradient fallback of ``"auto"``.
    tol, max_iter : the solver's tolerance (Frank-Wolfe gap on the simplex, relative) and iterations.
    grid_tol : the tolerance of the grid modes' fits at each γ (the curve needs no more: its values
        are within ``grid_tol·max(1, |ℓ|)`` of the optimum at their γ); the chosen γ is refitted to
        ``tol`` from its grid fit.
    fixed_point_tol : tolerance of every fixed-point solve (log-space residual).
    cv : None, or the number of folds scoring the γ grid by held-out log-likelihood.
    floor : the probability floor applied to inputs (:func:`aggregators.validation.apply_floor`).
    random_state : seed of the CV fold assignment.

    Learnt state: ``weights_`` (n_agents,), ``gamma_`` (float, or array when per agent), ``lam_``
    (array, when annealed), ``validation_curve_`` (dict; grid modes), ``fit_result_`` (the final
    :class:`solvers.result.SolveResult`), ``loglik_`` (mean validation log-likelihood).
    """

    needs_positive = True

    gamma: Any = 0.1
    _: KW_ONLY
    gamma_grid: Any = None
    lam: Any = None
    learn_lam: bool = False
    learn_weights: bool = True
    weights: Any = None
    solver: str = "auto"
    tol: float = 1e-8
    max_iter: int = 500
    solver_options: dict | None = None
    fixed_point_tol: float = 1e-11
    grid_tol: float = 1e-6
    cv: int | None = None
    floor: float | None = DEFAULT_FLOOR
    random_state: int = 0

    # -- fitting ---------------------------------------------------------------------------------
    def _grid(self) -> np.ndarray:
        grid = DEFAULT_GAMMA_GRID if self.gamma_grid is None else self.gamma_grid
        g = np.sort(np.asarray(grid, dtype=np.float64).ravel())[::-1]
        if g.size == 0 or not np.all((g > 0) & (g <= 1)):
            raise PredictionError("gamma_grid", "must be a non-empty list of values in (0, 1]", code="bad_gamma")
        return g

    def _fit_shuffle(self, log_probs: Any) -> int | None:
        """The items in a random order (seed ``random_state``) when the fit will start with the Newton
        solver's subsampled warm start (weights learnt from no start at a fixed γ, shared above
        :data:`LIMIT_START_GAMMA` or per agent; λ fixed; solver ``auto`` or ``newton``) on an array of at
        least :data:`SHUFFLE_MIN_ENTRIES` numbers, items of :data:`SHUFFLE_MIN_ITEM` and more than the
        working set's ``ws_min`` agents: its random subsets of items are then prefixes of the
        array, views instead of copies. The floor pass writes them in that order at no extra cost; the
        copies cost 2.2 s of a 19 s fit at 20,000 × 269 × 64 (three subsets, this VM's fresh memory;
        ``benchmarks/results/session21.md``)."""
        if not isinstance(log_probs, np.ndarray) or log_probs.ndim != 3:  # validated Predictions are not copied
            return None
        _, A, K = log_probs.shape
        if log_probs.size < SHUFFLE_MIN_ENTRIES or A * K < SHUFFLE_MIN_ITEM:
            return None
        if A <= (self.solver_options or {}).get("ws_min", WS_MIN):  # no working set, no warm start
            return None
        if isinstance(self.gamma, str) or not self.learn_weights or self.learn_lam or self.weights is not None:
            return None
        if self.solver not in ("auto", "newton"):
            return None
        if np.ndim(self.gamma) == 0:
            try:
                if float(self.gamma) <= LIMIT_START_GAMMA:  # starts from the log pool's weights instead
                    return None
            except (TypeError, ValueError):
                return None
        return int(self.random_state)

    def _fit_at(
        self,
        L: np.ndarray,
        y: np.ndarray,
        gamma: np.ndarray,
        lam: np.ndarray | None,
        x0: np.ndarray | None,
        learn_gamma: str | None,
        progress: ProgressFn | None,
        sw: np.ndarray | None = None,
        warm: Any = None,
        tol: float | None = None,
    ):
        """One weight fit (plus γ/λ when learnt) with item weights ``sw``; returns ``(problem, result)``.

        ``warm``: the problem of a previous fit on the same data (another γ): its solved aggregate
        starts this fit's fixed points, and its support (with ``x0``, its solution) is the first
        working set of the Newton solver; with no working set (at most ``ws_min`` agents) its last
        curvature model takes this fit's first Newton step (``newton``'s ``model0``: a Hessian formed
        only if that step does not confirm it; measured in ``benchmarks/results/session29.md``).
        ``tol``: the solver's tolerance (default ``self.tol``)."""
        learn_lam = bool(self.learn_lam)
        prob: Any
        solver = self.solver
        opts = dict(self.solver_options or {})
        if learn_gamma is None and not learn_lam and self.learn_weights:
            prob = RenyiWeightProblem(L, y, gamma, lam, tol=self.fixed_point_tol, sample_weight=sw, checked=True)
            prob.terms_shuffled = bool(getattr(self, "_items_shuffled", False))
            if x0 is not None:
                x0, opts = self._warm_start(x0, L.shape[1], self.tol if tol is None else tol)
        else:
            prob = RenyiProblem(
                L,
                y,
                gamma,
                lam,
                learn_gamma=learn_gamma,
                learn_lam=learn_lam,
                tol=self.fixed_point_tol,
                sample_weight=sw,
                checked=True,
            )
            if solver == "auto":
                curvature = self.learn_weights and prob.hessian is not None
                solver = JOINT_SOLVER if curvature else JOINT_FALLBACK
                opts = dict(JOINT_OPTIONS) if solver == "box_newton" else {}
        A = L.shape[1]
        fresh = x0 is None
        if x0 is None:
            x0 = prob.x0()
            if self.weights is not None:
                w0 = np.asarray(self.weights, dtype=np.float64)
                x0[:A] = w0 / w0.sum()
                if isinstance(prob, RenyiWeightProblem):  # given weights are a start like any other
                    x0, opts = self._warm_start(x0, A, self.tol if tol is None else tol)
        warm = getattr(warm, "inner", warm)  # a _FixedWeights' problem
        if warm is not None and warm._warm is not None:
            prob._warm = warm._warm
        if not self.learn_weights:
            prob = _FixedWeights(prob, x0[:A])
            x0 = x0[A:]
            if prob.dim == 0:
                from solvers.result import SolveResult

                f = prob.value(x0)
                return prob, SolveResult(x0, f, 0, 1.0, True, "nothing to learn", "none")
        if fresh and self.weights is None and isinstance(prob, RenyiWeightProblem):
            x0 = None  # no start given: the working-set Newton screens the agents instead of solving at uniform
        tol = self.tol if tol is None else tol
        if solver in ("lbfgsb", "slsqp", "tnc", "box_newton") and isinstance(prob, RenyiProblem):
            # the simplex times the log γ / log λ box as one box (solvers.problems.orthant), solved with
            # a curvature model: one projected-gradient step length for w and log γ stalls (module doc)
            # Newton's model is in γ, the quasi-Newton solvers' steps in log γ (renyi_joint_curvature.InGamma)
            inner: Any = InGamma(prob) if solver == "box_newton" else prob
            to_x, from_x = (inner.to_log, inner.from_log) if solver == "box_newton" else (np.asarray, np.asarray)
            box = SimplexAsOrthant(inner, A, inner.rest_bounds())
            # TNC's budget counts evaluations (2-10 an iteration here), the others' iterations
            budget = TNC_EVALS_PER_ITER * self.max_iter if solver == "tnc" else self.max_iter
            res = minimize(
                box,
                solver,
                x0=box.from_inner(from_x(np.asarray(x0))),
                tol=tol,
                max_iter=budget,
                progress=progress,
                **opts,
            )
            if self.solver == "auto" and not res.converged and res.n_iter < budget:
                # a second quasi-Newton model from where the first stopped short (SLSQP, the choice for a
                # while this session, stopped at a projected gradient of 3.9e-7 on gaussian-logit 300 x 8 x 6)
                more = minimize(box, "lbfgsb", x0=res.x, tol=tol, max_iter=self.max_iter)
                res = dataclasses.replace(
                    more,
                    method=f"{solver}+lbfgsb",
                    n_iter=res.n_iter + more.n_iter,
                    n_passes=res.n_passes + more.n_passes,
                    seconds=res.seconds + more.seconds,
                )
            return prob, dataclasses.replace(res, x=to_x(box.to_inner(res.x)))
        plain = (
            isinstance(prob, RenyiWeightProblem)
            and solver in ("auto", "newton")
            and A <= opts.get("ws_min", WS_MIN)
            and not opts.get("working_set")
        )
        if plain:
            opts["return_model"] = True
            model0 = getattr(warm, "_model", None)
            if model0 is not None and model0.shape == (A, A):
                opts["model0"] = model0
        res = minimize(prob, solver, x0=x0, tol=tol, max_iter=self.max_iter, progress=progress, **opts)
        if plain:
            # the last model for the next γ's fit; not kept in the result (a stored estimator's record)
            prob._model = res.extra.pop("model", None)
        return prob, res

    def _warm_start(self, x0: np.ndarray, A: int, tol: float) -> tuple[np.ndarray, dict]:
        """A start ``x0`` (weights first, ``A`` of them) with its weights made sparse
        (:func:`sparse_start`; a copy), and the solver's options for it (:meth:`_start_options`)."""
        x0 = np.array(x0, dtype=np.float64)
        x0[:A] = sparse_start(x0[:A])
        return x0, self._start_options(x0[:A], tol)

    def _start_options(self, w0: np.ndarray, tol: float) -> dict:
        """The weight solver's options (``solver_options`` first) from a start ``w0`` that is a solution
        (the log pool's weights, a neighbouring γ's optimum): Newton keeps its support in the first
        working set (the solver's default size may be smaller), solves it to the end and grows the
        working set from it."""
        opts = dict(self.solver_options or {})
        if self.solver in ("auto", "newton"):
            nnz, A = int(np.count_nonzero(w0)), w0.size
            opts.setdefault("ws_init", min(A, nnz + max(5, nnz // 10)))
            opts.setdefault("ws_first_tol", 0.1 * tol)  # not a guess: solve it
            opts.setdefault("warm_x0", True)  # near the optimum: Newton on a growing working set from it
        return opts

    def _fit(
        self, log_probs: np.ndarray, y: np.ndarray, progress: ProgressFn | None, *, sample_weight: np.ndarray | None
    ) -> None:
        L = log_probs
        sw = sample_weight
        n, A, K = L.shape
        lam = check_lam(self.lam, A)
        if self.learn_lam and lam is None:
            lam = np.ones(A)
        mode = self.gamma if isinstance(self.gamma, str) else None
        if mode is not None and mode not in _GAMMA_MODES:
            raise PredictionError(
                "gamma", f"must be in (0, 1], one per agent, or one of {_GAMMA_MODES}; got {mode!r}", code="bad_gamma"
            )
        self.validation_curve_ = None
        if mode is None:
            gamma = check_gamma(self.gamma, A)
            # small shared γ: start from the log pool's weights (its limit; measured 10-35% faster at
            # γ = 0.1 on three families, log-pool fit included, and no faster or slower at γ = 0.5)
            x0 = (
                self._limit_start(L, y, lam, sw) if np.ndim(self.gamma) == 0 and gamma[0] <= LIMIT_START_GAMMA else None
            )
            prob, res = self._fit_at(L, y, gamma, lam, x0, None, progress, sw)
            self._store(prob, res, per_agent=np.ndim(self.gamma) > 0)
            return

        grid = self._grid()
        # progress: one stage a grid fit, one the γ refinement; the joint per-agent stage (hundreds of
        # evaluations, the longest) as many as the grid
        n_stage = len(grid) + {"grid": 0, "learn": 1, "learn_per_agent": 1 + len(grid)}[mode]
        if not (isinstance(self.grid_tol, (int, float)) and 0 <= self.grid_tol < 1):
            raise PredictionError("grid_tol", f"must be a number in [0, 1); got {self.grid_tol!r}", code="bad_tol")
        grid_tol = max(self.tol, float(self.grid_tol))
        ng = len(grid)
        lls, cv_lls, xs = [0.0] * ng, [0.0] * ng, [np.empty(0)] * ng
        fits: list = []
        # continuation in γ, from the smallest up: the first fit starts from the log pool's weights (the
        # γ → 0 limit), the second from the first's, each later one from the secant through the last two
        # (:func:`secant_start`); every fit from the previous γ's aggregate and working set
        x_prev, prob, best_k = self._limit_start(L, y, lam, sw), None, -1
        path: list[tuple[float, np.ndarray]] = []  # (log γ, solution) of the fits so far
        for j, k in enumerate(range(ng - 1, -1, -1)):
            sub = scaled(progress, j / n_stage, (j + 1) / n_stage)
            gam = np.full(A, grid[k])
            x_start = x_prev
            if len(path) >= 2 and self.learn_weights:
                x_start = secant_start(path[-2], path[-1], float(np.log(grid[k])), A)
            prob, res = self._fit_at(L, y, gam, lam, x_start, None, sub, sw, warm=prob, tol=grid_tol)
            x_prev = xs[k] = self._full_x(prob, res.x)
            path.append((float(np.log(grid[k])), x_prev))
            lls[k] = -float(res.fun)
            if self.cv:
                cv_lls[k] = self._cv_score(L, y, gam, lam, x_prev, sw)
            score = cv_lls if self.cv else lls
            if best_k < 0 or score[k] >= score[best_k]:  # ties: np.argmax's choice, the larger γ
                best_k, fits = k, [prob, res]  # only the best fit's problem (and its data) is kept
        best = best_k
        prob, res = fits
        loose = not res.converged or res.extra.get("gap", np.inf) > self.tol * max(1.0, abs(res.fun))
        if mode == "grid" and loose:
            # the best γ's fit to the full tolerance, from its grid fit (one or two Newton steps; "learn"
            # refits it anyway)
            prob, res = self._refit(L, y, grid[best], lam, xs[best], sw, prob)
            xs[best], lls[best] = self._full_x(prob, res.x), -float(res.fun)
        self.validation_curve_ = {
            "gamma": grid.tolist(),
            "log_gamma": np.log(grid).tolist(),
            "loglik": lls,
            "perplexity": np.exp(-np.array(lls)).tolist(),
            "criterion": "cv_loglik" if self.cv else "loglik",
        }
        if self.cv:
            self.validation_curve_["cv_loglik"] = cv_lls
            self.validation_curve_["cv_perplexity"] = np.exp(-np.array(cv_lls)).tolist()
        if mode == "grid":
            self._store(prob, res, per_agent=False)
            report(progress, 1.0)
            return
        # "learn": maximise the profile likelihood φ(t) = max_w ℓ(w, γ = e^t) in t = log γ. By the
        # envelope theorem φ'(t) = γ ∂ℓ/∂γ at the fitted weights (exact, from the implicit gradient),
        # so a safeguarded secant (Illinois) on φ' inside the grid bracket finds the optimum.
        sub = scaled(progress, len(grid) / n_stage, (len(grid) + 1) / n_stage)
        t_best, x_best, prob, res = self._refine_gamma(L, y, lam, grid, best, xs, lls, sub, sw, warm=prob)
        if mode == "learn":
            self._store(prob, res, per_agent=False)
            self.validation_curve_["gamma_learnt"] = float(np.exp(t_best))
            report(progress, 1.0)
            return
        x0 = self._joint_start(x_best, A, float(np.exp(t_best)), "per_agent")
        sub = scaled(progress, (len(grid) + 1) / n_stage, 1.0)
        prob, res = self._fit_at(L, y, np.full(A, np.exp(t_best)), lam, x0, "per_agent", sub, sw)
        self._store(prob, res, per_agent=True)
        self.validation_curve_["gamma_learnt_shared"] = float(np.exp(t_best))
        report(progress, 1.0)

    def _refit(self, L, y, gamma: float, lam, x: np.ndarray, sw, prob):
        """The grid fit at ``gamma`` (problem ``prob``, solution ``x``) continued to ``self.tol``.

        A weights-only fit continues on its own problem from ``x`` as it is (no :func:`sparse_start`:
        the solution's zeros are exact): the problem's last evaluation was at ``x``, so the solver's
        first value and gradient come from its cache instead of a pass over the data (one of the
        two or three passes of the refit; 1.5-3 s at 20,000 x 269 x 64). Other fits refit afresh."""
        A = L.shape[1]
        if not isinstance(prob, RenyiWeightProblem):
            return self._fit_at(L, y, np.full(A, gamma), lam, x, None, None, sw, warm=prob)
        x0 = np.array(x, dtype=np.float64)
        opts = self._start_options(x0[:A], self.tol)
        return prob, minimize(prob, self.solver, x0=x0, tol=self.tol, max_iter=self.max_iter, **opts)

    def _limit_start(self, L, y, lam, sw) -> np.ndarray | None:
        """The log pool's weights on the (annealed) data: the Rényi optimum's limit as γ → 0 (the
        aggregate of Eq. 2.8 tends to the log pool with weights ``w' = w`` at a shared γ), a start
        for the grid's smallest γ. None when the start is not free (weights fixed or given, λ learnt)."""
        if not self.learn_weights or self.learn_lam or self.weights is not None:
            return None
        problem = ConditionalLogLinear.from_log_probs(anneal(L, lam), y, sample_weight=sw)
        x = np.clip(minimize(problem, "auto", tol=1e-6).x, 0.0, None)  # a start: no need for more
        return x / x.sum()

    def _profile(self, L, y, lam, t, x_start, sw=None, warm=None):
        """φ(t) and φ'(t) (t = log γ) with the weights refitted from ``x_start`` (``warm``: the problem of
        a fit at a nearby γ, as :meth:`_fit_at` takes it)."""
        from .renyi_gradient import renyi_loglik_grad

        A = L.shape[1]
        gam = np.full(A, float(np.exp(t)))
        prob, res = self._fit_at(L, y, gam, lam, x_start, None, None, sw, warm=warm)
        x = self._full_x(prob, res.x)
        inner = prob.inner if isinstance(prob, _FixedWeights) else prob
        w, g, lm = inner.unpack(x)
        # the fit's last evaluation solved the aggregate at x: only the adjoint pass runs (a solve from
        # the power-mean start was 1/8 of a `learn` fit at 200 x 10 x 4,096)
        ll, gr, _, _ = renyi_loglik_grad(
            L,
            y,
            w / w.sum(),
            g,
            lm,
            tol=self.fixed_point_tol,
            want=("gamma",),
            sample_weight=sw,
            solved=inner.solved_log_q(x),
        )
        return ll, float(np.exp(t) * gr["gamma"].sum()), x, prob, res

    def _refine_gamma(
        self, L, y, lam, grid, best, xs, lls, progress, sw=None, max_evals: int = 12, xtol: float = 1e-3, warm=None
    ):
        lo_t, hi_t = np.log(grid[min(best + 1, len(grid) - 1)]), np.log(grid[max(best - 1, 0)])
        t0 = float(np.log(grid[best]))
        ll0, d0, x0, prob0, res0 = self._profile(L, y, lam, t0, xs[best], sw, warm=warm)
        cand = [(ll0, t0, x0, prob0, res0)]
        # which side of the grid optimum the maximum lies on
        if d0 > 0:
            a_t, b_t = t0, (hi_t if best > 0 else 0.0)
        else:
            a_t, b_t = (lo_t if best < len(grid) - 1 else float(np.log(1e-4))), t0
        if b_t - a_t <= xtol:
            ll, t, x, prob, res = max(cand, key=lambda c: c[0])
            return t, x, prob, res
        da = d0 if a_t == t0 else None
        db = d0 if b_t == t0 else None
        if da is None:
            ll_a, da, xa, pa, ra = self._profile(L, y, lam, a_t, x0, sw, warm=prob0)
            cand.append((ll_a, a_t, xa, pa, ra))
        if db is None:
            ll_b, db, xb, pb, rb = self._profile(L, y, lam, b_t, x0, sw, warm=prob0)
            cand.append((ll_b, b_t, xb, pb, rb))
        if da > 0 and db > 0 or da < 0 and db < 0:
            # the optimum is at an end of the bracket (e.g. γ = 1 or the lower bound)
            ll, t, x, prob, res = max(cand, key=lambda c: c[0])
            return t, x, prob, res
        side, t_last = 0, np.inf
        for k in range(max_evals):
            report(progress, (k + 1) / max_evals)
            t = (a_t * db - b_t * da) / (db - da)  # secant on φ'
            if not (a_t < t < b_t):
                t = 0.5 * (a_t + b_t)
            if abs(t - t_last) <= 0.1 * xtol:
                # the secant has settled: its next point is within a tenth of xtol of the last one (the
                # far end of the bracket would take more Illinois steps to come in, each a weight fit
                # that no longer moves γ by what the fits' tolerance resolves)
                break
            t_last = t
            near = min(cand, key=lambda c: abs(c[1] - t))  # the fit at the nearest γ: its weights, aggregate, model
            ll, d, x, prob, res = self._profile(L, y, lam, t, near[2], sw, warm=near[3])
            cand.append((ll, t, x, prob, res))
            if d > 0:
                a_t, da = t, d
                if side == 1:
                    db *= 0.5  # Illinois
                side = 1
            else:
                b_t, db = t, d
                if side == -1:
                    da *= 0.5
                side = -1
            if b_t - a_t <= xtol or abs(d) <= 1e-10:
                break
        ll, t, x, prob, res = max(cand, key=lambda c: c[0])
        return t, x, prob, res

    def _full_x(self, prob, x):
        """The full variable (weights included) of a fit, whether or not the weights were free."""
        if isinstance(prob, _FixedWeights):
            return np.concatenate([prob.w, x])
        return np.asarray(x)

    def _joint_start(self, x_best: np.ndarray, A: int, g: float, learn: str) -> np.ndarray:
        w = x_best[:A]
        rest = x_best[A:]
        lg = np.log([g]) if learn == "shared" else np.full(A, np.log(g))
        return np.concatenate([w, lg, rest])

    def _cv_score(self, L, y, gam, lam, x_start, sw=None) -> float:
        rng = np.random.default_rng(self.random_state)
        n_folds = int(self.cv or 0)
        folds = rng.permutation(L.shape[0]) % n_folds
        total = 0.0
        for f in range(n_folds):
            tr, te = folds != f, folds == f
            prob, res = self._fit_at(L[tr], y[tr], gam, lam, x_start, None, None, None if sw is None else sw[tr])
            x = self._full_x(prob, res.x)
            inner = prob.inner if isinstance(prob, _FixedWeights) else prob
            w, g, lm = inner.unpack(x)
            lq = renyi_aggregate(L[te], w, g, lam=lm, floor=None, tol=self.fixed_point_tol)
            held = lq[np.arange(te.sum()), y[te]]
            total += float(held.sum() if sw is None else sw[te] @ held)
        return total / (L.shape[0] if sw is None else float(sw.sum()))

    def _store(self, prob, res, *, per_agent: bool) -> None:
        x = self._full_x(prob, res.x)
        inner = prob.inner if isinstance(prob, _FixedWeights) else prob
        w, g, lam = inner.unpack(x)
        self.weights_ = w / w.sum()
        self.gamma_ = g.copy() if (per_agent or inner.learn_gamma == "per_agent") else float(g[0])
        if lam is not None:
            self.lam_ = lam.copy()
        self._record_result(res)
        self.loglik_ = -float(res.fun)
        self.n_fixed_point_sweeps_ = int(inner.sweeps)

    # -- prediction ------------------------------------------------------------------------------
    def _predict(self, preds: Predictions) -> np.ndarray:
        lam = getattr(self, "lam_", None)
        return renyi_aggregate(preds, self.weights_, self.gamma_, lam=lam, floor=None, tol=self.fixed_point_tol)


class _FixedWeights:
    """The :class:`RenyiProblem` restricted to γ/λ with the weights held fixed (``learn_weights=False``)."""

    constraint = "box"

    def __init__(self, inner: RenyiProblem, w: np.ndarray) -> None:
        self.inner = inner
        self.w = np.asarray(w, dtype=np.float64)
        self.dim = inner.dim - inner.n_agents
        self.n_terms = inner.n_terms
        self.bounds = inner.rest_bounds()

    def _full(self, x):
        return np.concatenate([self.w, np.asarray(x, dtype=np.float64)])

    def x0(self):
        return self.inner.x0()[self.inner.n_agents :]

    def project(self, x):
        return self.inner.project(self._full(x))[self.inner.n_agents :]

    def value(self, x):
        return self.inner.value(self._full(x))

    def grad(self, x):
        return self.inner.grad(self._full(x))[self.inner.n_agents :]

    def value_and_grad(self, x):
        f, g = self.inner.value_and_grad(self._full(x))
        return f, g[self.inner.n_agents :]

    def unpack(self, x):
        return self.inner.unpack(np.asarray(x))
