"""Conditional log-linear model: the log opinion pool's weight-learning problem, and more.

Model (seed 000 Eq. 2.5 read as a log-linear model; seed 004 §1.1):

    log P(y | n; w) = <w, f_n(y)> - log Z_n(w),    Z_n(w) = sum_y exp <w, f_n(y)>,

with one feature vector ``f_n(y) in R^dim`` per item and class. Objective (minimised), the mean
negative log-likelihood of the labels plus an optional ridge:

    f(w) = (1/N) sum_n [ log Z_n(w) - <w, f_n(y_n)> ] + (l2/2) ||w||^2.

With per-item weights ``c_n >= 0`` (``sample_weight``, scikit-learn's convention) ``1/N sum_n`` becomes
``1/(sum c) sum_n c_n``: an integer weight counts the item that many times, weight 0 drops it.

Exact derivatives (the "exact gradient" of seed 000 §2.2.2.2):

    grad f  = (1/N) sum_n ( E_{p_n}[f_n] - f_n(y_n) ) + l2 w,
    hess f  = (1/N) sum_n Cov_{p_n}[f_n] + l2 I,     p_n = softmax_y <w, f_n(y)>.

The log pool is the case ``f_n(y) = (log P_1(y|n), ..., log P_A(y|n))`` with ``w`` on the simplex
(:meth:`ConditionalLogLinear.from_log_probs`); multinomial logistic regression is the case
``f_n(y) = e_y ⊗ x_n`` with ``constraint="none"``.

Storage: the features are held as ``(n_items, dim, n_classes)`` ("agent-major", the layout of
``log_probs[n, i, k]``, so a pool's input is used without a copy), optionally in float32; every
kernel accumulates in float64 (:mod:`solvers.kernels.loglinear`). The documented public view is
:attr:`ConditionalLogLinear.features`, shape ``(n_items, n_classes, dim)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..checks import as_labels
from ..errors import InputError
from ..kernels import loglinear as _k
from ..simplex import project_simplex

PARALLEL_MIN = 4_000_000
"""Feature values a pass must read before its items are split into chunks (partial sums)."""
N_CHUNKS = 16
"""Item chunks of a large pass (the layout of a parallel pass; the kernels run them serially)."""


def _all_finite(F: np.ndarray) -> bool:
    """Whether every entry of ``F`` is finite, in one read pass without an array-sized temporary: a
    finite sum proves it (NaN and infinities propagate); a sum that is not finite (or overflows on
    huge finite entries) is settled item by item."""
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(F.sum(dtype=np.float64)):
            return True
    return all(bool(np.isfinite(F[i : i + 1024]).all()) for i in range(0, F.shape[0], 1024))


class ConditionalLogLinear:
    """Mean NLL of a conditional log-linear model; implements the :mod:`solvers.problem` protocol.

    Parameters
    ----------
    features : array, shape ``(n_items, n_classes, dim)`` (``layout="nkd"``, the documented
        convention) or ``(n_items, dim, n_classes)`` (``layout="ndk"``, used without a copy when
        C-contiguous and of the storage dtype).
    labels : int array, shape ``(n_items,)``, values in ``0..n_classes-1``.
    constraint : ``"none"`` or ``"simplex"`` (weights of a pool).
    l2 : ridge coefficient (adds ``l2/2 ||w||^2``; then ``mu = l2``).
    dtype : storage precision, ``np.float64`` (default) or ``np.float32`` (half the bytes per pass;
        all sums stay float64).
    source : optional float64 array ``(n_items, dim, n_classes)`` with the exact features; when the
        storage is float32, :meth:`restrict` reads from it so that small restricted problems are
        solved on exact data.
    sample_weight : ``None`` or ``(n_items,)`` finite non-negative item weights with a positive sum.
        A weighted problem offers no ``features_ndk`` (the compiled stochastic kernels cannot
        weight their terms; the stochastic solvers then use the weighted ``term_grad``).

    Attributes
    ----------
    features : view ``(n_items, n_classes, dim)`` of the stored features (for bound majorization).
    features_ndk : the features as ``(n_items, dim, n_classes)`` (the stored C-contiguous array for a
        problem that is not restricted).
    cols : the rows of the stored array that are this problem's coordinates.
    labels : int64 ``(n_items,)``.
    dim, n_terms (= n_items), n_classes, constraint, l2, mu, L, L_max.
    """

    def __init__(
        self,
        features: Any,
        labels: Any,
        *,
        layout: str = "nkd",
        constraint: str = "none",
        l2: float = 0.0,
        dtype: Any = np.float64,
        source: np.ndarray | None = None,
        sample_weight: Any = None,
    ) -> None:
        dtype = np.dtype(dtype)
        if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise InputError("dtype", f"must be float32 or float64; got {dtype}")
        F = np.asarray(features)
        if F.ndim != 3:
            raise InputError("features", f"must be 3-D; got shape {F.shape}")
        if layout == "nkd":
            F = np.swapaxes(F, 1, 2)
        elif layout != "ndk":
            raise InputError("layout", f"must be 'nkd' or 'ndk'; got {layout!r}")
        F = np.ascontiguousarray(F, dtype=dtype)
        N, d, K = F.shape
        if N < 1 or d < 1 or K < 2:
            raise InputError(
                "features", f"need >= 1 item, >= 1 feature and >= 2 classes; got {(N, K, d)} (items, classes, dim)"
            )
        if not _all_finite(F):
            raise InputError("features", "must be finite (floor log-probabilities before building a log pool)")
        if constraint not in ("none", "simplex"):
            raise InputError("constraint", f"must be 'none' or 'simplex'; got {constraint!r}")
        if not (l2 >= 0 and np.isfinite(l2)):
            raise InputError("l2", f"must be a non-negative number; got {l2!r}")
        self._F = F
        self.cols = np.arange(d, dtype=np.int64)
        self.labels = as_labels(labels, N, K)
        self._y = self.labels  # the kernels' labels, indexed by stored item
        self._items = np.arange(N, dtype=np.int64)  # the stored items this problem averages over
        self.dim = d
        self.n_terms = N
        self.n_classes = K
        self.constraint = constraint
        self.l2 = float(l2)
        self.mu = self.l2 if self.l2 > 0 else None
        self.dtype = dtype
        if source is not None and (source.shape != F.shape or source.dtype != np.float64):
            raise InputError("source", "must be float64 with the shape (n_items, dim, n_classes) of the features")
        self._source = source if source is not None else (F if dtype == np.float64 else None)
        self._L: tuple[float, float] | None = None
        self.sample_weight: np.ndarray | None = None
        self._c = np.empty(0)  # the kernels' item weights (empty: all 1)
        self._total = float(N)  # the divisor of every mean: N, or the sum of the item weights
        if sample_weight is not None:
            c = np.asarray(sample_weight, dtype=np.float64)
            if c.shape != (N,) or not np.isfinite(c).all() or (c < 0).any() or not c.sum() > 0:
                raise InputError("sample_weight", f"must be ({N},) finite, non-negative, with a positive sum")
            self.sample_weight = self._c = np.ascontiguousarray(c)
            self._total = float(c.sum())
        if constraint == "simplex":
            self.project = project_simplex
            self.prox = lambda x, step=1.0: project_simplex(x)

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def from_log_probs(
        cls,
        log_probs: np.ndarray,
        labels: Any,
        *,
        dtype: Any = np.float64,
        constraint: str = "simplex",
        sample_weight: Any = None,
    ) -> ConditionalLogLinear:
        """The log pool's problem: features ``f_n(y)_i = log P_i(y | n)`` from ``(n_items, n_agents, n_classes)``.

        ``log_probs`` must be finite (floored); with ``dtype=float64`` and a C-contiguous float64
        input no copy is made.
        """
        lp = np.asarray(log_probs)
        src = lp if (lp.dtype == np.float64 and lp.flags.c_contiguous) else None
        return cls(
            lp, labels, layout="ndk", constraint=constraint, dtype=dtype, source=src, sample_weight=sample_weight
        )

    @property
    def features_ndk(self) -> np.ndarray | None:
        """The features as ``(n_items, dim, n_classes)`` for the compiled stochastic kernels: the stored
        array (a copy for a restricted problem); ``None`` for a weighted problem."""
        return self._features_ndk() if self.sample_weight is None else None

    def _features_ndk(self) -> np.ndarray:
        F = self._F if self.n_terms == self._F.shape[0] else self._F[self._items]
        if self.cols.size == F.shape[1] and np.array_equal(self.cols, np.arange(self.cols.size)):
            return F
        return F[:, self.cols, :]

    @property
    def features(self) -> np.ndarray:
        """Features of shape ``(n_items, n_classes, dim)``, ``features[n, y] = f_n(y)``: a view of the
        stored array (a copy for a restricted problem)."""
        return np.swapaxes(self._features_ndk(), 1, 2)

    def x0(self) -> np.ndarray:
        return np.full(self.dim, 1.0 / self.dim) if self.constraint == "simplex" else np.zeros(self.dim)

    # -- objective ------------------------------------------------------------------------------
    def _w(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        w = np.ascontiguousarray(x, dtype=np.float64)
        if w.shape != (self.dim,):
            raise InputError("x", f"must have shape ({self.dim},); got {w.shape}")
        return w, np.flatnonzero(w).astype(np.int64)

    def _nchunk(self) -> int:
        """Item chunks of one pass: one below ``PARALLEL_MIN`` values read, else ``N_CHUNKS`` (fixed,
        so the summation order does not depend on the machine)."""
        return 1 if self.n_terms * self.dim * self.n_classes < PARALLEL_MIN else min(N_CHUNKS, self.n_terms)

    def value(self, x: np.ndarray) -> float:
        w, nz = self._w(x)
        f = _k.value_sum(self._F, self.cols, self._y, w, nz, self._c, self._items, self._nchunk()) / self._total
        return float(f + 0.5 * self.l2 * np.dot(w, w))

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        w, nz = self._w(x)
        g = np.empty(self.dim)
        f = _k.value_grad_sum(self._F, self.cols, self._y, w, nz, self._c, self._items, g, self._nchunk()) / self._total
        g /= self._total
        if self.l2:
            f += 0.5 * self.l2 * np.dot(w, w)
            g += self.l2 * w
        return float(f), g

    def grad(self, x: np.ndarray) -> np.ndarray:
        return self.value_and_grad(x)[1]

    def hvp(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        w, nz = self._w(x)
        v = np.ascontiguousarray(v, dtype=np.float64)
        out = np.empty(self.dim)
        _k.hvp_sum(self._F, self.cols, self._y, w, nz, self._c, self._items, v, out)
        out /= self._total
        if self.l2:
            out += self.l2 * v
        return out

    def probs(self, x: np.ndarray, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Model probabilities ``p_n(y)`` for items ``start..stop-1``, shape ``(items, n_classes)``."""
        w, nz = self._w(x)
        stop = self.n_terms if stop is None else stop
        P = np.empty((stop - start, self.n_classes))
        _k.probs_chunk(self._F, self.cols, self._y, w, nz, self._items, start, stop, P)
        return P

    def hessian(
        self, x: np.ndarray, *, items: np.ndarray | None = None, chunk: int = 256, dtype: Any = np.float64
    ) -> np.ndarray:
        """Exact dense Hessian ``(1/N) sum_n Cov_{p_n}[f_n] + l2 I``: one BLAS syrk per item chunk on
        the centred features ``(f_n(y) - E_{p_n} f_n) sqrt(p_n(y))``.

        ``items``: average over these items only (a subsampled Hessian, for subsampled Newton);
        default all. ``dtype``: precision of the chunk matrices (``np.float32`` halves the BLAS time;
        every chunk is summed into a float64 Hessian; the Newton solver's model Hessians). Costs
        ``O(items * n_classes * dim^2)`` flops: meant for small ``dim`` (restricted problems).
        """
        w, nz = self._w(x)
        d, K = self.dim, self.n_classes
        if items is None:
            its = self._items
        else:
            its = np.asarray(items, dtype=np.int64)
            if its.ndim != 1 or its.size == 0 or its.min() < 0 or its.max() >= self.n_terms:
                raise InputError("items", "must be a non-empty 1-D array of item indices")
            its = self._items[its]
        H = np.zeros((d, d))
        G = np.empty((d, chunk * K), dtype=dtype)
        for start in range(0, its.size, chunk):
            sel = its[start : start + chunk]
            _k.hessian_chunk(self._F, self.cols, self._y, w, nz, self._c, sel, G)
            Gc = G[:, : sel.size * K]
            H += Gc @ Gc.T
        H /= its.size if self._c.size == 0 else self._c[its].sum()
        H = 0.5 * (H + H.T)
        if self.l2:
            H[np.diag_indices(d)] += self.l2
        return H

    def _term_scale(self, i: int) -> float:
        """``N c_i / sum c``: the factor that makes the terms' mean the weighted objective."""
        return 1.0 if self.sample_weight is None else self.n_terms * float(self.sample_weight[i]) / self._total

    def term_grad(self, i: int, x: np.ndarray) -> np.ndarray:
        """Gradient of term ``i``: ``E_{p_i}[f_i] - f_i(y_i) + l2 x`` (times ``N c_i / sum c`` when weighted)."""
        Fi = self._F[self._items[i]][self.cols].astype(np.float64, copy=False)
        x = np.asarray(x, dtype=np.float64)
        s = x @ Fi
        p = np.exp(s - s.max())
        p /= p.sum()
        g = Fi @ p - Fi[:, self.labels[i]]
        if self.sample_weight is not None:
            g = self._term_scale(i) * g
        if self.l2:
            g = g + self.l2 * x
        return g

    def term_value(self, i: int, x: np.ndarray) -> float:
        Fi = self._F[self._items[i]][self.cols].astype(np.float64, copy=False)
        s = np.asarray(x, dtype=np.float64) @ Fi
        m = s.max()
        nll = m + np.log(np.exp(s - m).sum()) - s[self.labels[i]]
        return float(self._term_scale(i) * nll + 0.5 * self.l2 * np.dot(x, x))

    # -- constants ------------------------------------------------------------------------------
    def _constants(self) -> tuple[float, float]:
        """Per-term smoothness ``L_n = max_y ||f_n(y) - mean_y f_n(y)||^2 (+ l2)``, since
        ``||Cov_p[f]|| <= E_p ||f - c||^2 <= max_y ||f(y) - c||^2`` for any centre ``c``."""
        if self._L is None:
            Ls = np.empty(self.n_terms)
            for start in range(0, self.n_terms, 1024):
                Fc = self._F[self._items[start : start + 1024]][:, self.cols, :].astype(np.float64, copy=False)
                D = Fc - Fc.mean(axis=2, keepdims=True)
                Ls[start : start + 1024] = np.einsum("cik,cik->ck", D, D).max(axis=1)
            if self.sample_weight is not None:  # the terms of the weighted mean carry N c_n / sum c
                Ls *= self.n_terms * self.sample_weight / self._total
            self._L = (float(Ls.mean()) + self.l2, float(Ls.max()) + self.l2)
        return self._L

    @property
    def L(self) -> float:
        """Upper bound on the Lipschitz constant of the gradient of ``f`` (mean of the term bounds)."""
        return self._constants()[0]

    @property
    def L_max(self) -> float:
        """Max over terms of the term smoothness bounds."""
        return self._constants()[1]

    # -- working sets ---------------------------------------------------------------------------
    def screen(self, k: int) -> np.ndarray:
        """The ``k`` coordinates with the largest mean label feature ``mean_n f_n(y_n)_i`` (for the
        log pool: the agents with the best individual log-likelihood), a cheap first working set
        that reads one value per item and coordinate."""
        out = np.empty(self.dim)
        _k.label_feature_sum(self._F, self.cols, self._y, self._c, self._items, out)
        return np.sort(np.argsort(-out, kind="stable")[: min(k, self.dim)])

    def restrict(self, idx: Any) -> ConditionalLogLinear:
        """The same problem on the coordinates ``idx`` (the others fixed at zero), without a copy.

        The restricted problem reads the rows ``idx`` of the exact float64 ``source`` when there is
        one (so small problems are solved on exact data) and of the stored array otherwise. Used by
        the working-set Newton solver.
        """
        idx = np.asarray(idx, dtype=np.int64)
        if idx.ndim != 1 or (idx.size and (idx.min() < 0 or idx.max() >= self.dim)):
            raise InputError("idx", f"must be 1-D indices in 0..{self.dim - 1}")
        out = ConditionalLogLinear.__new__(ConditionalLogLinear)
        out.__dict__.update(self.__dict__)
        if self._source is not None:
            out._F = self._source
            out.dtype = np.dtype(np.float64)
        out.cols = np.ascontiguousarray(self.cols[idx])
        out.dim = int(idx.size)
        out._L = None
        return out

    def subsample(self, items: Any) -> ConditionalLogLinear:
        """The same model averaged over the terms ``items`` only (sorted, distinct), without a copy of
        the data: the Newton solver's warm start solves it first (a subsample's optimum is close to
        the full one, at a fraction of the cost per pass)."""
        items = np.asarray(items, dtype=np.int64)
        if items.ndim != 1 or items.size == 0 or np.any(np.diff(items) <= 0) or items[0] < 0:
            raise InputError("items", "must be a non-empty sorted 1-D array of distinct term indices")
        if items[-1] >= self.n_terms:
            raise InputError("items", f"must be term indices in 0..{self.n_terms - 1}")
        out = ConditionalLogLinear.__new__(ConditionalLogLinear)
        out.__dict__.update(self.__dict__)
        out._items = np.ascontiguousarray(self._items[items])
        out.n_terms = int(items.size)
        out.labels = self._y[out._items]
        if self.sample_weight is not None:
            out.sample_weight = self._c[out._items]
            out._total = float(out.sample_weight.sum())
            if not out._total > 0:
                raise InputError("items", "the selected terms have zero total sample_weight")
        else:
            out._total = float(items.size)
        out._L = None
        return out
