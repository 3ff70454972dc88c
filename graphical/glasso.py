"""The graphical lasso (seed 001 Eq 6.5): ``min_Θ <C, Θ> - log det Θ + λ |Θ|_1`` over positive definite Θ.

Solved by the ADMM of :mod:`graphical.admm` with the elementwise soft-threshold as its Z-step, to a
certified duality gap (Eq 6.6). ``penalize_diagonal=False`` (the default, as scikit-learn's
``GraphicalLasso`` and SPICE, l.2511) leaves ``Θ_ii`` free; ``True`` is Eq 6.5 as printed.
"""

from __future__ import annotations

from typing import Any

from solvers.result import SolveResult

from .admm import penalised_likelihood_admm
from .checks import as_covariance
from .penalties import WeightedL1


def graphical_lasso(covariance: Any, lam: float, *, penalize_diagonal: bool = False, **options: Any) -> SolveResult:
    """Eq 6.5 by ADMM; ``options`` are those of :func:`graphical.admm.penalised_likelihood_admm`
    (``tol`` is on the duality gap). ``result.x`` is the sparse precision estimate."""
    C = as_covariance(covariance)
    pen = WeightedL1.uniform(lam, C.shape[0], penalize_diagonal=penalize_diagonal)
    return penalised_likelihood_admm(C, pen, method="graphical_lasso", **options)
