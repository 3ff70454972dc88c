"""The Gaussian negative log-likelihood over precision matrices (seed 001 Eq 6.4) and its gradient.

    NLL(Θ) = <C, Θ> - log det Θ,      ∇NLL(Θ) = C - Θ^{-1}      (l.2471-2485)

``C`` is the sample covariance (mean removed, divided by n), ``Θ`` a symmetric positive definite
precision. The objective is ``+inf`` outside the positive definite cone. This is the constant-free,
per-sample form; the held-out log-likelihood of ``n`` samples is ``-(n/2)(NLL + p log 2π)``.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve


def logdet_pd(A: np.ndarray) -> float:
    """``log det A`` for a symmetric positive definite ``A``; ``-inf`` if a Cholesky factor fails."""
    try:
        L, _ = cho_factor(A, lower=True, check_finite=False)
    except LinAlgError:
        return -np.inf
    d = np.diag(L)
    if not np.all(d > 0):
        return -np.inf
    return 2.0 * float(np.sum(np.log(d)))


def gaussian_nll(C: np.ndarray, Theta: np.ndarray) -> float:
    """Eq 6.4: ``<C, Θ> - log det Θ`` (``+inf`` if ``Θ`` is not positive definite)."""
    return float(np.vdot(C, Theta)) - logdet_pd(Theta)


def gaussian_nll_grad(C: np.ndarray, Theta: np.ndarray) -> np.ndarray:
    """The gradient of Eq 6.4, ``C - Θ^{-1}`` (l.2485), by a Cholesky solve."""
    F = cho_factor(Theta, lower=True)
    return C - cho_solve(F, np.eye(Theta.shape[0]))
