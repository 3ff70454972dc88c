"""Algorithm 2.2 of seed 000: agents whose data carry a sample-selection bias (Task 1, section 2.7.1).

One *data set* fixes a target ``P*`` over ``K`` classes, a validation sample from ``P*`` and one bias
function ``f_i(y) ~ U[0, 1]`` per agent. For an annealing power ``β``, agent ``i`` reads points drawn
from ``P*`` and keeps each one with probability ``f_i(y)^β / max_y f_i(y)^β`` (rejecting with
``1 - f*``); its belief ``P_i`` is the empirical distribution of its first ``n_accept`` kept points.
``β = 0`` means no bias; ``β = 4`` very different agents.

Decisions where the seed is silent or ambiguous (all are parameters):

- **N(32, 64/7): 64/7 is the standard deviation.** With K = 64 classes, ``sd = K/7 ≈ 9.14`` puts
  the ends of the class range at ±3.5 sd, so the target fills the classes; a variance of 64/7
  (sd ≈ 3.0) would leave two thirds of them with probability < 1e-6. The MATLAB convention of the
  period (``normpdf(x, mu, sigma)``) also takes the sd.
- **Discretisation:** classes are ``0..K-1``; ``P*(k) ∝ Φ((k + ½ - μ)/σ) - Φ((k - ½ - μ)/σ)``
  (the Gaussian mass of the unit bin around k), renormalised over the K bins.
- **The stream each agent reads.** Read literally, Algorithm 2.2 has one base set D that every
  agent scans from its start (``shared_base=True``, the default). Then at ``β = 0`` nothing is
  rejected and all agents hold *the same* 10,000 points: every pool is identical and the KL-vs-γ
  curve is flat. ``shared_base=False`` gives each agent its own i.i.d. stream from ``P*``, so that at
  β = 0 the agents are independent unbiased estimates. Either way the streams and the rejection
  draws are fixed per data set and *reused for every β* (common random numbers), so the data "does
  not dramatically change across tests of different biases" (section 2.7.1).
- **Length of the streams:** each agent's stream is extended until it has ``n_accept`` kept points
  at every β of the sweep (the largest β needs the most).
- **Zero counts.** A class an agent never saw has empirical probability 0. The beliefs are returned
  as they are (``-inf`` log-probability) unless ``smoothing > 0`` adds that pseudo-count to every
  class; log and Rényi pools then apply the library's floor policy
  (:func:`aggregators.validation.apply_floor`, default ``1e-9``), and report ``n_floored_``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import norm

from solvers.errors import InputError

__all__ = [
    "BiasedAgentsTask",
    "CountedRenyiProblem",
    "DEFAULT_BETAS",
    "discretised_normal",
    "fit_counted_pool",
    "make_biased_agents_task",
]

DEFAULT_BETAS: np.ndarray = np.arange(0.0, 4.0 + 1e-9, 0.5)
"""β = 0, 0.5, ..., 4 (seed 000, Algorithm 2.2)."""


def discretised_normal(n_classes: int = 64, mean: float = 32.0, sd: float = 64 / 7) -> np.ndarray:
    """``P*(k) ∝ Φ((k+½-μ)/σ) - Φ((k-½-μ)/σ)`` for ``k = 0..n_classes-1``, renormalised."""
    if n_classes < 2:
        raise InputError("n_classes", f"must be >= 2; got {n_classes}")
    if not sd > 0:
        raise InputError("sd", f"must be > 0; got {sd}")
    k = np.arange(n_classes)
    p = norm.cdf((k + 0.5 - mean) / sd) - norm.cdf((k - 0.5 - mean) / sd)
    if not p.sum() > 0:
        raise InputError("sd", "mean/sd put no mass on the classes 0..n_classes-1")
    return p / p.sum()


@dataclass(frozen=True)
class BiasedAgentsTask:
    """One data set of Algorithm 2.2. Build it with :func:`make_biased_agents_task`.

    Attributes
    ----------
    target : ``(K,)`` the target ``P*``.
    validation : ``(n_validation,)`` labels drawn i.i.d. from ``P*``.
    bias : ``(n_agents, K)`` the rejection functions ``f_i(y) ~ U[0, 1]``.
    streams : ``(n_agents, n_stream)`` the points each agent reads, in order (identical rows when
        ``shared_base``).
    uniforms : ``(n_agents, n_stream)`` the rejection draws (point n is kept by agent i at β when
        ``uniforms[i, n] < f_i(y_n)^β / max f_i^β``).
    n_accept : kept points per agent.
    smoothing : pseudo-count added to every class of every agent's counts.
    """

    target: np.ndarray
    validation: np.ndarray
    bias: np.ndarray
    streams: np.ndarray
    uniforms: np.ndarray
    n_accept: int
    smoothing: float = 0.0
    betas: np.ndarray = field(default_factory=lambda: DEFAULT_BETAS.copy())

    @property
    def n_agents(self) -> int:
        return self.bias.shape[0]

    @property
    def n_classes(self) -> int:
        return self.target.shape[0]

    def accept_probs(self, beta: float) -> np.ndarray:
        """``f*_i(y) = f_i(y)^β / max_y f_i(y)^β``, shape ``(n_agents, K)``."""
        with np.errstate(divide="ignore"):
            logf = np.log(self.bias)
        lf = beta * logf
        lf = lf - lf.max(axis=1, keepdims=True)
        return np.exp(lf) if beta > 0 else np.ones_like(self.bias)

    def counts(self, beta: float) -> np.ndarray:
        """``(n_agents, K)`` class counts of each agent's first ``n_accept`` kept points at ``β``."""
        acc = self.accept_probs(beta)
        out = np.zeros((self.n_agents, self.n_classes), dtype=np.int64)
        for i in range(self.n_agents):
            kept = self.streams[i][self.uniforms[i] < acc[i, self.streams[i]]]
            if kept.size < self.n_accept:
                raise RuntimeError(f"agent {i} kept only {kept.size} < {self.n_accept} points at beta={beta}")
            out[i] = np.bincount(kept[: self.n_accept], minlength=self.n_classes)
        return out

    def agent_probs(self, beta: float) -> np.ndarray:
        """``(n_agents, K)`` beliefs ``P_i``: empirical distributions (plus ``smoothing``), may hold zeros."""
        c = self.counts(beta).astype(np.float64) + self.smoothing
        return c / c.sum(axis=1, keepdims=True)

    def log_probs(self, beta: float) -> np.ndarray:
        """The agents' beliefs as the library's ``(n_items, n_agents, n_classes)`` log-probabilities,
        repeated for each validation item (the task is unconditional: every item has the same beliefs).
        ``-inf`` marks a class an agent never saw."""
        with np.errstate(divide="ignore"):
            lp = np.log(self.agent_probs(beta))
        return np.broadcast_to(lp, (self.validation.size, *lp.shape))


def make_biased_agents_task(
    seed: int | np.random.Generator | None = 0,
    *,
    n_agents: int = 10,
    n_classes: int = 64,
    n_validation: int = 100,
    mean: float = 32.0,
    sd: float = 64 / 7,
    n_accept: int = 10_000,
    betas: Sequence[float] = tuple(DEFAULT_BETAS),
    shared_base: bool = True,
    smoothing: float = 0.0,
) -> BiasedAgentsTask:
    """Draw one data set of Algorithm 2.2 (defaults: the seed's parameters; see module docstring).

    Parameters
    ----------
    seed : seed or ``numpy.random.Generator``.
    n_agents, n_classes, n_validation : ``N_A = 10``, ``K = 64``, ``N_Va = 100``.
    mean, sd : the target is a discretised ``N(mean, sd²)``; ``sd = 64/7`` by default.
    n_accept : each agent's belief is the empirical distribution of its first ``n_accept`` kept points.
    betas : the annealing powers the streams must be long enough for (default 0, 0.5, ..., 4).
    shared_base : every agent scans the same base set (the literal Algorithm 2.2; default) or its own.
    smoothing : pseudo-count added to every class (0: the plain empirical distribution of the seed).
    """
    for name, v in (
        ("n_agents", n_agents),
        ("n_classes", n_classes),
        ("n_validation", n_validation),
        ("n_accept", n_accept),
    ):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise InputError(name, f"must be a positive integer; got {v!r}")
    if n_classes < 2:
        raise InputError("n_classes", "must be >= 2")
    if not smoothing >= 0:
        raise InputError("smoothing", f"must be >= 0; got {smoothing}")
    betas_arr = np.asarray(betas, dtype=np.float64)
    if betas_arr.ndim != 1 or betas_arr.size == 0 or (betas_arr < 0).any() or not np.isfinite(betas_arr).all():
        raise InputError("betas", "must be a non-empty list of finite numbers >= 0")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    target = discretised_normal(n_classes, mean, sd)
    validation = rng.choice(n_classes, size=n_validation, p=target)
    bias = rng.uniform(0.0, 1.0, size=(n_agents, n_classes))
    # stream length: enough for the hardest β with a wide margin (expected acceptance rate, 5 sigma)
    tmp = BiasedAgentsTask(
        target,
        validation,
        bias,
        np.zeros((n_agents, 0), np.int64),
        np.zeros((n_agents, 0)),
        n_accept,
        smoothing,
        betas_arr,
    )
    rate = min(float((tmp.accept_probs(b) @ target).min()) for b in betas_arr)
    n_stream = int(np.ceil((n_accept + 5 * np.sqrt(n_accept / rate) + 50) / rate))
    while True:
        if shared_base:
            streams = np.broadcast_to(rng.choice(n_classes, size=n_stream, p=target), (n_agents, n_stream)).copy()
        else:
            streams = rng.choice(n_classes, size=(n_agents, n_stream), p=target)
        uniforms = rng.uniform(0.0, 1.0, size=(n_agents, n_stream))
        task = BiasedAgentsTask(target, validation, bias, streams, uniforms, n_accept, smoothing, betas_arr)
        try:
            for b in betas_arr:
                task.counts(b)
        except RuntimeError:  # vanishingly rare: draw longer streams
            n_stream *= 2
            continue
        return task


# -- fitting pool weights on the unconditional task --------------------------------------------------
class CountedRenyiProblem:
    """Rényi weight learning when every validation item has the same beliefs (as in Task 1).

    The validation log-likelihood of a pool ``P_w`` is ``Σ_n log P_w(y_n) = Σ_k c_k log P_w(k)`` with
    ``c_k`` the label counts, so one fixed point per evaluation suffices instead of one per item; the
    estimator :class:`aggregators.renyi_pool.RenyiPool` fitted on the repeated items optimises the
    same objective (``tests/aggregators/test_task1.py`` checks that they agree).

    Minimises ``f(w) = -(1/N) Σ_k c_k log P_w(k)`` over the simplex (solver protocol of
    :mod:`solvers.problem`, ``constraint="simplex"``), for one shared γ:

    - ``0 < γ <= 1``: ``P_w`` is the weighted Rényi aggregate (Eq. 2.6-2.8), computed by
      :func:`aggregators.renyi.renyi_aggregate`. The gradient is exact, by implicit differentiation
      of the stationarity condition ``Σ_i w_i (Q_i - P) = 0`` (with ``Q_i ∝ P_i^γ P^{1-γ}``) in the
      coordinates ``P = softmax(u)``: ``∂f/∂w_i = (1/N) (Q_i - P)·v`` with ``H v = c - N P`` and
      ``H = -γ diag P - (1-γ) Σ_i w_i Q_i Q_iᵀ + P Pᵀ`` (singular along the constant vector, which is
      removed by solving with ``H - 11ᵀ``). At ``γ = 1`` this is the linear pool's gradient
      ``-(1/N) Σ_k c_k P_i(k) / P(k)``.
    - ``γ = 0``: the log pool (Eq. 2.5), ``P ∝ exp(Σ_i w_i log P_i)``, the limit γ → 0 (Proposition 2).

    ``log_beliefs`` must be finite (floored) normalised log-probabilities ``(n_agents, n_classes)``.
    """

    constraint = "simplex"
    n_terms = 1

    def __init__(self, log_beliefs: np.ndarray, counts: np.ndarray, gamma: float, *, tol: float = 1e-12) -> None:
        L = np.asarray(log_beliefs, dtype=np.float64)
        if L.ndim != 2 or not np.isfinite(L).all():
            raise InputError("log_beliefs", "must be finite (n_agents, n_classes) log-probabilities (apply the floor)")
        c = np.asarray(counts, dtype=np.float64)
        if c.shape != (L.shape[1],) or (c < 0).any() or c.sum() <= 0:
            raise InputError("counts", "must be non-negative with a positive sum, one per class")
        g = float(gamma)
        if not 0.0 <= g <= 1.0:
            raise InputError("gamma", f"must lie in [0, 1]; got {gamma!r}")
        self.L, self.c, self.gamma, self.tol = L, c, g, tol
        self.N = float(c.sum())
        self.dim = L.shape[0]
        self._init: np.ndarray | None = None

    def x0(self) -> np.ndarray:
        return np.full(self.dim, 1.0 / self.dim)

    def project(self, x: np.ndarray) -> np.ndarray:
        from solvers.simplex import project_simplex

        return project_simplex(np.asarray(x, dtype=np.float64))

    def aggregate(self, w: np.ndarray) -> np.ndarray:
        """``log P_w`` (n_classes,), normalised."""
        w = np.clip(np.asarray(w, dtype=np.float64), 0.0, None)
        w = w / w.sum()
        if self.gamma == 0.0:
            lq = w @ self.L
            return lq - np.logaddexp.reduce(lq)
        from .renyi import renyi_aggregate

        init = None if self._init is None else self._init[None, :]
        lq = renyi_aggregate(self.L[None], w, self.gamma, floor=None, tol=self.tol, init=init)[0]
        self._init = lq
        return lq

    def value(self, x: np.ndarray) -> float:
        return float(-(self.c @ self.aggregate(x)) / self.N)

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        w = np.clip(np.asarray(x, dtype=np.float64), 0.0, None)
        w = w / w.sum()
        lq = self.aggregate(w)
        P = np.exp(lq)
        f = float(-(self.c @ lq) / self.N)
        g = self.gamma
        if g == 0.0:
            grad = -(self.L @ self.c - self.N * (self.L @ P))
        elif g == 1.0:
            grad = -(np.exp(self.L) @ (self.c / P))
        else:
            lQi = g * self.L + (1.0 - g) * lq[None, :]
            lQi -= np.logaddexp.reduce(lQi, axis=1, keepdims=True)
            Qi = np.exp(lQi)
            H = -g * np.diag(P) - (1.0 - g) * (Qi.T * w) @ Qi + np.outer(P, P) - 1.0
            v = np.linalg.solve(H, self.c - self.N * P)
            grad = (Qi - P[None, :]) @ v
        return f, grad / self.N

    def grad(self, x: np.ndarray) -> np.ndarray:
        return self.value_and_grad(x)[1]


def fit_counted_pool(
    log_beliefs: np.ndarray,
    counts: np.ndarray,
    gamma: float,
    *,
    x0: np.ndarray | None = None,
    tol: float = 1e-9,
    max_iter: int = 500,
) -> tuple[np.ndarray, np.ndarray, object]:
    """Fit the weights of a Rényi pool (γ in (0, 1]) or the log pool (γ = 0) on label ``counts``.

    Runs :func:`solvers.minimize` (spectral projected gradient on the simplex) on a
    :class:`CountedRenyiProblem`. Returns ``(weights, log_aggregate, SolveResult)``.
    """
    from solvers import minimize

    prob = CountedRenyiProblem(log_beliefs, counts, gamma)
    res = minimize(prob, "projected_gradient", x0=x0, tol=tol, max_iter=max_iter)
    w = np.clip(res.x, 0.0, None)
    w = w / w.sum()
    return w, prob.aggregate(w), res
