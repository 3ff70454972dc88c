"""The gradient of the labels' log-likelihood under the market's equilibrium prices with respect to the
agents' wealth, by one adjoint solve per item (:mod:`markets.kernels.adjoint`).

``wealth_gradient(beliefs, y, utilities, wealth)`` clears every item (:func:`markets.equilibrium.equilibrium`),
then returns the weighted mean log-price of the labels, ``(1 / sum_n s_n) sum_n s_n log c_{n, y_n}``, and
its gradient with respect to the wealth ``w`` at the normalised point ``W = w / sum w`` (the market
normalises the wealth it is given): with ``g`` the partial derivatives of
:func:`markets.kernels.adjoint.label_gradients`, ``g - (g . W) 1`` (so ``sum_i W_i grad_i = 0``; for a
wealth given at another scale divide by ``sum w``). In isoelastic/log markets ``g . W = 0`` already
(scaling all wealth leaves the prices unchanged); an exponential agent's own partial is 0 (its
position moves with its wealth exactly as its share of the prices), but its wealth counts in the
normalisation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from aggregators.validation import DEFAULT_FLOOR
from solvers.errors import InputError

from .equilibrium import EquilibriumResult, equilibrium
from .kernels.adjoint import label_gradients
from .training import labelled_market


@dataclass
class WealthGradient:
    """``loglik``: weighted mean of ``log c_{n, y_n}``; ``gradient`` (A,): its derivative in the
    wealth (module docstring); ``per_item`` (n, A): the same for each ``log c_{n, y_n}``;
    ``n_products`` (n,): CG products of each adjoint solve; ``equilibrium``: the prices they were
    taken at."""

    loglik: float
    gradient: np.ndarray
    per_item: np.ndarray
    n_products: np.ndarray
    equilibrium: EquilibriumResult


def wealth_gradient(beliefs: Any, y: Any, utilities: Any = "log", wealth: Any = None, **options: Any) -> WealthGradient:
    """Mean log-likelihood of the labels ``y`` under the equilibrium prices and its wealth gradient
    (module docstring). ``options``: ``sample_weight`` (one non-negative weight per item),
    ``cg_rtol`` (relative residual of each adjoint solve, default 1e-12), and those of
    :func:`~markets.equilibrium.equilibrium` (``tol``, here 1e-12 by default, ``method``, ``kind``,
    ``floor``)."""
    opts = {"tol": 1e-12, **options}
    cg_rtol, sample_weight = opts.pop("cg_rtol", 1e-12), opts.pop("sample_weight", None)
    if not (np.isfinite(cg_rtol) and 0 < cg_rtol < 1):
        raise InputError("cg_rtol", f"must be a number in (0, 1); got {cg_rtol!r}")
    kind, floor = opts.pop("kind", "log_probs"), opts.pop("floor", DEFAULT_FLOOR)
    agents, preds, lp, labels, sw = labelled_market(
        beliefs, y, utilities, wealth, kind, floor, sample_weight, "the wealth gradient"
    )
    n, A, K = lp.shape
    eq = equilibrium(preds, agents, floor=None, check=False, **opts)
    if not eq.all_converged:
        raise InputError("tol", f"the equilibrium did not reach tol={opts['tol']} on every item; loosen it")
    G = np.empty((n, A))
    n_products = np.zeros(n, np.int64)
    nt = numba.get_num_threads()
    label_gradients(lp, labels, agents.kind, agents.inv_eta, agents.wealth, eq.log_prices, cg_rtol, G, n_products, nt)
    G -= (G @ agents.wealth)[:, None]  # through the normalisation w -> w / sum w
    s = np.ones(n) if sw is None else sw
    ll = eq.log_prices[np.arange(n), labels]
    return WealthGradient(float(s @ ll / s.sum()), s @ G / s.sum(), G, n_products, eq)


__all__ = ["WealthGradient", "wealth_gradient"]
