"""The curvature of the Rényi pool's weight-learning objective: Fisher and empirical Fisher, blended.

Seed 000 §2.6 learns the weights ``w`` by maximising ``Σ_n log P_agg(y_n | w)``; the aggregate
``r = log P_agg`` is the fixed point of Eq. (2.8). By the implicit-function theorem (see
:mod:`aggregators.renyi_gradient`) its Jacobian in the weights, per item, is

    J = dr/dw = H^{-1} M,    M[:, k] = (Q_k - Q) / (γ_k S),    S = Σ_j w_j/γ_j,

with the symmetric positive-definite ``K x K`` matrix ``H = diag(Σ_i w'_i γ_i Q_i) + Σ_i w'_i (1-γ_i)
Q_i Q_iᵀ`` of :mod:`aggregators.renyi_kernels` (``Q_i`` the tilted agents, ``Q = Σ_i w'_i Q_i``).

The loss of an item is ``-r_y`` with ``r`` normalised (``qᵀ J = 0``); its exact Hessian is

    Σ_y q_y J_yᵀ J_y  +  Σ_y (q_y - [y = y_n]) ∇²r_y          (J_y: row y of J)

The first term is the generalised Gauss-Newton matrix (the Fisher information ``F``); the second
needs second derivatives of the fixed point. Writing the fixed point as ``P^γ ∝ Σ_i c_i P_i^γ`` with
``c_i = w'_i / Z_i`` (shared γ), ``r_y = γ⁻¹ log(c·P_y^γ) + const`` has curvature ``-γ J_yᵀ J_y`` in
``c``, and terms common to every ``y`` cancel in the sum over ``q_y - [y = y_n]``; keeping that part,

    Hessian ≈ (1 - β) F + β E,    F = Σ_y q_y J_yᵀ J_y,   E = J_{y_n}ᵀ J_{y_n},   β = Σ_i w'_i γ_i,

a positive semi-definite blend of the Fisher and the empirical Fisher (``E``, the outer product of
the item's own gradient), exact at both ends of the family: γ → 0 (the log pool, whose Hessian is
``F = Cov_q[log P]``) and γ = 1 (the linear pool, whose Hessian is ``E``). In between it drops the
change of ``c`` with ``w`` (measured on small problems: 1-19% from the finite-difference Hessian,
against 5-95% for ``F`` alone). It is the ``hessian`` of :class:`RenyiWeightProblem`, used by the
working-set Newton solver (:mod:`solvers.methods.newton`) with Armijo backtracking.

Cost per item with ``A`` agents of which ``a`` have a positive weight: ``Q_i`` (``A K``
exponentials), ``H`` (``K² a``), the solve (``K³/3 + 2 K² A``, dense, or ``K a² + a³ + K a A`` by
Woodbury when ``K > a``) and the product ``K A²``, all as batched BLAS over chunks of items.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numba
import numpy as np

from solvers.blas import blas_limit
from solvers.errors import InputError
from solvers.kernels.spd_inverse import spd_inverse

from .renyi_curvature_kernels import fill_columns, tilted_columns
from .renyi_fixed_point import anneal, mixture_weights
from .renyi_gradient import RenyiProblem

__all__ = ["renyi_weight_curvature", "RenyiWeightProblem"]


CURVATURE_CHUNK: int = 64
"""Items per BLAS product of the curvature (one run of columns ``Z``, one ``Z Zᵀ``)."""


def curvature_columns(
    La: np.ndarray,
    labels: np.ndarray,
    w: np.ndarray,
    gamma: np.ndarray,
    log_q: np.ndarray,
    c: np.ndarray,
    out: np.ndarray,
    *,
    blend: bool = True,
    rows: Any = None,
    agents: np.ndarray | None = None,
) -> np.ndarray:
    """The columns ``Z`` (A, m (K+1)), a view of ``out``, whose ``Z Zᵀ`` is the curvature of ``m`` items.

    Per item ``n`` (in order): the ``K`` columns ``√((1-β) c_n) J_nᵀ diag(√q_n)`` (the Fisher part)
    then the column ``√(β c_n) J_n[y_n]ᵀ`` (the empirical Fisher part). ``La`` (·, A, K) annealed,
    normalised log-probabilities, read at ``rows`` (default all) and ``agents``; ``labels``,
    ``log_q``, ``c`` the ``m`` items'. ``out`` (A, ≥ m (K+1)): a buffer in the BLAS precision.
    """
    dt = out.dtype
    A, K = w.size, La.shape[2]
    wp = mixture_weights(w, gamma)
    S = float(np.sum(w / gamma))
    act = np.flatnonzero(wp > 0)
    a = act.size
    pos = np.full(A, -1, dtype=np.int64)
    pos[act] = np.arange(a)
    sv = np.sqrt(wp[act] * (1.0 - gamma[act]))  # scales of the rank-one terms of H
    dg = wp[act] * gamma[act]  # weights of the diagonal
    colscale = 1.0 / (gamma * S)
    beta = min(float(wp @ gamma), 1.0) if blend else 0.0  # 1 + 1e-16 at gamma = 1 would make sqrt(1 - beta) NaN
    if rows is None:
        rows = np.arange(La.shape[0], dtype=np.int64)
    elif isinstance(rows, slice):
        rows = np.arange(*rows.indices(La.shape[0]), dtype=np.int64)
    rows = np.asarray(rows, dtype=np.int64)
    agents = np.arange(La.shape[1], dtype=np.int64) if agents is None else np.asarray(agents, dtype=np.int64)
    m = rows.size
    r = np.ascontiguousarray(log_q, dtype=np.float64)
    # scaled by D^{-1/2} (D = diag(q)): M̃ (m, A, K), Ṽ (m, a, K) with H̃ = diag(d̃) + Ṽᵀ Ṽ (eigenvalues in
    # [min γ, 1]), and the solution X = H̃^{-1} M̃ᵀ is the Fisher columns (renyi_curvature_kernels)
    M = np.empty((m, A, K), dtype=dt)
    V = np.empty((m, a, K), dtype=dt)
    d = np.empty((m, K), dtype=dt)
    isq = np.empty((m, K))
    tilted_columns(La, rows, agents, pos, gamma, colscale, sv, dg, r, M, V, d, isq)
    cs = np.sqrt(np.asarray(c, dtype=np.float64))
    if blend and not np.any(gamma[act] < 1.0):
        # every active agent at γ = 1 (the linear pool): β = 1, the Fisher part has weight zero and
        # H̃ = diag(d̃) (no rank-one terms), so the item's own column is M̃[:, y] / d̃[y] / √q(y) with no
        # K x K algebra, and Z has one column per item instead of K + 1
        lab = np.asarray(labels, dtype=np.int64)
        j = np.arange(m)
        scale = cs * isq[j, lab] / d[j, lab]
        out[:, :m] = (M[j, :, lab] * scale[:, None].astype(dt)).T
        return out[:, :m]
    if K > a:
        # Woodbury: H̃^{-1} M̃ᵀ = D̃^{-1}M̃ᵀ - D̃^{-1}Ṽᵀ (I + Ṽ D̃^{-1} Ṽᵀ)^{-1} Ṽ D̃^{-1} M̃ᵀ
        Vd = V / d[:, None, :]
        C = Vd @ V.transpose(0, 2, 1)
        C[:, np.arange(a), np.arange(a)] += 1.0
        T = np.linalg.solve(C, Vd @ M.transpose(0, 2, 1))  # (m, a, A)
        XT = (M - T.transpose(0, 2, 1) @ V) / d[:, None, :]  # (m, A, K) = Xᵀ
    else:
        H = V.transpose(0, 2, 1) @ V
        H[:, np.arange(K), np.arange(K)] += d
        # Xᵀ = M̃ H̃^{-1} (H̃ symmetric positive definite, well conditioned): batched inverse and product,
        # 0.7x the time of the batched solve with the A right-hand sides (measured at K = 64, A = 140);
        # the inverse by Cholesky (solvers.kernels.spd_inverse: 40-45 µs a 64 x 64 matrix against
        # np.linalg.inv's LU 76-89 µs; the inverse was 43 % of the curvature at 4,000 x 141 x 64)
        XT = M @ spd_inverse(H)  # (m, A, K)
    fill_columns(XT, np.asarray(labels, dtype=np.int64), isq, cs * np.sqrt(1.0 - beta), cs * np.sqrt(beta), out)
    return out[:, : m * (K + 1)]


def renyi_weight_curvature(
    *inputs: np.ndarray,
    blend: bool = True,
    chunk: int = CURVATURE_CHUNK,
    dtype: Any = np.float64,
    items: np.ndarray | None = None,
    agents: np.ndarray | None = None,
    threads: int | None = None,
) -> np.ndarray:
    """``Σ_n c_n [(1 - β) J_nᵀ diag(q_n) J_n + β J_n[y_n]ᵀ J_n[y_n]]``: the weights' curvature ``(A, A)``.

    ``inputs``: ``(La, labels, w, gamma, log_q, c)`` as :func:`curvature_columns` takes them:
    ``La`` (n, A, K) annealed, normalised log-probabilities; ``labels`` (n,); ``w`` (A,) on the
    simplex; ``gamma`` (A,); ``log_q`` (n, K) the solved aggregate at ``(w, gamma)``; ``c`` (n,) item
    weights (``1/n`` for the mean). ``blend=False``: the Fisher (Gauss-Newton) matrix alone (β = 0).
    ``dtype``: precision of the per-item work and BLAS products (``np.float32``: about half the time;
    each run of ``chunk`` items gives one product :func:`curvature_columns` ``Z Zᵀ``, summed into a
    float64 matrix in order). ``items``, ``agents``: read only these rows and agents of ``La`` (one
    chunk at a time, no copy of the whole); ``labels``, ``log_q``, ``c`` and ``w``, ``gamma`` are then
    the selected items' and agents'. ``threads``: chunks run in this many threads (default
    :func:`curvature_threads`); the result depends on it only through the order of the sums.
    """
    La, labels, w, gamma, log_q, c = inputs
    n = La.shape[0] if items is None else items.size
    A, K = w.size, La.shape[2]
    starts = range(0, n, chunk)
    n_threads = max(1, min(curvature_threads() if threads is None else int(threads), len(starts)))

    def part(t: int) -> np.ndarray:
        out = np.empty((A, chunk * (K + 1)), dtype=dtype)
        H = np.zeros((A, A))
        for s in starts[t::n_threads]:
            rows = slice(s, s + chunk) if items is None else items[s : s + chunk]
            sl = slice(s, s + chunk)
            Z = curvature_columns(
                La, labels[sl], w, gamma, log_q[sl], c[sl], out, blend=blend, rows=rows, agents=agents
            )
            H += Z @ Z.T
        return H

    if n_threads == 1:
        H = part(0)
    else:
        # one BLAS thread per chunk thread (OpenBLAS's own threads on every small product made the
        # curvature 3x slower: solvers.blas)
        with blas_limit(1), ThreadPoolExecutor(n_threads) as pool:
            parts = list(pool.map(part, range(n_threads)))
        H = parts[0]
        for P in parts[1:]:  # in a fixed order: the same sum at every call
            H += P
    return 0.5 * (H + H.T)


def curvature_threads() -> int:
    """Threads of :func:`renyi_weight_curvature` by default: numba's (``NUMBA_NUM_THREADS``), the
    threads the fixed-point kernels use. Every thread runs whole chunks (compiled kernels that release
    the GIL, batched LAPACK, one BLAS product), each into its own matrix, summed in thread order."""
    return int(numba.get_num_threads())


class RenyiWeightProblem(RenyiProblem):
    """:class:`RenyiProblem` with the weights alone free, offering ``hessian``, ``restrict`` and ``subsample``.

    ``hessian(x, items=None, dtype=None)`` is the curvature :func:`renyi_weight_curvature` at ``x``
    (over ``items`` only when given: subsampled Newton; in ``dtype`` products); ``restrict(idx)`` is the
    problem on the agents ``idx`` (the others at weight zero, so the aggregate and the gradient on ``idx``
    are the full problem's), sharing the warm start, for the working-set Newton solver of
    :mod:`solvers.methods.newton`. A restricted problem copies its agents' data only when it is
    evaluated: its curvature over ``items`` reads those items of the full data, at the full problem's
    solved aggregate. ``subsample(items)`` is the problem on a subset of the items (the solver's warm start).
    """

    @property
    def hessian_cheap(self) -> bool:
        """Every agent at γ = 1 (the linear pool): the curvature is one column per item with no K x K
        algebra (:func:`curvature_columns`), so Newton forms it over every item instead of a sample."""
        return bool(np.all(self.gamma0 == 1.0))

    @property
    def hessian_approximate(self) -> bool:
        """The Fisher blend is a model of the curvature (Newton corrects it by secant updates), except
        at γ = 1, where it is the linear pool's exact Hessian: Newton then forms a new one whenever a
        step divides the gap by less than ten (at 3,000 × 1,000 × 8 one secant-corrected model on 966
        agents took 25 iterations, linearly, to the old sampled models' 14)."""
        return not self.hessian_cheap

    terms_shuffled = False
    """The items are stored in a random order (the Rényi pool's fit, :meth:`RenyiPool._fit_shuffle`):
    any prefix is a uniform random subset, and the Newton solver's warm start subsamples by prefixes,
    which :meth:`subsample` serves as views."""

    def __init__(self, log_probs, labels, gamma=1.0, lam=None, *, tol=1e-12, sample_weight=None, checked=False) -> None:
        self._L: np.ndarray | None = None
        super().__init__(log_probs, labels, gamma, lam, tol=tol, sample_weight=sample_weight, checked=checked)
        # a restricted problem's root; ``None`` for the root itself, not a reference to ``self``: a
        # self-reference would make every fitted problem a reference cycle, its data-sized arrays freed
        # only when the cyclic garbage collector next runs (measured: one more copy of the data per fit
        # held by a service or a loop of fits)
        self._parent: RenyiWeightProblem | None = None
        self._agents: np.ndarray | None = None  # the root's agents of a restricted problem
        self._La_: np.ndarray | None = None

    @property
    def _root(self) -> RenyiWeightProblem:
        return self if self._parent is None else self._parent

    @property  # type: ignore[override]
    def L(self) -> np.ndarray:
        """The data (n, A, K); a restricted problem's is copied from the root's on first use."""
        if self._L is None:
            self._L = np.take(self._root.L, np.asarray(self._agents), axis=1)  # C-ordered in one copy
        return self._L

    @L.setter
    def L(self, value: np.ndarray) -> None:
        self._L = value

    @property
    def _La(self) -> np.ndarray:
        if self._La_ is None:
            self._La_ = anneal(self.L, self.lam0)
        return self._La_

    def project(self, x: np.ndarray) -> np.ndarray:
        """Projection onto the simplex; a point already on it is returned as it is (the projection's
        rounding would turn its zero weights into 1e-17 ones, and every agent back into the solve)."""
        x = np.asarray(x, dtype=np.float64)
        if x.min() >= 0 and abs(x.sum() - 1.0) <= 1e-12:
            return x.copy()
        return super().project(x)

    def _evaluate(self, x, grad):
        before = self.sweeps
        out = super()._evaluate(x, grad)
        if self._root is not self:
            self._root.sweeps += self.sweeps - before
            self._root.n_evals = self._root.n_evals + 1
            if self._warm is not None:
                self._root._warm = self._warm
        return out

    def _solved_at(self, x: np.ndarray) -> np.ndarray | None:
        """The aggregate at ``x`` when this problem or its root has just solved that very point."""
        x = np.asarray(x, dtype=np.float64)
        own = super()._solved_at(x)
        if own is not None:
            return own
        root = self._root
        if self._agents is not None and root._cache is not None and np.isfinite(root._cache[1]):
            full = np.zeros(root.n_agents)
            full[self._agents] = x
            if root._cache[0] == full.tobytes():
                return root._warm
        return None

    def hessian(self, x: np.ndarray, *, items: np.ndarray | None = None, dtype: Any = None) -> np.ndarray:
        """The curvature :func:`renyi_weight_curvature` of the mean negative log-likelihood at ``x``
        (over ``items`` only when given; in ``dtype`` BLAS products): the sum over the items with their
        sample weights, divided by their total weight."""
        its = np.arange(self.n_terms) if items is None else np.asarray(items, dtype=np.int64)
        args, agents = self.curvature_inputs(x, its)
        H = renyi_weight_curvature(*args, dtype=dtype or np.float64, items=its, agents=agents)
        return H / args[5].sum()

    def curvature_inputs(self, x: np.ndarray, its: np.ndarray) -> tuple[tuple, np.ndarray | None]:
        """The arguments ``(La, labels, w, gamma, log_q, c)`` of :func:`renyi_weight_curvature` and
        :func:`curvature_columns` at ``x`` for the items ``its`` (``c``: their sample weights, not
        normalised), and the root's agents to read (a restricted problem not yet evaluated reads its
        agents from the root's data, chunk by chunk), so that ``La`` is read at ``its``."""
        w, gamma, _ = self.unpack(x)
        w = w / w.sum()
        log_q = self.solved_log_q(x)
        c = np.ones(its.size) if self.sample_weight is None else self.sample_weight[its]
        La, agents = (self._La, None) if self._L is not None else (self._root._La, self._agents)
        return (La, self.labels[its], w, gamma, log_q[its], c), agents

    def screen(self, k: int) -> np.ndarray:
        """The ``k`` agents with the best own mean log-likelihood ``mean_n log P_i(y_n)`` (one value
        per item and agent read): the first working set, without a solve at uniform weights."""
        n = self.n_terms
        own = self._La[np.arange(n), :, self.labels]  # (n, A)
        score = own.mean(axis=0) if self.sample_weight is None else self.sample_weight @ own
        return np.sort(np.argsort(-score, kind="stable")[: min(k, self.n_agents)])

    def restrict(self, idx: Any) -> RenyiWeightProblem:
        """The same problem on the agents ``idx`` (the others at weight zero); no copy until evaluated."""
        idx = np.asarray(idx, dtype=np.int64)
        if idx.ndim != 1 or idx.size == 0 or idx.min() < 0 or idx.max() >= self.n_agents:
            raise InputError("idx", f"must be non-empty 1-D agent indices in 0..{self.n_agents - 1}")
        sub = RenyiWeightProblem.__new__(RenyiWeightProblem)
        sub.__dict__.update(self.__dict__)
        sub._parent = self._root
        sub._agents = idx if self._agents is None else self._agents[idx]
        sub._L, sub._La_, sub._cache = None, None, None
        sub.gamma0 = self.gamma0[idx]
        sub.lam0 = None if self.lam0 is None else self.lam0[idx]
        sub.n_agents = sub.dim = int(idx.size)
        sub.sweeps, sub.n_evals = 0, 0
        sub._warm = self._root._warm
        return sub

    def subsample(self, items: Any) -> RenyiWeightProblem:
        """The same problem on the items ``items`` (sorted, distinct): the Newton solver's warm start
        solves it first. Copies those items' data (a quarter of it for the solver's warm start), unless
        they are consecutive (a prefix of :attr:`terms_shuffled` items): then it reads them in place."""
        items = np.asarray(items, dtype=np.int64)
        if items.ndim != 1 or items.size == 0 or np.any(np.diff(items) <= 0) or items[0] < 0:
            raise InputError("items", "must be a non-empty sorted 1-D array of distinct item indices")
        if items[-1] >= self.n_terms:
            raise InputError("items", f"must be item indices in 0..{self.n_terms - 1}")
        take: Any = slice(int(items[0]), int(items[-1]) + 1) if items[-1] - items[0] + 1 == items.size else items
        sw = None if self.sample_weight is None else self.sample_weight[take]
        if sw is not None and not sw.sum() > 0:
            raise InputError("items", "the selected items have zero total sample_weight")
        sub = RenyiWeightProblem(
            self.L[take], self.labels[take], self.gamma0, self.lam0, tol=self.tol, sample_weight=sw, checked=True
        )
        sub._warm = None if self._warm is None else np.array(self._warm[take])
        sub.terms_shuffled = self.terms_shuffled
        return sub
