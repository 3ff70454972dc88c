"""Linear opinion pool with learnt weights (seed 000 Eq. 2.4).

``P(y|n) = sum_i w_i P_i(y|n)``, ``w`` on the simplex, fitted by maximum likelihood on a labelled
validation set. The fit is the mixture problem :class:`solvers.problems.mixture.MixtureLikelihood`
(reduced to the ``(n_items, n_agents)`` matrix of the probabilities the agents gave to the true
labels) solved through :func:`solvers.minimize`: ``solver="auto"`` (default: the working-set
Newton method of :mod:`solvers.methods.newton` on the simplex) or any applicable solver name
(``"em"``: SQUAREM-accelerated EM, the seed's algorithm; ``"newton"``, ``"lbfgs"``...). By convexity
EM and a simplex-constrained solver reach the same optimum.

Why Newton by default (session 14, measured; ``benchmarks/bench_linear_pool_families.py``,
``benchmarks/results/linear-newton-and-zarr-session14.md``): EM's rate is sublinear wherever the
optimum drops agents (weights at the simplex's boundary, the usual case). Over five families and
2 to 1,000 agents x 2 to 4,096 classes it took up to 42,572 iterations (89 s) and stopped unconverged
at its 100,000 iterations twice (near-duplicate agents, 97 s; 1,000 agents, 222 s). Newton took 3 to
55 iterations (at most 0.40 s, validation included) to within its tolerance (1e-10 relative) of the
lowest objective found, with the dropped agents at exactly zero. Where EM is not slow the two are
close (many-active agents 0.36 s against 0.25 s; at 2 and 10 agents all solvers within 0.1 s).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from solvers.problems.mixture import MixtureLikelihood
from solvers.progress import ProgressFn
from solvers.special import logsumexp

from .base import Pool
from .validation import PredictionError, Predictions, as_log_probs, check_weights

__all__ = ["linear_pool", "LinearPool"]


def linear_pool(log_probs: Any, weights: Any) -> np.ndarray:
    """Eq. (2.4): ``log sum_i w_i P_i(y|n)``; returns normalised log-probabilities ``(n_items, n_classes)``.

    ``log_probs``: ``(n_items, n_agents, n_classes)`` (validated and normalised on the way in);
    zero probabilities (``-inf``) are legal.
    """
    lp = as_log_probs(log_probs, kind="log_probs").log_probs
    w = check_weights(weights, lp.shape[1], sum_to_one="require")
    keep = w > 0
    out = logsumexp(lp[:, keep, :], axis=1, b=w[keep][None, :, None])
    if np.isneginf(out).all(axis=1).any():
        i = int(np.flatnonzero(np.isneginf(out).all(axis=1))[0])
        raise PredictionError("predictions", "every weighted agent gives probability 0 to every class", item=i)
    return out - logsumexp(out, axis=1, keepdims=True)


@dataclass(eq=False, repr=False)
class LinearPool(Pool):
    """Linear opinion pool with maximum-likelihood weights (Eq. 2.4).

    Parameters
    ----------
    solver : ``"auto"`` (default: Newton), ``"em"``, ``"newton"``, ``"lbfgs"`` or any solver of
        :func:`solvers.available` that applies to a simplex-constrained mixture.
    tol : relative gap at which the solver stops (see ``docs/solvers-core.md``).
    max_iter : passed to the solver when given.
    solver_options : extra keyword arguments for the solver.

    Attributes
    ----------
    weights_ : ``(n_agents,)`` on the simplex.  fit_result_ : :class:`solvers.SolveResult`.
    n_iter_ : solver iterations.
    """

    needs_positive = False

    solver: str = "auto"
    tol: float = 1e-10
    max_iter: int | None = None
    solver_options: dict | None = None

    def _fit(
        self, log_probs: np.ndarray, y: np.ndarray, progress: ProgressFn | None, *, sample_weight: np.ndarray | None
    ) -> None:
        try:
            problem = MixtureLikelihood.from_log_probs(log_probs, y, sample_weight)
        except ValueError as exc:
            raise PredictionError("predictions", str(exc), code="zero_likelihood") from None
        self._fit_simplex_weights(problem, progress)

    def _predict(self, preds: Predictions) -> np.ndarray:
        return linear_pool(preds, self.weights_)
