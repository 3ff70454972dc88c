"""Independent references the tests (and the benchmarks, as the peer) check our solvers against.

scipy's general-purpose solvers on the objective's ``value_and_grad``: nothing of ``solvers`` runs
inside them, so agreement with them is a check, not a tautology.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.optimize import OptimizeResult
from scipy.optimize import minimize as sp_minimize


def slsqp_simplex(
    fg: Callable, dim: int, *, ftol: float = 1e-15, maxiter: int = 1000, callback: Callable | None = None
) -> OptimizeResult:
    """scipy SLSQP on the probability simplex (bounds ``[0, 1]`` and ``sum w = 1`` with its Jacobian),
    from the uniform point; ``fg(w)`` returns ``(value, gradient)``."""
    cons = ({"type": "eq", "fun": lambda w: w.sum() - 1, "jac": lambda w: np.ones(dim)},)
    bounds, options = [(0, 1)] * dim, {"ftol": ftol, "maxiter": maxiter}
    w0 = np.full(dim, 1 / dim)
    return sp_minimize(
        fg, w0, jac=True, method="SLSQP", bounds=bounds, constraints=cons, callback=callback, options=options
    )


def lbfgsb(fg: Callable, x0: np.ndarray, *, ftol: float, gtol: float = 1e-12, maxiter: int = 5000) -> OptimizeResult:
    """scipy L-BFGS-B, unconstrained, at tight tolerances; ``fg(x)`` returns ``(value, gradient)``."""
    options = {"ftol": ftol, "gtol": gtol, "maxiter": maxiter}
    return sp_minimize(fg, x0, jac=True, method="L-BFGS-B", options=options)


def libsvm_cvm_dual(A: np.ndarray, *, tol: float = 1e-3) -> np.ndarray:
    """The CVM-form L2-SVM dual ``min alpha^T A alpha`` on the unit simplex (seed 002 eq. 116, ``A`` of
    :class:`~solvers.problems.cvm_svm.CVMDual`) solved by LibSVM's SMO with second-order working-set
    selection: scikit-learn's ``OneClassSVM`` on the precomputed Gram matrix ``A`` with ``nu = 1/n``
    solves ``min (1/2) alpha^T A alpha, 0 <= alpha_i <= 1, sum alpha = nu n = 1``, the same problem (the
    box is inactive on the simplex). ``tol``: LibSVM's gap (the seed's SMO stop, 1e-3)."""
    from sklearn.svm import OneClassSVM

    n = A.shape[0]
    oc = OneClassSVM(kernel="precomputed", nu=1.0 / n, tol=tol).fit(A)
    alpha = np.zeros(n)
    alpha[oc.support_] = oc.dual_coef_[0]
    return alpha
