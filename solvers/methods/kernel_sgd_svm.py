"""Kernel stochastic-gradient SVMs, Table 5's SGD baselines (seed 002, Ouyang ch. IV, L1986-1990): Pegasos and NORMA.

Both minimise the L1-SVM's regularised hinge risk over an RKHS by one sampled term per step and keep
``f = c sum_j a_j y_j k(x_j, .)`` as a kernel expansion over the samples that ever violated the margin
(:class:`KernelExpansion`: the points contiguous, a global scale ``c`` so that shrinking every
coefficient is O(1), as the scaled-alpha trick of :mod:`solvers.methods.frank_wolfe_svm`).

- **Pegasos** [external] (Shalev-Shwartz, Singer, Srebro and Cotter 2011, Math. Program. 127, the
  kernelised Pegasos of their Fig. 3): ``min_w (lam/2)|w|^2 + (1/n) sum_i max(0, 1 - y_i <w, phi(x_i)>)``
  (no bias). At step ``t = 1..T`` draw ``i``; if ``y_i (1/(lam t)) sum_j a_j y_j k(x_j, x_i) < 1`` then
  ``a_i += 1``. Output ``w_T = (1/(lam T)) sum_j a_j y_j phi(x_j)``: the step ``eta_t = 1/(lam t)``
  on the strongly convex objective, ``O(log T / (lam T))`` in expectation.
- **NORMA** [external] (Kivinen, Smola and Williamson 2004, IEEE Trans. Signal Process. 52(8), NORMA
  with the hinge loss and a fixed margin ``rho = 1``): ``f_{t+1} = (1 - eta_t lam) f_t + eta_t s_t y_t
  k(x_t, .)`` and ``b_{t+1} = b_t + eta_t s_t y_t``, with ``s_t = 1`` when ``y_t (f_t(x_t) + b_t) < 1``,
  else 0: stochastic (sub)gradient descent on ``(lam/2)|f|^2 + hinge(1 - y (f(x) + b))`` with an
  unregularised bias. The seed's setting is ``eta_t = 1/t`` (L1988, "learning rate 1/k, margin 1");
  ``eta_t = eta / t`` here, ``eta = 1`` by default, ``eta = 1/lam`` the strongly convex step (Pegasos's, ``eta lam <= 1`` required). The
  expansion is not truncated (the paper's optional window ``tau``).

``lam = 1 / (C n)`` makes both the objective of scikit-learn's ``SVC(C)`` up to the bias: the
estimators take ``C`` and convert. Kernels: RBF ``exp(-|x - z|^2 / (2 sigma^2))`` or linear.
``epochs`` counts passes of ``n`` steps, each epoch a fresh random permutation. Cost per step:
``O(d |S|)`` for ``f(x_i)`` (``|S|`` the expansion's size), O(1) for the update.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..checks import check_choice, check_count, check_positive
from ..errors import InputError
from ..problems._rows import as_rows
from ..problems.cvm_svm import rbf
from ._kernel_classifier import BinaryKernelClassifier

KERNELS = ("rbf", "linear")
_LO = 1e-150


Kernel = Callable[..., np.ndarray]


def kernel_function(kernel: str, sigma: float) -> Kernel:
    """``k(X, Z, sqZ=None)``, the Gram block of the rows of ``X`` against those of ``Z`` (``sqZ``: the
    squared norms of ``Z``'s rows when the caller keeps them; the linear kernel ignores them)."""
    check_choice(kernel, KERNELS, field="kernel")
    if kernel == "linear":
        return lambda X, Z, sqZ=None: X @ Z.T
    check_positive(sigma, field="sigma")
    return lambda X, Z, sqZ=None: rbf(X, Z, sigma, sqZ=sqZ)


class KernelExpansion:
    """``f(x) = c sum_j a_j k(x_j, x)`` over the training points that entered, the points kept contiguous."""

    def __init__(self, X: np.ndarray, kernel: Kernel) -> None:
        n = X.shape[0]
        self.X, self.k = X, kernel
        self.pos = np.full(n, -1, dtype=np.int64)
        self.idx = np.empty(n, dtype=np.int64)
        self.XS = np.empty_like(X)
        self.sq = np.einsum("ij,ij->i", X, X)
        self.sqS = np.empty(n)
        self.a = np.zeros(n)
        self.m = 0
        self.c = 1.0

    def at(self, i: int) -> float:
        """``f(x_i)`` (``m`` kernel evaluations)."""
        if self.m == 0:
            return 0.0
        return self.c * float(self.k(self.X[i : i + 1], self.XS[: self.m], self.sqS[: self.m])[0] @ self.a[: self.m])

    def add(self, i: int, delta: float) -> None:
        """The coefficient of ``k(x_i, .)`` in ``f`` grows by ``delta``."""
        p = self.pos[i]
        if p < 0:
            p = self.pos[i] = self.m
            self.idx[p], self.XS[p], self.sqS[p] = i, self.X[i], self.sq[i]
            self.m += 1
        self.a[p] += delta / self.c

    def scale(self, factor: float) -> None:
        """Every coefficient times ``factor`` (>= 0), in O(1) (O(m) when ``c`` is folded back in or 0)."""
        self.c *= factor
        if self.c < _LO:  # 0 included: f = 0, the expansion keeps its points with zero weights
            self.a[: self.m] *= self.c
            self.c = 1.0

    def coefficients(self) -> tuple[np.ndarray, np.ndarray]:
        """``(indices, coefficients)``: ``f = sum coef_j k(x_{idx_j}, .)``, the zero ones left out."""
        coef = self.c * self.a[: self.m]
        keep = coef != 0
        return self.idx[: self.m][keep], coef[keep]


class _KernelSGD(BinaryKernelClassifier):
    """The shared fit of :class:`PegasosSVC` and :class:`NormaSVC`: checks, the epochs' permutations, the
    expansion; ``_step(f, i, t)`` is the method's update at step ``t`` (1-based) on sample ``i``."""

    def __init__(self, C: float = 1.0, sigma: float = 1.0, *, kernel: str = "rbf", epochs: int = 1, seed: int = 0):
        self.C, self.sigma, self.kernel, self.epochs, self.seed = C, sigma, kernel, epochs, seed

    def _step(self, f: KernelExpansion, i: int, t: int) -> None:
        raise NotImplementedError

    def _prepare(self) -> None:
        """Checks of the method's own options, once ``lam_`` is known."""

    def fit(self, X: Any, y: Any) -> _KernelSGD:
        A = as_rows(X)
        if not isinstance(A, np.ndarray) or A.shape[0] < 2:
            raise InputError("X", "must be a dense array with at least two rows")
        ys = self._labels(y)
        if ys.shape[0] != A.shape[0]:
            raise InputError("y", f"has {ys.shape[0]} entries but X has {A.shape[0]} rows")
        n = A.shape[0]
        self.lam_ = 1.0 / (check_positive(self.C, field="C") * n)
        epochs = check_count(self.epochs, field="epochs", minimum=1)
        self._prepare()
        self._k = kernel_function(self.kernel, self.sigma)
        self._y, self.b_ = ys, 0.0
        f = KernelExpansion(A, self._k)
        rng = np.random.default_rng(self.seed)
        t = 0
        for _ in range(epochs):
            for i in rng.permutation(n):
                t += 1
                self._step(f, int(i), t)
        self.n_steps_ = t
        idx, coef = f.coefficients()
        self.support_, self.support_vectors_, self.dual_coef_ = idx, A[idx], coef * self._out_scale(t)
        return self

    def _out_scale(self, T: int) -> float:
        return 1.0

    def decision_function(self, X: Any) -> np.ndarray:
        Z = as_rows(X)
        if not isinstance(Z, np.ndarray) or Z.ndim != 2 or Z.shape[1] != self.support_vectors_.shape[1]:
            raise InputError("X", f"must be a dense array with {self.support_vectors_.shape[1]} columns")
        return self._k(Z, self.support_vectors_) @ self.dual_coef_ + self.b_


class PegasosSVC(_KernelSGD):
    """Kernelised Pegasos (Shalev-Shwartz et al. 2011, Fig. 3) for ``(lam/2)|w|^2 + mean hinge``, ``lam = 1/(C n)``,
    no bias. Learnt: ``support_``, ``support_vectors_``, ``dual_coef_`` (``w = sum dual_coef_j phi(sv_j)``),
    ``b_ = 0``."""

    def _step(self, f: KernelExpansion, i: int, t: int) -> None:
        # f holds sum_j a_j y_j k(x_j, .) (a_j the count of violations, c = 1); w_t = f / (lam t)
        if self._y[i] * f.at(i) / (self.lam_ * t) < 1.0:
            f.add(i, self._y[i])

    def _out_scale(self, T: int) -> float:
        return 1.0 / (self.lam_ * T)


class NormaSVC(_KernelSGD):
    """NORMA (Kivinen et al. 2004) with the hinge loss, margin 1 and ``eta_t = eta / t`` (the seed's ``1/t``:
    ``eta = 1``); ``lam = 1/(C n)``; an unregularised bias ``b_``. Requires ``eta * lam <= 1``."""

    def __init__(self, C: float = 1.0, sigma: float = 1.0, *, eta: float = 1.0, **common: Any):
        super().__init__(C, sigma, **common)
        self.eta = eta

    def _prepare(self) -> None:
        if not check_positive(self.eta, field="eta") * self.lam_ <= 1.0:
            raise InputError("eta", f"eta * lam = eta / (C n) must be <= 1 (a shrink factor >= 0); got {self.eta}")

    def _step(self, f: KernelExpansion, i: int, t: int) -> None:
        eta = self.eta / t
        yi = self._y[i]
        violated = yi * (f.at(i) + self.b_) < 1.0
        f.scale(1.0 - eta * self.lam_)
        if violated:
            f.add(i, eta * yi)
            self.b_ += eta * yi
