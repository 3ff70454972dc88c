"""The estimator shape shared by every pool (scikit-learn conventions).

``__init__`` only stores hyper-parameters; ``fit(log_probs, y)`` learns on a labelled validation set
and returns ``self``; learnt state ends in ``_`` (``weights_``, ``n_floored_``, ``fit_result_``, ``converged_``);
``predict(log_probs)`` returns the aggregate as normalised log-probabilities of shape
``(n_items, n_classes)``; ``predict_proba`` returns the same as probabilities; ``score`` is the mean
log-likelihood of the labels (higher is better).

Predicting never changes the estimator (a fitted pool may be shared by threads, as the service's
pool cache does): what a prediction learns about its input (the number of floored entries, a
market's equilibrium checks) is *returned* by :meth:`Pool.predict_with_info` as a
:class:`PredictInfo`, never stored. ``predict`` is ``predict_with_info(...)[0]``.

:class:`markets.MarketPool` is a :class:`Pool` too (markets import this base class; nothing here
imports markets).

Inputs go through the one validator (:mod:`aggregators.validation`) with ``kind="log_probs"`` by
default; pass ``kind="probs"`` for probability tables.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Self

import numpy as np

from solvers.checks import as_labels
from solvers.errors import InputError
from solvers.progress import ProgressFn

from .validation import (
    DEFAULT_FLOOR,
    Kind,
    PredictionError,
    Predictions,
    as_floored_log_probs,
    as_log_probs,
    check_sample_weight,
)


@dataclass(frozen=True)
class PredictInfo:
    """What one prediction learnt about its input. ``n_floored``: entries raised to the floor
    (0 for pools that take zeros). Pools with more to say subclass it
    (:class:`markets.estimator.MarketPredictInfo`)."""

    n_floored: int = 0


class Pool:
    """Base class of every pool. Subclasses implement ``_fit`` and ``_predict``, and are declared
    ``@dataclass(eq=False, repr=False)``: each hyper-parameter is written once, as a field with its
    type and default, and the generated ``__init__`` only stores them (the scikit-learn contract;
    equality stays identity and ``repr`` is this class's).

    ``needs_positive``: pools whose math is undefined at zero probability (log, Rényi) set it, and
    inputs are then floored with ``floor`` (see :func:`aggregators.validation.apply_floor`).
    """

    # hyper-parameters of the pools that learn weights on the simplex (read by _fit_simplex_weights)
    solver: str
    tol: float

    needs_positive: bool = False
    supervised: bool = True  # False for pools that learn nothing from labels (``fit(X)`` is enough)
    floor: float | None = DEFAULT_FLOOR

    # -- scikit-learn style parameter access -------------------------------------------------
    def get_params(self) -> dict[str, Any]:
        import inspect

        sig = inspect.signature(type(self).__init__)
        return {p: getattr(self, p) for p in sig.parameters if p != "self"}

    def set_params(self, **params: Any) -> Pool:
        for k, v in params.items():
            if k not in self.get_params():
                raise InputError(k, f"{type(self).__name__} has no parameter {k!r}", code="unknown_parameter")
            setattr(self, k, v)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def _fitted(self, attr: str) -> Any:
        """The learnt attribute ``attr``; a clear error if :meth:`fit` has not been called."""
        if not hasattr(self, attr):
            raise ValueError(f"{type(self).__name__} is not fitted: call fit(log_probs, y) first")
        return getattr(self, attr)

    # -- input handling -----------------------------------------------------------------------
    def prepare(self, log_probs: Any, kind: Kind = "log_probs", *, shuffle: int | None = None) -> Predictions:
        """``log_probs`` validated as this pool's ``fit``, ``predict`` and ``score`` take them
        (normalised; floored with ``floor`` for ``needs_positive`` pools). They take the result as it
        is, with no second pass over the data: validate once, then fit, score and predict it.
        ``shuffle``: see :func:`aggregators.validation.as_floored_log_probs` (floored pools only)."""
        if self.needs_positive:
            return as_floored_log_probs(log_probs, kind=kind, floor=self.floor, shuffle=shuffle)
        return as_log_probs(log_probs, kind=kind)

    def _fit_shuffle(self, log_probs: Any) -> int | None:
        """A seed when this pool's fit of ``log_probs`` (the input as given) wants its items in a random
        order (see :meth:`prepare`); the fit then sees the items, labels and sample weights in that order
        (a mean over items does not change) and ``_items_shuffled`` is true during ``_fit``. ``None``
        (the default): as given."""
        return None

    def _check_fitted_shape(self, preds: Predictions) -> None:
        n_agents = getattr(self, "n_agents_", None)
        if n_agents is not None and (preds.n_agents != n_agents or preds.n_classes != self.n_classes_):
            raise PredictionError(
                "predictions",
                f"pool was fitted on {n_agents} agents x {self.n_classes_} classes; got "
                f"{preds.n_agents} agents x {preds.n_classes} classes",
                code="shape_mismatch",
            )

    # -- public API ---------------------------------------------------------------------------
    def fit(
        self,
        log_probs: Any,
        y: Any,
        *,
        sample_weight: Any = None,
        kind: Kind = "log_probs",
        progress: ProgressFn | None = None,
    ) -> Self:
        """Learn on labelled items. ``sample_weight``: ``None`` or one non-negative weight per item
        (scikit-learn's convention: an integer weight fits as that many copies of the item, weight
        0 as leaving it out; :func:`aggregators.validation.check_sample_weight`)."""
        preds = self.prepare(log_probs, kind, shuffle=self._fit_shuffle(log_probs))
        labels = None if y is None else as_labels(y, preds.n_items, preds.n_classes, field="labels")
        if labels is None and self.supervised:
            raise InputError("y", f"{type(self).__name__} learns from labels: y is required")
        sw = check_sample_weight(sample_weight, preds.n_items)
        self._items_shuffled = preds.order is not None
        if preds.order is not None:
            labels = None if labels is None else labels[preds.order]
            sw = None if sw is None else sw[preds.order]
        self.n_agents_ = preds.n_agents
        self.n_classes_ = preds.n_classes
        self.n_floored_ = preds.n_floored
        self._fit(preds.log_probs, labels, progress, sample_weight=sw)  # type: ignore[arg-type]  # None: unsupervised only
        return self

    def predict_with_info(self, log_probs: Any, *, kind: Kind = "log_probs") -> tuple[np.ndarray, PredictInfo]:
        """The aggregate (as :meth:`predict`) and a :class:`PredictInfo` about this input; the
        estimator is not changed."""
        preds = self.prepare(log_probs, kind)
        self._check_fitted_shape(preds)
        return self._predict(preds), PredictInfo(n_floored=preds.n_floored)

    def predict(self, log_probs: Any, *, kind: Kind = "log_probs") -> np.ndarray:
        return self.predict_with_info(log_probs, kind=kind)[0]

    def predict_proba(self, log_probs: Any, *, kind: Kind = "log_probs") -> np.ndarray:
        return np.exp(self.predict(log_probs, kind=kind))

    def score(self, log_probs: Any, y: Any, *, kind: Kind = "log_probs") -> float:
        """Mean log-likelihood of ``y`` under the aggregate (higher is better)."""
        if y is None:
            raise InputError("y", "labels are required to score a pool")
        preds = self.prepare(log_probs, kind)  # validated once, as predict takes it (no second pass)
        labels = as_labels(y, preds.n_items, preds.n_classes, field="labels")
        agg = self.predict(preds, kind=kind)
        return float(agg[np.arange(len(labels)), labels].mean())

    # -- shared by the pools whose weights are learnt on the simplex ---------------------------
    def _fit_simplex_weights(self, problem: object, progress: ProgressFn | None) -> None:
        """Minimise ``problem`` with ``self.solver`` (by name, through :func:`solvers.minimize`) and
        store the solution as ``weights_`` (clipped at 0 and renormalised onto the simplex),
        ``fit_result_`` and ``n_iter_``. Uses the estimator's ``tol``, ``max_iter`` and
        ``solver_options``."""
        from solvers import minimize

        opts = dict(getattr(self, "solver_options", None) or {})
        max_iter = getattr(self, "max_iter", None)
        if max_iter is not None:
            opts["max_iter"] = max_iter
        res = minimize(problem, self.solver, tol=self.tol, progress=progress, **opts)
        w = np.clip(np.asarray(res.x, dtype=np.float64), 0.0, None)
        self.weights_ = w / w.sum()
        self._record_result(res)

    def _record_result(self, res: Any) -> None:
        """Store the weight solver's result as ``fit_result_``, ``n_iter_`` and ``converged_``; when the
        solver stopped without meeting its tolerance (``max_iter`` reached, a stochastic solver such as
        MISO or SAGA out of epochs), warn with scikit-learn's ``ConvergenceWarning``: the fit is usable
        but not optimal. One rule for every pool whose weights are learnt (issue core-at-scale §3)."""
        self.fit_result_ = res
        self.n_iter_ = res.n_iter
        self.converged_ = bool(res.converged)
        if not self.converged_:
            from sklearn.exceptions import ConvergenceWarning  # here: importing scikit-learn costs ~130 MB

            warnings.warn(
                f"{type(self).__name__}: the weight solver {res.method!r} stopped unconverged ({res.message}); "
                "the fit is usable but not optimal (raise max_iter or loosen tol)",
                ConvergenceWarning,
                stacklevel=5,
            )

    # -- to implement -------------------------------------------------------------------------
    def _fit(
        self, log_probs: np.ndarray, y: np.ndarray, progress: ProgressFn | None, *, sample_weight: np.ndarray | None
    ) -> None:
        """Learn from validated (and, for ``needs_positive`` pools, floored) inputs; ``sample_weight``
        is ``None`` or checked per-item weights."""
        raise NotImplementedError

    def _predict(self, preds: Predictions) -> np.ndarray:
        """The aggregate of validated (and, for ``needs_positive`` pools, floored) ``preds``: pass
        them on as they are (the aggregates take a :class:`Predictions` as validated), never
        ``preds.log_probs``, which would be validated again."""
        raise NotImplementedError
