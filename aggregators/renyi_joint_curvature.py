"""The Fisher information of the Rényi pool in its weights and its log γ jointly.

``RenyiPool(gamma="learn_per_agent")`` maximises ``Σ_n log P_agg(y_n | w, γ)`` over the weights ``w``
on the simplex and ``t = log γ`` (one per agent, or one shared) in a box. The aggregate
``r = log P_agg`` is the fixed point of seed 000 Eq. (2.8), ``P = Σ_i w'_i Q_i``,
``Q_i ∝ P_i^{γ_i} P^{1-γ_i}``, ``w'_i = (w_i/γ_i)/S``, ``S = Σ_j w_j/γ_j``. By the implicit-function
theorem (:mod:`aggregators.renyi_gradient`) its Jacobian per item is ``J = dr/dθ = H^{-1} M`` with
the ``K x K`` matrix ``H = diag(Σ_i w'_i γ_i Q_i) + Σ_i w'_i (1-γ_i) Q_i Q_iᵀ`` and the columns

    M[:, w_j] = (Q_j - P) / (γ_j S)
    M[:, t_j] = w'_j γ_j Q_j ⊙ (d_j - Q_j·d_j) - w'_j (Q_j - P),     d_j = log P_j - r

(the second is ``γ_j`` times the ``∂/∂γ_j`` column whose adjoint form is the γ gradient of
:mod:`aggregators.renyi_gradient`; both columns are checked against finite differences of the
aggregate in ``tests/aggregators/test_renyi_joint_curvature.py``). The Fisher information of the
items' categorical model, ``F = mean_n Σ_y q_ny J_ny J_nyᵀ``, is the generalised Gauss-Newton model of
the Hessian of the mean negative log-likelihood. Measured at the per-agent optima of four families
(400 × 8 × 6, session 27) it is 3-4 % from the finite-difference Hessian in the Frobenius norm and
keeps its smallest eigenvalues within a factor 1.5-3.5; the empirical Fisher was 3-22 % off. The
problem is badly conditioned (Hessian eigenvalues from 2e-5 to 6 at those optima: at small γ the
aggregate depends on ``w_i`` and ``γ_i`` mostly through ``w_i/γ_i``), which is what a curvature
model is for: :func:`solvers.methods.box_newton.box_newton` uses ``F`` (BFGS-corrected).

The solve is scaled by ``D^{-1/2}``, ``D = diag(q)`` (as :mod:`aggregators.renyi_curvature_kernels`):
``H̃ = D^{-1/2} H D^{-1/2}`` has eigenvalues in ``[min γ, 1]``, and ``X = H̃^{-1} D^{-1/2} M`` gives
``Σ_y q_y J_y J_yᵀ = Xᵀ X`` directly. Cost per item with ``p`` columns: the tilted agents (the
agents the columns need, ``K`` exponentials each), then either the dense ``H̃`` (``K² a``, ``a`` agents
of positive weight) and its solve (``K³/3 + K² p``), or Woodbury through ``a × a`` (``K a² + 2 K a p``;
taken when cheaper: thousands of classes, few agents of positive weight), and the product ``K p²``:
batched LAPACK and one BLAS product per chunk of items. At thousands of classes the model averages
over fewer items (:func:`model_items`): session 28 measured the dense way filling 9 GB at 2,000 × 2 ×
4,096 in its first model.
"""

from __future__ import annotations

import numpy as np

from solvers.errors import InputError

from .renyi_fixed_point import mixture_weights

__all__ = ["joint_fisher", "joint_hessian", "model_items", "fisher_item_flops", "InGamma"]

JOINT_CHUNK = 64
"""At most this many items per batched solve and BLAS product of :func:`joint_fisher`."""

JOINT_CHUNK_BYTES = 1 << 27
"""A chunk's working set (its largest arrays together) stays under this many bytes: at ``A K`` or
``K²`` of millions a chunk is one item (64 items of a dense 4,096 × 4,096 ``H̃`` were 8.6 GB)."""


def fisher_item_flops(K: int, a: int, p: int) -> tuple[float, float]:
    """Multiply-adds per item of the two ways of :func:`joint_fisher` to ``X = H̃⁻¹ M̃``
    (``a`` agents of positive weight, ``p`` columns), ``(dense, woodbury)``: the dense ``H̃``
    (``K² a``), its solve (``K³/3 + K² p``); or ``H̃ = Δ + U Uᵀ`` by Woodbury (the ``a × a`` capacitance
    ``K a²``, its solve ``a³/3 + a² p``, the two products ``2 K a p``). Both then pay ``K p²`` for ``XᵀX``."""
    dense = K * K * a + K**3 / 3 + K * K * p + K * p * p
    woodbury = K * a * a + a**3 / 3 + a * a * p + 2 * K * a * p + K * p * p
    return float(dense), float(woodbury)


def joint_fisher(
    La: np.ndarray,
    log_q: np.ndarray,
    w: np.ndarray,
    gamma: np.ndarray,
    w_cols: np.ndarray,
    t_cols: np.ndarray,
    *,
    items: np.ndarray | None = None,
    c: np.ndarray | None = None,
    chunk: int = JOINT_CHUNK,
    method: str = "auto",
) -> np.ndarray:
    """``F`` over the columns ``[w_j for j in w_cols] + [t_j for j in t_cols]`` (square, that size).

    ``La`` (n, A, K) annealed, normalised log-probabilities; ``log_q`` (n, K) the solved aggregate at
    ``(w, gamma)``; ``w`` (A,) on the simplex; ``gamma`` (A,). ``items``: the rows to average over
    (default all); ``c``: their weights (default equal); the result is the ``c``-weighted mean.
    A ``t_cols`` entry may be a list of agents (a shared γ: one column, the sum of theirs): pass
    ``t_cols`` as a 2-D boolean array ``(m, A)`` then, one row a column.

    ``method``: ``"dense"`` forms and solves the ``K × K`` matrix ``H̃``; ``"woodbury"`` solves with
    ``H̃ = Δ + U Uᵀ`` (``Δ = diag(Σ_i w'_i γ_i Q_i / q)``, ``≥ min γ``; ``U``'s columns
    ``√(w'_i (1-γ_i)) Q_i / √q``, one an agent of positive weight) through the ``a × a`` capacitance
    ``I + Uᵀ Δ⁻¹ U``; ``"auto"`` takes the one of fewer operations (:func:`fisher_item_flops`): Woodbury
    when the agents of positive weight are fewer than about ``K/2``. Only the agents the columns or the
    aggregate need are tilted.
    """
    La = np.asarray(La)
    n, A, K = La.shape
    items = np.arange(n) if items is None else np.asarray(items, dtype=np.int64)
    c = np.ones(items.size) if c is None else np.asarray(c, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    gamma = np.asarray(gamma, dtype=np.float64)
    w_cols = np.asarray(w_cols, dtype=np.int64)
    t_sets = np.asarray(t_cols)
    if t_sets.ndim == 1:
        sel = np.zeros((t_sets.size, A), dtype=bool)
        sel[np.arange(t_sets.size), t_sets.astype(np.int64)] = True
        t_sets = sel
    t_agents = np.flatnonzero(t_sets.any(axis=0))
    comb = t_sets[:, t_agents].astype(np.float64)  # (columns, agents used by some t column)
    wp = mixture_weights(w, gamma)
    S = float(np.sum(w / gamma))
    act = np.flatnonzero(wp > 0)
    need = np.union1d(np.union1d(act, w_cols), t_agents)  # the agents tilted, sorted
    ia, iw, it_ = (np.searchsorted(need, v) for v in (act, w_cols, t_agents))
    g_n, wp_n = gamma[need], wp[need]
    a, p = act.size, w_cols.size + t_sets.shape[0]
    dense_flops, wood_flops = fisher_item_flops(K, a, p)
    if method == "auto":
        method = "woodbury" if wood_flops < dense_flops else "dense"
    if method not in ("dense", "woodbury"):
        raise InputError("method", f"must be 'auto', 'dense' or 'woodbury'; got {method!r}")
    per_item = 8 * (5 * need.size * K + 3 * K * p + (K * K if method == "dense" else 2 * a * (a + p)))
    chunk = int(max(1, min(chunk, JOINT_CHUNK_BYTES // max(per_item, 1))))
    F = np.zeros((p, p))
    diag = np.arange(K)
    root_v = np.sqrt(wp[act] * (1.0 - gamma[act]))
    for s in range(0, items.size, chunk):
        itm = items[s : s + chunk]
        L = La[itm][:, need] if need.size < A else La[itm]  # (m, agents needed, K)
        r = np.asarray(log_q[itm], dtype=np.float64)
        q = np.exp(r)
        iq = 1.0 / np.sqrt(np.maximum(q, 1e-300))
        X = g_n[None, :, None] * L + (1.0 - g_n)[None, :, None] * r[:, None, :]
        X -= X.max(axis=2, keepdims=True)
        np.exp(X, out=X)
        X /= X.sum(axis=2, keepdims=True)
        Q = X  # the tilted agents Q_i
        Qa = Q[:, ia]
        V = root_v[None, :, None] * Qa * iq[:, None, :]  # (m, a, K): U's columns, one a row
        delta = np.einsum("a,mak->mk", wp[act] * gamma[act], Qa) * (iq * iq)
        dQ = Q - q[:, None, :]
        Mw = dQ[:, iw] / (gamma[w_cols] * S)[None, :, None]
        Qt = Q[:, it_]
        d = L[:, it_] - r[:, None, :]
        per = (wp_n * g_n)[it_][None, :, None] * Qt * (d - np.sum(Qt * d, axis=2, keepdims=True))
        per -= wp_n[it_][None, :, None] * dQ[:, it_]
        Mt = np.einsum("ca,mak->mck", comb, per)
        Mtr = (np.concatenate([Mw, Mt], axis=1) * iq[:, None, :]).transpose(0, 2, 1)  # (m, K, p)
        if method == "dense":
            Ht = np.matmul(V.transpose(0, 2, 1), V)
            Ht[:, diag, diag] += delta
            Xs = np.linalg.solve(Ht, Mtr)  # (m, K, p)
        else:
            Vd = V / delta[:, None, :]
            C = np.matmul(Vd, V.transpose(0, 2, 1))
            C[:, np.arange(a), np.arange(a)] += 1.0
            Y = np.linalg.solve(C, np.matmul(Vd, Mtr))  # (m, a, p)
            Xs = (Mtr - np.matmul(V.transpose(0, 2, 1), Y)) / delta[:, :, None]
        Z = (Xs * np.sqrt(c[s : s + chunk])[:, None, None]).reshape(-1, p)
        F += Z.T @ Z
    F /= c.sum()
    return 0.5 * (F + F.T)


JOINT_HESSIAN_ITEMS = 2000
"""At most this many items (a fixed random sample) average the Fisher model of :func:`joint_hessian`:
a model, so a sample serves (the gradient stays exact); the weights' Newton samples as many."""

JOINT_MODEL_FLOPS = 2e10
"""And at most as many as cost this many multiply-adds (:func:`fisher_item_flops`, the cheaper way, plus
the tilt), but never fewer than :data:`JOINT_MODEL_MIN_ITEMS`: at 4,096 classes and hundreds of free
columns one item's model costs more than a pass over hundreds of items."""

JOINT_MODEL_MIN_ITEMS = 16


def model_items(n: int, K: int, n_agents: int, a: int, p: int) -> int:
    """How many items :func:`joint_hessian` averages its model over: ``n`` up to
    :data:`JOINT_HESSIAN_ITEMS`, fewer where an item's model is dear (:data:`JOINT_MODEL_FLOPS`)."""
    per = min(fisher_item_flops(K, a, p)) + 10.0 * n_agents * K
    affordable = max(JOINT_MODEL_MIN_ITEMS, int(JOINT_MODEL_FLOPS // per))
    return int(min(n, JOINT_HESSIAN_ITEMS, affordable))


def joint_hessian(prob, x: np.ndarray, free: np.ndarray | None = None) -> np.ndarray:
    """The Fisher model of the Hessian of ``prob`` (a :class:`aggregators.renyi_gradient.RenyiProblem`
    with γ learnt, shared or per agent, and λ fixed) at ``x = [w, log γ]``, ``(dim, dim)``.

    Only the rows and columns of ``free`` (default all) and of the agents of positive weight are
    formed; the others are zero. The mean negative log-likelihood's Hessian in ``w`` and ``log γ``:
    ``F`` of :func:`joint_fisher` over at most :data:`JOINT_HESSIAN_ITEMS` items (fewer where an
    item's model is dear: :func:`model_items`)."""
    A = prob.n_agents
    x = np.asarray(x, dtype=np.float64)
    free = np.ones(prob.dim, dtype=bool) if free is None else np.asarray(free, dtype=bool)
    w, gamma, _ = prob.unpack(x)
    w = w / w.sum()
    support = w > 0
    w_cols = np.flatnonzero(free[:A] | support)
    if prob.learn_gamma == "shared":
        t_sets = support[None, :] if free[A] else np.zeros((0, A), dtype=bool)
        t_idx = np.array([A] if free[A] else [], dtype=np.int64)
    else:
        t_agents = np.flatnonzero(free[A : 2 * A] & support)
        t_sets, t_idx = t_agents, A + t_agents
    n = prob.n_terms
    n_model = model_items(
        n,
        prob.L.shape[2],
        int(np.union1d(w_cols, np.flatnonzero(support)).size),
        int(support.sum()),
        w_cols.size + t_idx.size,
    )
    if n > n_model:
        items = np.sort(np.random.default_rng(0).choice(n, n_model, replace=False))
    else:
        items = np.arange(n)
    c = None if prob.sample_weight is None else prob.sample_weight[items]
    F = joint_fisher(prob.L, prob.solved_log_q(x), w, gamma, w_cols, t_sets, items=items, c=c)
    out = np.zeros((prob.dim, prob.dim))
    cols = np.concatenate([w_cols, t_idx])
    out[np.ix_(cols, cols)] = F
    return out


class InGamma:
    """A :class:`aggregators.renyi_gradient.RenyiProblem` with γ learnt, in the variable ``[w, γ]``
    instead of ``[w, log γ]`` (γ in ``exp(LOG_GAMMA_BOUNDS)``), for Newton's method.

    In ``t = log γ`` the objective's curvature has the term ``γ ∂f/∂γ = ∂f/∂t`` on the ``t`` diagonal,
    which no Gauss-Newton model holds and which dominates it at small γ (the Fisher's ``t`` block is
    ``O(γ²)``, that term ``O(γ)``): from the shared fit's γ = 1e-4 the model's first steps were a
    thousand times too long. In ``γ`` the Fisher ``diag(1/γ) F diag(1/γ)`` misses only what it misses
    in the weights. Measured on the joint stage from the same start (session 27): gaussian-logit
    1,000 × 269 × 64, 177 → 101 evaluations, 29.7 → 17.6 s, a lower objective; 30-51 against 58-81
    evaluations on three families at 800 × 12 × 8.
    """

    def __init__(self, inner) -> None:
        from .renyi_gradient import LOG_GAMMA_BOUNDS

        if inner.n_gamma == 0 or inner.n_lam:
            raise InputError("problem", "InGamma needs γ learnt and λ fixed")
        self.inner = inner
        self.dim = inner.dim
        self.n_terms = inner.n_terms
        self._g = slice(inner.n_agents, inner.n_agents + inner.n_gamma)
        self._bounds = tuple(np.exp(b) for b in LOG_GAMMA_BOUNDS)

    def rest_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        n = self.inner.n_gamma
        return np.full(n, self._bounds[0]), np.full(n, self._bounds[1])

    def from_log(self, x: np.ndarray) -> np.ndarray:
        """``[w, log γ]`` → ``[w, γ]``."""
        x = np.array(x, dtype=np.float64)
        x[self._g] = np.exp(x[self._g])
        return x

    def to_log(self, x: np.ndarray) -> np.ndarray:
        """``[w, γ]`` → ``[w, log γ]``."""
        x = np.array(x, dtype=np.float64)
        x[self._g] = np.log(x[self._g])
        return x

    def value(self, x: np.ndarray) -> float:
        return self.inner.value(self.to_log(x))

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        f, g = self.inner.value_and_grad(self.to_log(x))
        g = np.array(g, dtype=np.float64)
        g[self._g] /= np.asarray(x, dtype=np.float64)[self._g]
        return f, g

    def grad(self, x: np.ndarray) -> np.ndarray:
        return self.value_and_grad(x)[1]

    def x0(self) -> np.ndarray:
        return self.from_log(self.inner.x0())

    def hessian(self, x: np.ndarray, *, free: np.ndarray | None = None) -> np.ndarray:
        """The Fisher of :func:`joint_hessian` in ``[w, γ]``: ``S F S``, ``S = diag(1, 1/γ)``."""
        s = np.ones(self.dim)
        s[self._g] = 1.0 / np.asarray(x, dtype=np.float64)[self._g]
        return joint_hessian(self.inner, self.to_log(x), free) * s[:, None] * s[None, :]
