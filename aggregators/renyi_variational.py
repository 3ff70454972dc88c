"""Algorithm 2.1 of seed 000: variational (EM-like) learning of the Rényi pool's mixture weights.

The seed's single loop, per item ``n`` (conditional setting), repeated until the weights settle:

    3: Q_in(y) ∝ P_in(y)^{γ_i} Q_n(y)^{1-γ_i}
    4: q_in = w'_i Q_in(y_n) / Σ_j w'_j Q_jn(y_n)
    5: w'_i = Σ_n q_in / Σ_{n,i} q_in
    6: Q_n(y) = Σ_i w'_i Q_in(y)                                    (corrected)

Parametrisation (settled by ``/work/shared/notes/000-ch2-aggregation-markets.md`` and checked in the
tests against a direct convex solve of Eq. 2.6): the ``w'`` of this loop are the *mixture* weights
of the fixed point (2.8), ``w'_i ∝ w_i/γ_i``; line 6 as printed in the seed, ``Q ∝ Σ_i w'_i γ_i Q_i``,
is a typo (with unequal γ_i it does not give the minimiser of Eq. 2.6). The pool weights of Eq. 2.6
are recovered as ``w_i ∝ γ_i w'_i``. ``line6="as_printed"`` runs the printed version, for
comparison only.

What the loop converges to: for fixed ``w'`` line 3 + 6 is the fixed-point iteration of Eq. 2.8, so
``Q`` is exactly the Rényi aggregate of the returned weights. Lines 4-5 are an EM step for the
mixture likelihood with the tilted agents ``Q_in`` *held fixed*; this ignores how ``Q_in`` moves
with the weights, so for γ < 1 the limit is a stationary point of that frozen-component likelihood,
not the maximum-likelihood weights of :class:`aggregators.renyi_pool.RenyiPool` (which uses the
exact implicit gradient). At γ = 1 (the linear pool) the two coincide: lines 4-5 are then exactly
EM for the linear pool. The tests check both statements; the docs give the measured gap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from solvers.errors import InputError
from solvers.progress import ProgressFn, report
from solvers.special import logsumexp

from .renyi_fixed_point import anneal, check_gamma, check_lam, mixture_weights, solve_fixed_point
from .validation import DEFAULT_FLOOR, Kind, apply_floor, validate

__all__ = ["renyi_variational", "VariationalResult"]


@dataclass
class VariationalResult:
    """Output of :func:`renyi_variational`.

    ``weights`` are the pool weights ``w`` of Eq. (2.6); ``mixture_weights`` the loop's ``w'``;
    ``log_q`` the final aggregate (n, K); ``loglik`` mean log-likelihood per iteration.
    """

    weights: np.ndarray
    mixture_weights: np.ndarray
    log_q: np.ndarray
    n_iter: int
    converged: bool
    loglik: list[float]


def _tilted(L: np.ndarray, gamma: np.ndarray, r: np.ndarray) -> np.ndarray:
    """log Q_in(y) ∝ γ_i L_in(y) + (1-γ_i) r_n(y), normalised (line 3)."""
    a = gamma[None, :, None] * L + (1.0 - gamma)[None, :, None] * r[:, None, :]
    return a - logsumexp(a, axis=2, keepdims=True)


def renyi_variational(
    log_probs: Any,
    labels: Any,
    gamma: Any,
    *,
    lam: Any = None,
    tol: float = 1e-9,
    max_iter: int = 5000,
    line6: str = "corrected",
    init_weights: Any = None,
    floor: float | None = DEFAULT_FLOOR,
    kind: Kind = "log_probs",
    progress: ProgressFn | None = None,
) -> VariationalResult:
    """Run Algorithm 2.1 (single loop) on a labelled validation set.

    Stops when ``max_i |Δw'_i| <= tol``. ``line6="corrected"`` (default) uses ``Q = Σ w'_i Q_i``;
    ``"as_printed"`` uses the seed's ``Q ∝ Σ w'_i γ_i Q_i``. ``Q`` starts at the Rényi aggregate of the
    initial weights (uniform by default).
    """
    if line6 not in ("corrected", "as_printed"):
        raise InputError("line6", f"must be 'corrected' or 'as_printed'; got {line6!r}")
    preds, y = validate(log_probs, labels, kind=kind)
    preds = apply_floor(preds, floor)
    L0 = preds.log_probs
    n, A, K = L0.shape
    g = check_gamma(gamma, A)
    L = anneal(L0, check_lam(lam, A))
    if init_weights is None:
        w = np.full(A, 1.0 / A)
    else:
        w = np.asarray(init_weights, dtype=np.float64)
        w = w / w.sum()
    wp = mixture_weights(w, g)
    r = solve_fixed_point(L, w, g).log_q
    idx = np.arange(n)
    lls: list[float] = []
    converged = False
    it = 0
    for it in range(1, max_iter + 1):
        lQi = _tilted(L, g, r)  # line 3
        lt = lQi[idx, :, y] + np.log(np.maximum(wp, 1e-300))[None, :]
        q = np.exp(lt - logsumexp(lt, axis=1, keepdims=True))  # line 4
        wp_new = q.sum(axis=0) / q.sum()  # line 5
        coef = wp_new if line6 == "corrected" else wp_new * g
        coef = coef / coef.sum()
        r = logsumexp(lQi + np.log(np.maximum(coef, 1e-300))[None, :, None], axis=1)  # line 6
        r -= logsumexp(r, axis=1, keepdims=True)
        lls.append(float(r[idx, y].mean()))
        change = float(np.max(np.abs(wp_new - wp)))
        wp = wp_new
        report(progress, it / max_iter)
        if change <= tol:
            converged = True
            break
    w_pool = wp * g if line6 == "corrected" else wp * g * g
    w_pool = w_pool / w_pool.sum()
    report(progress, 1.0)
    return VariationalResult(w_pool, wp, r, it, converged, lls)
