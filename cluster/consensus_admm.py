"""Consensus ADMM across workers (seed 002 ch. V: Alg. 9, Alg. 10, eq. 150-152, Prop. 4).

Problem (eq. 131): ``min sum_i f_i(x_i)`` s.t. ``x_p = y_n`` on every edge ``(p, n)`` of a bipartite
worker graph :class:`~cluster.graphs.WorkerGraph` (left nodes hold ``x``, right nodes ``y``). With
the seed's minus-sign Lagrangian (eq. 133) the local problems of Alg. 9 (eq. 134) are

    left p:  x_p = argmin f_p(x) - sum_n <lambda_pn, x> + beta/2 sum_n ||x - y_n||^2
    right n: y_n = argmin f_n(y) + sum_p <lambda_pn, y> + beta/2 sum_p ||x_p - y||^2
    edge:    lambda_pn <- lambda_pn - beta (x_p - y_n)

so each node solves ``argmin f(z) + (rho/2)||z||^2 - <c, z>`` with ``rho = beta * degree``
(:meth:`Shard.solve`). Residuals (L2366): ``r = A x + B y`` (the stacked ``x_p - y_n``) and
``s = beta A^T B (y^{k+1} - y^k)``, whose block ``p`` is ``-beta sum_{n ~ p} (y_n^{k+1} - y_n^k)``.

Penalty rules (``beta=``): a number (fixed); ``"adaptive"`` (Alg. 10: ``beta0 = L2 /
(Lambda_max(B^T B) Lambda_max(B B^T))`` eq. 150, both the largest right degree by Prop. 4, and
``beta <- beta sqrt(q)`` when ``q >= q_th`` or ``q <= 1/q_th`` with the printed ``q = ||r|| /
||A^T B (y^{k+1} - y^k)||``, note 002 §7.7); ``"he"`` (He et al. / Boyd et al.'s residual balancing
from ``beta0 = 1``: double when ``||r|| > 10 ||s||``, halve when ``||s|| > 10 ||r||``); ``"sqrt"``
(eq. 152, ``sqrt(mu1 L2)``). :func:`beta_grid` runs a grid of fixed penalties. ``L2``/``mu2`` are the
smoothness/strong convexity of ``theta2 = sum_{n in right} f_n`` (the max/min over right nodes),
``mu1`` that of ``theta1`` over the left nodes.

Execution: the rounds are bulk-synchronous (BSP). One round is three phases, each a task per node:
left solves, right solves (which update their copy of the edge multipliers and the partial
``||r||^2``), left absorbs the new ``y`` (updating its copy of the multipliers, partial
``||A^T B dy||^2``). Only D-vectors cross edges: ``x_p`` left to right and ``y_n`` right to left, 2D
floats per edge and round, since both ends keep ``lambda_pn`` (the seed's design sends 3D, note 002
§5). The driver sees two scalars per node and round (the all-reduce Alg. 10 needs).

With ``client=None`` the node tasks run in this process (the reference path); with a
``distributed.Client`` (or a scheduler address, see :func:`cluster.connect.connect`) each node's
shard is scattered once to one Dask worker (round-robin over the sorted worker addresses), its state
lives in that worker process, every task of the node is pinned there (``workers=``, no stealing),
and the vectors between nodes are task results that Dask moves worker to worker. Both paths run
the same functions in the same order, so their rounds agree to rounding.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from solvers.errors import InputError
from solvers.monitor import Run
from solvers.progress import ProgressFn
from solvers.result import SolveResult

from .connect import connected, worker_addresses
from .graphs import WorkerGraph

__all__ = ["Shard", "WorkerLost", "consensus_admm", "beta_grid", "BETA_RULES"]

BETA_RULES = ("adaptive", "he", "sqrt")
LOSSES = ("squares", "logistic")


@dataclass
class Shard:
    """One worker's data and local function ``f(z) = loss(S z, l) + (ridge/2) ||z||^2``.

    ``loss="squares"``: ``||S z - l||^2`` (eq. 151); ``loss="logistic"``: ``sum log(1 + exp(-l_i
    s_i^T z))`` with labels ``l_i = ±1``. ``S`` may have zero rows: with ``ridge = 0`` that is a
    worker without data (``f ≡ 0``, note 002 §7.9).
    """

    S: np.ndarray
    l: np.ndarray
    loss: str = "squares"
    ridge: float = 0.0
    _factors: dict[Any, Any] = field(default_factory=dict, repr=False)  # Cholesky by rho, and 2 S^T l

    @property
    def n_samples(self) -> int:
        return int(self.S.shape[0])

    def constants(self) -> tuple[float, float]:
        """``(mu, L)``: strong convexity and smoothness of ``f`` (exact for squares; for the logistic
        loss ``mu = ridge`` and ``L = ||S||^2 / 4 + ridge``)."""
        G = self.S.T @ self.S
        if self.loss == "squares":
            ev = np.linalg.eigvalsh(2.0 * G) if self.n_samples else np.zeros(self.S.shape[1])
            return float(max(ev[0], 0.0) + self.ridge), float(ev[-1] + self.ridge)
        top = float(np.linalg.eigvalsh(G)[-1]) if self.n_samples else 0.0
        return float(self.ridge), top / 4.0 + float(self.ridge)

    def value(self, z: np.ndarray) -> float:
        m = self.S @ z
        if self.loss == "squares":
            f = float(np.sum((m - self.l) ** 2))
        else:
            f = float(np.sum(np.logaddexp(0.0, -self.l * m)))
        return f + 0.5 * self.ridge * float(z @ z)

    def solve(self, c: np.ndarray, rho: float, z0: np.ndarray) -> np.ndarray:
        """``argmin_z f(z) + (rho/2) ||z||^2 - <c, z>``: a cached Cholesky solve for squares
        (``(2 S^T S + (ridge + rho) I) z = 2 S^T l + c``), Newton from ``z0`` for logistic."""
        D = self.S.shape[1]
        if self.loss == "squares":
            fac = self._factors.get(rho)
            if fac is None:
                if len(self._factors) > 4:  # an adaptive penalty changes rho: keep a few
                    self._factors = {k: v for k, v in self._factors.items() if k == "rhs"}
                fac = self._factors[rho] = cho_factor(2.0 * self.S.T @ self.S + (self.ridge + rho) * np.eye(D))
            if "rhs" not in self._factors:
                self._factors["rhs"] = 2.0 * self.S.T @ self.l
            return cho_solve(fac, self._factors["rhs"] + c)
        z = z0.copy()
        for _ in range(100):
            m = self.S @ z
            sig = 0.5 * (1.0 - np.tanh(0.5 * self.l * m))  # sigma(-l m), stably
            g = -self.S.T @ (self.l * sig) + (self.ridge + rho) * z - c
            if np.linalg.norm(g) <= 1e-13 * (1.0 + np.linalg.norm(c) + rho * np.linalg.norm(z)):
                break
            w = sig * (1.0 - sig)
            H = self.S.T @ (w[:, None] * self.S) + (self.ridge + rho) * np.eye(D)
            z = z - np.linalg.solve(H, g)
        return z


def _as_shard(s: Any, i: int, D: int | None, loss: str) -> Shard:
    field_ = f"shards[{i}]"
    if isinstance(s, Shard):
        S, l, ridge, loss = s.S, s.l, s.ridge, s.loss
    else:
        try:
            S, l = s
        except (TypeError, ValueError) as exc:
            raise InputError(field_, "must be a Shard or an (S, l) pair") from exc
        ridge = 0.0
    S = np.ascontiguousarray(S, dtype=np.float64)
    l = np.ascontiguousarray(l, dtype=np.float64).ravel()
    if S.ndim != 2 or l.shape != (S.shape[0],):
        raise InputError(field_, f"S must be 2-D (samples, D) and l (samples,); got {S.shape} and {l.shape}")
    if D is not None and S.shape[1] != D:
        raise InputError(field_, f"has D = {S.shape[1]} features; shard 0 has {D}")
    if not (np.isfinite(S).all() and np.isfinite(l).all()):
        raise InputError(field_, "must be finite")
    if loss not in LOSSES:
        raise InputError("loss", f"must be one of {list(LOSSES)}; got {loss!r}")
    if loss == "logistic" and l.size and not np.isin(l, (-1.0, 1.0)).all():
        raise InputError(field_, "logistic labels must be -1 or +1")
    if not (np.isfinite(ridge) and ridge >= 0):
        raise InputError(f"{field_}.ridge", f"must be >= 0; got {ridge!r}")
    return Shard(S, l, loss, float(ridge))


# -- the node tasks (run in the process that holds the node's state) -----------------------------


@dataclass
class _Node:
    shard: Shard
    degree: int
    z: np.ndarray  # x_p (left) or y_n (right)
    lam: np.ndarray  # (degree, D): this end's copy of the multipliers of its edges, in edge order
    nbr: np.ndarray  # (degree, D): the neighbours' last vectors (right: x's; left: y's)


_NODES: dict[tuple[str, int], _Node] = {}
"""Node states of the runs in this process, by ``(run id, node)``: on a Dask worker, the nodes
placed there; in-process, all of them. Dropped at the end of a run."""


def _init_node(run: str, node: int, shard: Shard, degree: int) -> tuple[float, float, int]:
    D = shard.S.shape[1]
    z = np.zeros(D)
    _NODES[(run, node)] = _Node(shard, degree, z, np.zeros((degree, D)), np.zeros((degree, D)))
    mu, L = shard.constants()
    return mu, L, shard.n_samples


def _left_solve(run: str, node: int, beta: float) -> np.ndarray:
    """Alg. 9 step 1 at left node ``p``: ``c = sum_n lambda_pn + beta sum_n y_n``, ``rho = beta deg``."""
    st = _NODES[(run, node)]
    c = st.lam.sum(axis=0) + beta * st.nbr.sum(axis=0)
    st.z = st.shard.solve(c, beta * st.degree, st.z)
    return st.z


def _right_solve(run: str, node: int, beta: float, *xs: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Alg. 9 steps 2-3 at right node ``n``: solve for ``y_n``, update ``lambda_pn`` on its edges.
    Returns ``(y_n, sum_p ||x_p - y_n||^2, f_n(y_n))``."""
    st = _NODES[(run, node)]
    st.nbr = np.array(xs).reshape(st.degree, -1)
    c = beta * st.nbr.sum(axis=0) - st.lam.sum(axis=0)
    st.z = st.shard.solve(c, beta * st.degree, st.z)
    diff = st.nbr - st.z
    st.lam -= beta * diff
    return st.z, float(np.sum(diff * diff)), st.shard.value(st.z)


def _left_absorb(run: str, node: int, beta: float, *ys: tuple[np.ndarray, float, float]) -> tuple[float, float]:
    """Left node ``p`` receives the new ``y_n``: its copy of ``lambda_pn``, and ``||sum_n dy_n||^2``
    (its block of ``A^T B (y^{k+1} - y^k)``). Returns that and ``f_p(x_p)``."""
    st = _NODES[(run, node)]
    y = np.array([t[0] for t in ys]).reshape(st.degree, -1)
    st.lam -= beta * (st.z - y)
    dy = (y - st.nbr).sum(axis=0)
    st.nbr = y
    return float(dy @ dy), st.shard.value(st.z)


def _node_vector(run: str, node: int) -> np.ndarray:
    return _NODES[(run, node)].z


def _node_state(run: str, node: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A copy of the node's state ``(z, lam, nbr)``: the checkpoint of a round."""
    st = _NODES[(run, node)]
    return st.z.copy(), st.lam.copy(), st.nbr.copy()


def _restore_node(run: str, node: int, shard: Shard, degree: int, state: tuple) -> None:
    """The node rebuilt from its shard and a checkpoint (:func:`_node_state`), under run id ``run``."""
    z, lam, nbr = (np.array(v) for v in state)
    _NODES[(run, node)] = _Node(shard, degree, z, lam, nbr)


def _drop_run(run: str) -> None:
    for key in [k for k in _NODES if k[0] == run]:
        del _NODES[key]


# -- where the node tasks run -------------------------------------------------------------------


class WorkerLost(RuntimeError):
    """A Dask worker holding node state left the cluster during a run: ``workers`` (their addresses)
    and ``nodes`` (the graph nodes whose shard, iterate and edge multipliers were lost with them)."""

    def __init__(self, workers: list[str], nodes: list[int]) -> None:
        self.workers, self.nodes = workers, nodes
        super().__init__(
            f"Dask worker(s) {', '.join(workers)} left the cluster during the run and took the state of "
            f"node(s) {nodes} with them; consensus ADMM keeps node state in the worker processes, so the "
            "run stops: run it again (it starts from the first round) on the workers that remain"
        )


class _InProcess:
    """The reference path: each node task is a plain call, in order."""

    def scatter(self, value: Any, node: int) -> Any:
        return value

    def submit(self, fn: Callable, node: int, *args: Any) -> Any:
        return fn(*args)

    def gather(self, items: list) -> list:
        return items

    def close(self, run: str) -> None:
        _drop_run(run)

    def place(self, n_nodes: int) -> None:
        pass


class _OnDask:
    """Node tasks on Dask workers: node ``i`` pinned to worker ``i mod n_workers`` (sorted addresses)."""

    poll = 1.0
    """Seconds between checks that the nodes' workers are still in the cluster while waiting."""

    def __init__(self, client: Any, n_nodes: int) -> None:
        self.client = client
        self.place(n_nodes)

    def place(self, n_nodes: int) -> None:
        """Nodes round-robin over the workers the cluster has now."""
        addrs = worker_addresses(self.client)
        self.where = [addrs[i % len(addrs)] for i in range(n_nodes)]

    def scatter(self, value: Any, node: int) -> Any:
        return self.client.scatter(value, workers=[self.where[node]], hash=False)

    def submit(self, fn: Callable, node: int, *args: Any) -> Any:
        return self.client.submit(fn, *args, workers=[self.where[node]], allow_other_workers=False, pure=False)

    def gather(self, items: list) -> list:
        """The results, watching the nodes' workers: a worker that left the cluster (its process died,
        or the nanny replaced it) took its nodes' state with it, so the run stops with
        :class:`WorkerLost` instead of waiting for tasks pinned to an address that is gone."""
        from distributed import wait

        while True:
            try:
                wait(items, timeout=self.poll)
                return self.client.gather(items)
            except TimeoutError:
                lost = sorted(set(self.where) - self._alive())
                if lost:
                    nodes = [i for i, w in enumerate(self.where) if w in lost]
                    raise WorkerLost(lost, nodes) from None

    def _alive(self) -> set[str]:
        return set(self.client.scheduler_info(n_workers=-1)["workers"])

    def close(self, run: str) -> None:
        alive = sorted(set(self.where) & self._alive())
        if alive:
            self.client.run(_drop_run, run, workers=alive)


# -- the driver ----------------------------------------------------------------------------------


def _check_beta(beta: Any) -> None:
    if isinstance(beta, str):
        if beta not in BETA_RULES:
            raise InputError("beta", f"must be a positive number or one of {list(BETA_RULES)}; got {beta!r}")
    elif not (isinstance(beta, (int, float, np.floating)) and np.isfinite(beta) and beta > 0):
        raise InputError("beta", f"must be a positive number or one of {list(BETA_RULES)}; got {beta!r}")


def _needs_data(side: Sequence[int], consts: list[tuple[float, float, int]], rule: str, what: str) -> None:
    """The penalty rules built on mu or L of one side need every node of that side strongly convex."""
    for v in side:
        mu, _, m = consts[v]
        if mu <= 0:
            why = (
                "has no data (f ≡ 0)"
                if m == 0
                else "has mu = 0 (too few samples to span R^D, or a logistic loss without ridge)"
            )
            raise InputError(
                f"shards[{v}]",
                f"worker {v} {why}, but beta={rule!r} needs {what}: f ≡ 0 gives mu = L = 0, so Thm 13's tau "
                "and beta0 of eq. 150 vanish; give it data, move it to the other side, or use a fixed beta",
                code="no_data",
            )


def _initial_beta(beta: Any, graph: WorkerGraph, consts: list[tuple[float, float, int]]) -> float:
    if not isinstance(beta, str):
        return float(beta)
    if beta == "he":
        return 1.0  # the experiments start He's rule at beta0 = 1 (L2464)
    L2 = max(consts[n][1] for n in graph.right)
    if beta == "adaptive":
        _needs_data(graph.right, consts, beta, "mu2 > 0 and L2 > 0 on the right side (eq. 150, Thm 13)")
        d = graph.max_right_degree()  # Prop. 4: Lambda_max(B^T B) = Lambda_max(B B^T) = max right degree
        return L2 / (d * d)
    _needs_data(graph.left, consts, beta, "mu1 > 0 on the left side (eq. 152)")
    _needs_data(graph.right, consts, beta, "L2 > 0 on the right side (eq. 152)")
    mu1 = min(consts[p][0] for p in graph.left)
    return float(np.sqrt(mu1 * L2))


def _next_beta(rule: Any, beta: float, r: float, aty: float, s: float, q_th: float) -> float:
    if rule == "adaptive":  # Alg. 10 as printed: q = ||r|| / ||A^T B dy||
        q = r / aty if aty > 0 else np.inf
        if np.isfinite(q) and q > 0 and (q >= q_th or q <= 1.0 / q_th):
            return beta * float(np.sqrt(q))
    elif rule == "he":  # Boyd et al. 2010 §3.4.1: mu = 10, tau = 2
        if r > 10.0 * s:
            return 2.0 * beta
        if s > 10.0 * r:
            return beta / 2.0
    return beta


def consensus_admm(
    graph: WorkerGraph,
    shards: Sequence[Any],
    *,
    beta: float | str = "adaptive",
    max_rounds: int = 100,
    tol: float = 0.0,
    q_th: float = 10.0,
    order: str = "left-first",
    loss: str = "squares",
    client: Any = None,
    timeout: float = 10.0,
    checkpoint: bool = False,
    progress: ProgressFn | None = None,
) -> SolveResult:
    """Alg. 9 on ``graph`` with ``shards[i]`` the data of worker ``i``; returns a :class:`SolveResult`.

    Parameters
    ----------
    graph : a checked bipartite worker graph (:mod:`cluster.graphs`).
    shards : one :class:`Shard` or ``(S, l)`` pair per node (``S`` of shape ``(samples, D)``).
    beta : a positive number, or ``"adaptive"`` (Alg. 10), ``"he"`` (residual balancing) or
        ``"sqrt"`` (eq. 152).
    max_rounds, tol : stop after ``max_rounds`` rounds or once ``||r|| <= tol`` and ``||s|| <= tol``.
    q_th : Alg. 10's threshold (the seed does not give its value).
    order : ``"left-first"`` (Alg. 9) or ``"right-first"`` (the other updating order, §5.6.5).
    loss : of the ``(S, l)`` pairs: ``"squares"`` or ``"logistic"``.
    client : ``None`` (in-process), a ``distributed.Client`` or a scheduler address.
    checkpoint : after every round, copy each node's state (its vector, its copy of its edges'
        multipliers, its neighbours' last vectors: ``(1 + 2 degree) D`` floats) to the driver; a
        worker lost during a round (:class:`WorkerLost`) then restarts that round on the workers that
        remain, every node restored from the last round's state, so the run ends as an uninterrupted
        one (``extra["restarts"]``: ``(round, lost workers)``). Without it a lost worker stops the run.

    ``x`` is the mean of the nodes' vectors, ``fun`` the sum of ``f_i`` at them; ``trace`` records
    per round the objective, ``r``, ``s`` and ``beta`` (``extra``: ``node_values``, ``r``, ``s``,
    ``beta``, ``round_seconds``, ``floats_per_round`` moved along edges).
    """
    if not isinstance(graph, WorkerGraph):
        raise InputError("graph", "must be a WorkerGraph (see cluster.graphs)")
    _check_beta(beta)
    if order not in ("left-first", "right-first"):
        raise InputError("order", f"must be 'left-first' or 'right-first'; got {order!r}")
    if not (isinstance(max_rounds, (int, np.integer)) and max_rounds >= 1):
        raise InputError("max_rounds", f"must be an integer >= 1; got {max_rounds!r}")
    if not q_th > 1:
        raise InputError("q_th", f"must be > 1; got {q_th!r}")
    if len(shards) != graph.n_nodes:
        raise InputError("shards", f"must have one shard per node ({graph.n_nodes}); got {len(shards)}")
    data: list[Shard] = []
    for i, s in enumerate(shards):
        data.append(_as_shard(s, i, data[0].S.shape[1] if data else None, loss))
    if order == "right-first":  # the same graph with its sides swapped (lambda changes sign, x and y do not)
        graph = WorkerGraph(graph.n_nodes, graph.right, graph.left, tuple((n, p) for p, n in graph.edges), graph.name)

    with connected(client, timeout=timeout) as c:
        ex: Any = _InProcess() if c is None else _OnDask(c, graph.n_nodes)
        return _rounds(ex, graph, data, beta, max_rounds, tol, q_th, progress, checkpoint)


def _rounds(
    ex: Any,
    graph: WorkerGraph,
    data: list[Shard],
    beta: Any,
    max_rounds: int,
    tol: float,
    q_th: float,
    progress: ProgressFn | None,
    checkpoint: bool = False,
) -> SolveResult:
    """The BSP rounds of Alg. 9 on the executor ``ex`` (in-process or Dask)."""
    run_id = uuid.uuid4().hex
    nb = {v: graph.neighbours(v) for v in range(graph.n_nodes)}
    saved: list = []
    restarts: list[tuple[int, list[str]]] = []
    try:
        shard_refs = [ex.scatter(d, i) for i, d in enumerate(data)]
        consts = ex.gather(
            [ex.submit(_init_node, i, run_id, i, shard_refs[i], len(nb[i])) for i in range(graph.n_nodes)]
        )
        b = _initial_beta(beta, graph, consts)
        mon = Run(f"consensus_admm[{beta}]", progress=progress)
        rs: list[float] = []
        ss: list[float] = []
        betas: list[float] = []
        secs: list[float] = []
        fun = np.inf
        converged = False
        if checkpoint:
            saved = ex.gather([ex.submit(_node_state, v, run_id, v) for v in range(graph.n_nodes)])
        k = 0
        while k < max_rounds:
            k += 1
            t0 = time.perf_counter()
            try:
                xs = {p: ex.submit(_left_solve, p, run_id, p, b) for p in graph.left}
                ys = {n: ex.submit(_right_solve, n, run_id, n, b, *[xs[p] for p in nb[n]]) for n in graph.right}
                absorbed = [ex.submit(_left_absorb, p, run_id, p, b, *[ys[n] for n in nb[p]]) for p in graph.left]
                right_out = ex.gather([ys[n] for n in graph.right])
                left_out = ex.gather(absorbed)
                if checkpoint:
                    state = ex.gather([ex.submit(_node_state, v, run_id, v) for v in range(graph.n_nodes)])
            except WorkerLost as lost:
                if not checkpoint:
                    raise
                restarts.append((k, lost.workers))
                ex.close(run_id)
                run_id = uuid.uuid4().hex  # every node rebuilt from the last round's state, on the workers left
                ex.place(graph.n_nodes)
                refs = [ex.scatter(d, i) for i, d in enumerate(data)]
                ex.gather([ex.submit(_restore_node, v, run_id, v, refs[v], len(nb[v]), saved[v]) for v in nb])
                k -= 1
                continue
            if checkpoint:
                saved = state
            secs.append(time.perf_counter() - t0)
            r = float(np.sqrt(sum(t[1] for t in right_out)))
            aty = float(np.sqrt(sum(t[0] for t in left_out)))
            s = b * aty
            fun = float(sum(t[2] for t in right_out) + sum(t[1] for t in left_out))
            rs.append(r)
            ss.append(s)
            betas.append(b)
            mon.passes = float(k)
            mon.record(fun, r=r, s=s, beta=b)
            if progress is not None:
                progress(k / max_rounds)
            if tol > 0 and r <= tol and s <= tol:
                converged = True
                break
            b = _next_beta(beta, b, r, aty, s, q_th)
        Z = np.array(ex.gather([ex.submit(_node_vector, v, run_id, v) for v in range(graph.n_nodes)]))
    finally:
        ex.close(run_id)
    D = Z.shape[1]
    message = f"||r||, ||s|| <= {tol:g}" if converged else f"{k} rounds"
    return mon.result(
        Z.mean(axis=0),
        fun,
        k,
        converged,
        message,
        node_values=Z,
        r=rs,
        s=ss,
        beta=betas,
        round_seconds=secs,
        floats_per_round=2 * D * graph.n_edges,
        restarts=restarts,
    )


def beta_grid(
    graph: WorkerGraph, shards: Sequence[Any], betas: Sequence[float], **options: Any
) -> tuple[float, list[SolveResult]]:
    """Fixed-beta runs over ``betas`` (§5.6.3 picks each topology's best of 1,000 candidates): returns
    the beta whose last round has the smallest ``max(||r||, ||s||)``, and every run."""
    if len(betas) == 0:
        raise InputError("betas", "must hold at least one penalty")
    runs = [consensus_admm(graph, shards, beta=float(b), **options) for b in betas]
    score = [max(res.extra["r"][-1], res.extra["s"][-1]) for res in runs]
    return float(betas[int(np.argmin(score))]), runs
