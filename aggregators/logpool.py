"""Logarithmic opinion pool with learnt weights (seed 000 Eq. 2.5).

``P(y|n) ∝ prod_i P_i(y|n)^{w_i}``, ``w`` on the simplex, fitted by maximum likelihood with the exact
gradient. The fit is the conditional log-linear problem
:class:`solvers.problems.loglinear.ConditionalLogLinear` (features ``f_n(y)_i = log P_i(y|n)``)
solved through :func:`solvers.minimize`; ``solver="auto"`` resolves to working-set projected Newton
(``"newton"``). Zero probabilities make the pool undefined, so inputs are floored
(``floor``, default :data:`aggregators.validation.DEFAULT_FLOOR`; ``n_floored_`` counts them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from solvers.errors import InputError
from solvers.problems.loglinear import ConditionalLogLinear
from solvers.progress import ProgressFn
from solvers.special import logsumexp

from .base import Pool
from .validation import DEFAULT_FLOOR, PredictionError, Predictions, as_log_probs, check_weights

__all__ = ["log_pool", "LogPool"]


def log_pool(log_probs: Any, weights: Any) -> np.ndarray:
    """Eq. (2.5): ``sum_i w_i log P_i(y|n) - log Z_n(w)``; normalised log-probabilities ``(n_items, n_classes)``.

    Agents with zero weight are ignored (so their zeros do not matter); a zero probability of a
    weighted agent makes that class impossible; an item where every class is impossible raises
    :class:`PredictionError` (floor the inputs, as :class:`LogPool` does).
    """
    lp = as_log_probs(log_probs, kind="log_probs").log_probs
    w = check_weights(weights, lp.shape[1], sum_to_one="require")
    keep = np.flatnonzero(w > 0)
    s = np.einsum("nak,a->nk", lp[:, keep, :], w[keep])
    bad = np.isneginf(s).all(axis=1)
    if bad.any():
        raise PredictionError(
            "predictions",
            "the weighted agents leave no class with positive probability (floor zero probabilities first)",
            item=int(np.flatnonzero(bad)[0]),
        )
    return s - logsumexp(s, axis=1, keepdims=True)


@dataclass(eq=False, repr=False)
class LogPool(Pool):
    """Log opinion pool with maximum-likelihood weights (Eq. 2.5).

    Parameters
    ----------
    solver : ``"auto"`` (working-set projected Newton), ``"newton"``, ``"lbfgs"``, or any applicable
        solver name of :func:`solvers.available`.
    floor : probability floor applied to the inputs (``None``: zeros raise an error).
    tol : relative gap at which the solver stops.
    max_iter : passed to the solver when given.
    dtype : storage precision of the features during the fit, ``"float64"`` (default, no copy of
        the validated input) or ``"float32"`` (half the bytes per pass, float64 sums).
    solver_options : extra keyword arguments for the solver.

    Attributes
    ----------
    weights_, fit_result_, n_iter_, n_floored_.
    """

    needs_positive = True

    solver: str = "auto"
    floor: float | None = DEFAULT_FLOOR
    tol: float = 1e-10
    max_iter: int | None = None
    dtype: str = "float64"
    solver_options: dict | None = None

    def _fit(
        self, log_probs: np.ndarray, y: np.ndarray, progress: ProgressFn | None, *, sample_weight: np.ndarray | None
    ) -> None:
        if self.dtype not in ("float32", "float64"):
            raise InputError("dtype", f"must be 'float32' or 'float64'; got {self.dtype!r}")
        problem = ConditionalLogLinear.from_log_probs(log_probs, y, dtype=self.dtype, sample_weight=sample_weight)
        self._fit_simplex_weights(problem, progress)

    def _predict(self, preds: Predictions) -> np.ndarray:
        return log_pool(preds, self.weights_)
