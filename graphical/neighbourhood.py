"""Neighbourhood selection (Meinshausen & Bühlmann 2006; seed 001 §6.3.2, l.2503-2511).

For each variable ``i`` a lasso regression of column ``i`` on the others,
``Θ_{i,-i} = argmin_θ (1/n)‖X_{*i} - X_{*(-i)} θ‖² + λ‖θ‖₁``, solved by scikit-learn's coordinate
descent (``sklearn.linear_model.lasso_path``, whose objective ``(1/(2n))‖·‖² + α‖θ‖₁`` is the seed's
halved: ``α = λ/2``). The supports are made symmetric by the union (``Θ_ij ≠ 0`` or ``Θ_ji ≠ 0``) or
the intersection (both).

:func:`neighbourhood_weights` returns, for each pair, the largest ``λ`` on a grid at which the edge
is selected, so that thresholding it at ``λ`` gives :func:`neighbourhood_selection`'s graph at that
``λ`` (to the grid) and ranking it gives the whole path, as ROC curves need.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.linear_model import lasso_path

from solvers.checks import check_choice, check_count
from solvers.errors import InputError


def _as_data(X: Any, field: str) -> np.ndarray:
    A = np.array(X, dtype=float)
    if A.ndim != 2 or A.shape[0] < 2 or A.shape[1] < 2:
        raise InputError(field, f"must be (n_samples >= 2, p >= 2); got shape {A.shape}", code="bad_shape")
    if not np.isfinite(A).all():
        i, j = (int(v) for v in np.argwhere(~np.isfinite(A))[0])
        raise InputError(field, "has a non-finite entry", code="nan", row=i, column=j)
    A = A - A.mean(axis=0)
    sd = A.std(axis=0)
    if (sd <= 0).any():
        raise InputError(field, f"variable {int(np.flatnonzero(sd <= 0)[0])} is constant", code="zero_variance")
    return A / sd


def _lambda_grid(Z: np.ndarray, n_lambdas: int) -> np.ndarray:
    """From the smallest λ that empties every neighbourhood down to 1e-3 of it, log-spaced (seed's λ)."""
    n = Z.shape[0]
    G = np.abs(Z.T @ Z) / n
    np.fill_diagonal(G, 0.0)
    lam_max = 2.0 * float(G.max())  # (1/n)‖·‖² has gradient (2/n) Xᵀr: every θ = 0 for λ >= this
    return np.geomspace(lam_max, 1e-3 * lam_max, n_lambdas)


def neighbourhood_weights(
    X: Any, *, rule: str = "union", n_lambdas: int = 40, lambdas: Any = None, field: str = "X"
) -> np.ndarray:
    """For each pair, the largest seed-``λ`` of the grid at which the edge is selected (0: never).

    ``X`` is ``(n_samples, p)``; each column is centred and scaled to unit variance first (the seed's
    correlation variant, l.3001). ``rule`` is ``"union"`` or ``"intersection"``.
    """
    check_choice(rule, ("union", "intersection"), field="rule")
    Z = _as_data(X, field)
    p = Z.shape[1]
    if lambdas is None:
        lam = _lambda_grid(Z, check_count(n_lambdas, field="n_lambdas", minimum=2))
    else:
        lam = np.sort(np.asarray(lambdas, dtype=float))[::-1]
        if lam.ndim != 1 or lam.size == 0 or not np.isfinite(lam).all() or (lam <= 0).any():
            raise InputError("lambdas", "must be a non-empty list of finite numbers > 0")
    S = np.zeros((p, p))  # S[i, j]: largest λ with j in i's neighbourhood
    for i in range(p):
        rest = np.delete(np.arange(p), i)
        _, coefs, _ = lasso_path(Z[:, rest], Z[:, i], alphas=lam / 2.0)
        on = coefs != 0  # (p-1, n_lambdas), λ decreasing
        first = np.where(on.any(axis=1), on.argmax(axis=1), -1)
        S[i, rest] = np.where(first >= 0, lam[np.maximum(first, 0)], 0.0)
    return np.maximum(S, S.T) if rule == "union" else np.minimum(S, S.T)


def neighbourhood_selection(X: Any, lam: float, *, rule: str = "union", field: str = "X") -> np.ndarray:
    """The neighbourhood-selection graph at the seed's ``λ`` as a boolean adjacency."""
    if not (np.isfinite(lam) and lam > 0):
        raise InputError("lam", f"must be a finite number > 0; got {lam!r}")
    W = neighbourhood_weights(X, rule=rule, lambdas=[lam], field=field)
    return W >= lam
