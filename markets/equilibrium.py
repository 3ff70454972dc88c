"""Market equilibrium prices for any mix of agents, vectorised over items (seed 000, section 2.8.1.2).

At equilibrium (Eq. 2.27-2.29) prices sum to one, each agent spends exactly its wealth and the
market clears: ``sum_i r_ik = c_k`` (with total wealth one). Methods:

``"closed_form"``
    Table 2.4: all-logarithmic markets give the wealth-weighted linear pool; all-exponential markets
    give the unweighted log pool (geometric mean), whatever the wealth.
``"newton"``
    Any mix of isoelastic (own ``eta_i``), logarithmic and exponential agents. Newton's method on
    the normalised log-prices, maximising the concave potential
    ``Phi(c) = -sum_iso W_i D_{1/eta_i}(P_i || c) - sum_exp KL(c || P_i)`` whose gradient is the excess
    spending; exact Hessian, Armijo line search on ``Phi`` with a mirror-gradient fall-back when the
    Hessian is indefinite, so every iteration increases ``Phi`` and the iteration converges to the
    unique equilibrium (``Phi`` is strictly concave on the simplex). Stops when the relative
    clearing error ``max_k |sum_i r_ik - c_k| / c_k`` is at most ``tol`` (default ``1e-10``).
``"newton_cg"``
    The same safeguarded Newton with a matrix-free direction: the Hessian is a diagonal plus A
    rank-one terms, so conjugate gradients on the scaled system need only products, O(K A) each,
    and no K x K matrix (:mod:`markets.kernels.newton_cg`). For many goods: the dense direction
    costs O(K^2 A + K^3) per step (3 s for 50 items at K = 512, no answer in 100 s at K = 2,048).
    Without exponential agents its right-hand side is logarithmic (``T_k log(T_k / (Wsum c_k))``,
    the excess spending to second order), so a good priced far below its demand moves by its
    log-mispricing in one step rather than by at most ``eta`` per step.
``"fixed_point"``
    The seed's method (Storkey et al. 2012): ``c <- sum_i r_i(c)``, i.e. alternating minimisation of
    ``KL(c || sum_i r_i)``; isoelastic/log agents only. Linear rate about ``1 - min_i 1/eta_i``.
``"anderson"``
    The same update, Anderson-accelerated (:mod:`markets.kernels.anderson`): the least-squares
    combination of the last five steps; one pass plus O(K) per step, 8-25 passes where the plain
    iteration takes 25-550 (eta 2-30), safeguarded by the plain step. Isoelastic/log agents only.
``"gram"``
    Markets of isoelastic agents all with ``eta = 2`` only: the equilibrium is the symmetric
    scaling ``s * (G s) = (sum_i W_i) W`` of the agents' A x A Gram matrix ``G = P^(1/2) P^(1/2)^T``
    (:mod:`markets.kernels.gram`), solved by Newton in the agents' space (O(A^3) a step, no pass over
    the goods), then one pass measures the clearing residual by the same rule. Clears to ~1e-15.
``"tatonnement"``
    For utilities known only through ``U'`` and its inverse (Eq. 2.31): price adjustment
    ``log c <- log c + t (sum_i r_i - c)/c`` with a step halved whenever the clearing error does not
    decrease. No convergence guarantee is claimed for arbitrary utilities; ``converged`` says.
``"auto"``
    closed form when one exists; tâtonnement for generic utilities; otherwise, by shape
    (:func:`auto_newton`, measured in ``benchmarks/results/core-at-scale-markets.md``):

    - ``"gram"`` for ``eta = 2`` markets (every agent isoelastic with ``eta = 2``) of at most
      :func:`gram_max_agents` agents: the Gram matrix costs ``K A^2 / 2`` and each Newton step
      ``A^3 / 3``, so it wins while A is small against K (measured on two families, K 2-4,096, A 2-64:
      ``benchmarks/results/session35.md``);
    - ``"anderson"`` (the seed's fixed point, Anderson-accelerated) when there are at least
      ``FP_MIN_AGENTS = 500`` agents (or 100 agents and 256 goods), all isoelastic or log with
      ``1/2 <= 1/eta_i <= 1``: the plain iteration contracts by ``1 - min 1/eta_i <= 1/2`` per pass
      (about 30 passes to 1e-10), Anderson needs 8-16 passes of the same cost, and with many agents
      Newton's products cost as much (Newton-CG measured 1.06-1.24x the plain fixed point at
      eta = 2, A = 100, K >= 256; session 7's grid in
      ``benchmarks/results/core-at-scale-markets-session7.md``);
    - else ``"newton_cg"`` from ``CG_MIN_GOODS = 16`` goods (session 45, 432 cells of four utility mixes,
      three belief families, K 12-63, A 2-1,000: Newton-CG / dense Newton 0.25-1.06 at K = 16 and 24,
      0.22-0.83 at K = 32, 0.10-0.41 at K = 43-63; at K = 12 0.57-1.09; until then 64);
    - else ``"newton"`` (the dense direction, tuned at K = 10: chord steps reuse its factor).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from aggregators.validation import DEFAULT_FLOOR, Kind, Predictions, _check_floor
from solvers.errors import InputError
from solvers.special import logsumexp

from . import kernels, workspace
from .agents import Agents, floor_beliefs, market_of, prepare_beliefs
from .kernels.check import check_items
from .utilities import EXPONENTIAL, ISOELASTIC

METHODS = ("auto", "closed_form", "newton", "newton_cg", "fixed_point", "anderson", "gram", "tatonnement")
CODES = {"newton": 0, "fixed_point": 1, "newton_cg": 2, "anderson": 3, "gram": 4}
"""The kernels' method codes (:func:`markets.kernels.solve_item`)."""


@dataclass
class EquilibriumResult:
    """Equilibrium prices and the checks made at the solution (one entry per item).

    ``clearing_error``: ``max_k |sum_i r_ik - c_k| / c_k``; ``budget_error``: ``max_i |sum_k r_ik -
    W_i|``; ``price_sum_error``: ``|sum_k c_k - 1|``; ``n_negative_positions``: number of negative
    investments (short sales by exponential agents; reported, never clipped).
    """

    log_prices: np.ndarray
    method: str
    n_iter: np.ndarray
    converged: np.ndarray
    clearing_error: np.ndarray
    budget_error: np.ndarray
    price_sum_error: np.ndarray
    n_negative_positions: np.ndarray
    tol: float
    seconds: float
    n_floored: int = 0

    @property
    def prices(self) -> np.ndarray:
        return np.exp(self.log_prices)

    @property
    def all_converged(self) -> bool:
        return bool(np.all(self.converged))

    def summary(self) -> dict[str, Any]:
        """Worst-case checks over items, JSON-ready."""
        return {
            "method": self.method,
            "n_items": int(self.log_prices.shape[0]),
            "all_converged": self.all_converged,
            "max_iter_used": int(self.n_iter.max(initial=0)),
            "mean_iter": float(self.n_iter.mean()) if self.n_iter.size else 0.0,
            "max_clearing_error": float(np.nanmax(self.clearing_error, initial=0.0)),
            "max_budget_error": float(np.nanmax(self.budget_error, initial=0.0)),
            "max_price_sum_error": float(np.max(self.price_sum_error, initial=0.0)),
            "n_negative_positions": int(self.n_negative_positions.sum()),
            "n_floored": int(self.n_floored),
            "tol": self.tol,
            "seconds": self.seconds,
        }


def investments(log_probs: np.ndarray, log_prices: np.ndarray, agents: Agents) -> np.ndarray:
    """Optimal investments ``r`` (n, A, K) of every agent at the given prices (Table 2.4, Eq. 2.31).

    ``log_probs`` must already be validated normalised log-beliefs (n, A, K); ``log_prices`` (n, K).
    """
    n, A, K = log_probs.shape
    r = np.empty((n, A, K))
    for i, u in enumerate(agents.utilities):
        r[:, i, :] = u.investment(log_probs[:, i, :], log_prices, np.full(n, agents.wealth[i]))
    return r


def check_equilibrium(
    log_probs: np.ndarray,
    log_prices: np.ndarray,
    agents: Agents,
    chunk: int = 8192,
    *,
    floor: float | None = None,
):
    """The three equilibrium conditions, per item: (clearing_error, budget_error, price_sum_error,
    n_negative_positions), from every agent's investment (Table 2.4, Eq. 2.31) at the prices.

    ``log_probs``: validated (normalised) log-beliefs; with ``floor``, the conditions are those of the
    beliefs floored by :func:`markets.agents.floor_beliefs`'s rule (what the solvers saw).

    Markets of exponential, logarithmic and isoelastic agents are checked by the compiled pass
    :func:`markets.kernels.check.check_items` (the same closed forms, items in parallel, each agent's row
    floored in cache); markets with a generic utility by :func:`investments` in chunks of ``chunk`` items
    to bound memory."""
    if floor is not None and agents.has_generic:
        log_probs = floor_beliefs(Predictions(np.ascontiguousarray(log_probs)), floor).log_probs
    if not agents.has_generic:
        n = log_probs.shape[0]
        clear = np.empty(n)
        budget = np.empty(n)
        nneg = np.empty(n, np.int64)
        U = np.ascontiguousarray(log_prices, dtype=np.float64)
        check_items(
            np.ascontiguousarray(log_probs, dtype=np.float64),
            U,
            agents.kind,
            agents.inv_eta,
            np.ascontiguousarray(agents.wealth, dtype=np.float64),
            0.0 if floor is None else _check_floor(floor, log_probs.shape[2]),
            clear,
            budget,
            nneg,
        )
        return clear, budget, np.abs(np.exp(U).sum(axis=1) - 1.0), nneg
    clear, budget, nneg = conditions_by_investments(log_probs, log_prices, agents, chunk)
    return clear, budget, np.abs(np.exp(log_prices).sum(axis=1) - 1.0), nneg


def conditions_by_investments(log_probs: np.ndarray, log_prices: np.ndarray, agents: Agents, chunk: int = 8192):
    """``(clearing_error, budget_error, n_negative_positions)`` per item from the NumPy
    :func:`investments` (every utility, generic ones included), in chunks of ``chunk`` items: the
    check of markets with generic utilities, and the reference of the compiled check (and, before
    session 43, the check of every market: ``benchmarks/bench_market_default_call.py`` times it)."""
    n = log_probs.shape[0]
    clear = np.empty(n)
    budget = np.empty(n)
    nneg = np.empty(n, np.int64)
    wsum = agents.wealth.sum()
    for s in range(0, n, chunk):
        sl = slice(s, min(n, s + chunk))
        r = investments(log_probs[sl], log_prices[sl], agents)
        c = np.exp(log_prices[sl])
        clear[sl] = np.max(np.abs(r.sum(axis=1) - wsum * c) / c, axis=1)
        budget[sl] = np.max(np.abs(r.sum(axis=2) - agents.wealth[None, :]), axis=1)
        nneg[sl] = (r < 0).sum(axis=(1, 2))
    return clear, budget, nneg


def _closed_form(lp: np.ndarray, agents: Agents, floor: float, nfl: np.ndarray) -> np.ndarray | None:
    """Table 2.4's closed forms, or ``None``; ``floor`` > 0 (all-logarithmic markets only, see
    :func:`fused_floor`): ``lp`` is not floored yet, the compiled pass floors each item in cache."""
    if np.all((agents.kind == ISOELASTIC) & (agents.inv_eta == 1.0)):  # log sum_i W_i P_i, compiled
        n, A, K = lp.shape
        U = np.empty((n, K))
        nt = numba.get_num_threads()
        mem = workspace.arena(kernels.start_arena_size(n, A, K, floor, nt))
        kernels.start_prices(
            np.ascontiguousarray(lp), agents.kind, agents.inv_eta, agents.wealth, U, floor, nfl, mem, nt
        )
        return U
    if np.all(agents.kind == EXPONENTIAL):
        z = lp.mean(axis=1)
        return z - logsumexp(z, axis=1, keepdims=True)
    return None


LOG_PRICE_MIN = -708.0
"""Below this normalised log-price an iterative solver's price is subnormal or zero in double precision."""


def _unresolved_prices(lp: np.ndarray, log_c: np.ndarray, conv: np.ndarray) -> np.ndarray:
    """``conv`` with items whose prices the iterative solvers cannot resolve marked unconverged, and a
    warning. The solvers work with prices ``c = exp(u)``; below ``exp(-708)`` the vectorised exp
    flushes to zero, below ``exp(-745)`` every exp does, and spending there is zero or a few bits.
    Such prices arise only without a floor, from beliefs below about ``exp(-700)`` (session 44: one
    good believed at ``exp(-720)`` by every agent gave Newton "converged" with a checked clearing error
    of 1.0; at ``exp(-760)`` the fixed point returned a price of zero, "converged", clearing error NaN,
    and Newton stopped after one step). Two cases are flagged: a finite log-price below
    :data:`LOG_PRICE_MIN`, and a zero price (``-inf``) for a good some agent believes in. The
    closed forms (all-logarithmic, all-exponential) work in log space and are not flagged."""
    deep = np.isfinite(log_c) & (log_c < LOG_PRICE_MIN)
    bad = deep.any(axis=1)
    zero = np.isneginf(log_c)
    if zero.any():
        rows = np.flatnonzero(zero.any(axis=1))
        believed = (lp[rows].max(axis=1) > -np.inf) & zero[rows]
        bad[rows] |= believed.any(axis=1)
    if not bad.any():
        return conv
    import warnings

    warnings.warn(
        f"{int(bad.sum())} item(s) have prices below exp({LOG_PRICE_MIN:g}) (subnormal or zero in double "
        "precision), which the iterative solvers cannot resolve; they are marked unconverged. Beliefs "
        "below about exp(-700) without a floor cause this: use the default floor, or give goods nobody "
        "believes in a belief of exactly zero.",
        RuntimeWarning,
        stacklevel=3,
    )
    return conv & ~bad


def _tatonnement(lp: np.ndarray, agents: Agents, tol: float, max_iter: int):
    n, A, K = lp.shape
    w = agents.wealth
    u = logsumexp(lp + np.log(np.abs(w) + 1.0 / A)[None, :, None], axis=1)
    u -= logsumexp(u, axis=1, keepdims=True)

    def resid(u):
        r = investments(lp, u, agents)
        c = np.exp(u)
        g = r.sum(axis=1) - w.sum() * c
        return g, np.max(np.abs(g) / c, axis=1)

    g, res = resid(u)
    t = np.ones(n)
    iters = np.zeros(n, np.int64)
    for _ in range(max_iter):
        active = res > tol
        if not active.any():
            break
        iters += active
        step = np.where(active[:, None], t[:, None] * g / np.exp(u), 0.0)
        un = u + step
        un -= logsumexp(un, axis=1, keepdims=True)
        gn, resn = resid(un)
        better = active & (resn < res)
        u = np.where(better[:, None], un, u)
        g = np.where(better[:, None], gn, g)
        res = np.where(better, resn, res)
        t = np.where(better, np.minimum(1.0, 2 * t), np.where(active, 0.5 * t, t))
    return u, iters, res <= tol


FIXED_POINTS = ("fixed_point", "anderson")
"""The methods that iterate the seed's update (isoelastic and log agents only)."""


def default_max_iter(method: str) -> int:
    """Iteration cap when none is given: 100 Newton steps, 100,000 passes of a fixed point."""
    return 100_000 if method in FIXED_POINTS else 100


CG_MIN_GOODS = 16
"""``method="auto"`` takes the matrix-free Newton-CG direction from this many goods on (64 until session 45,
measured when the CG path had neither Woodbury directions nor the frozen-normaliser steps:
``benchmarks/results/session45.md``)."""
FP_MIN_AGENTS = 500
"""... and the Anderson-accelerated fixed point from this many agents (or from 100 agents at 256 goods
or more) when it contracts fast (every agent isoelastic or log with ``1/2 <= 1/eta_i <= 1``: rate
``1 - min 1/eta_i <= 1/2``)."""


GRAM_MAX_AGENTS = 32
"""``method="auto"`` takes ``"gram"`` for ``eta = 2`` markets of at most this many agents (64 from
1,024 goods on) and at most a quarter as many agents as goods (two agents always): see
:func:`gram_max_agents`."""


def gram_max_agents(n_goods: int) -> int:
    """The most agents for which ``method="auto"`` takes ``"gram"`` at ``n_goods`` goods (an ``eta = 2``
    market). Measured (session 35, one thread, logit and Dirichlet families): against the best method
    in the space of prices ``gram`` wins at A <= K/4 up to A = 32 (K = 64, A = 16: 0.027 against
    0.055 s; K = 256, A = 32: 0.019 against 0.030 s) and at A = 64 from K = 1,024 (K = 4,096: 0.015
    against 0.022 s); it loses where A approaches K (K = 64, A = 32: 0.043 against 0.034 s; K = 16,
    A = 32: 0.135 against 0.045 s), its A^3 steps then costing more than the passes they save."""
    cap = 2 * GRAM_MAX_AGENTS if n_goods >= 1024 else GRAM_MAX_AGENTS
    return min(cap, max(2, n_goods // 4))


def is_eta2(agents: Agents) -> bool:
    """True if every agent is isoelastic with ``eta = 2`` (the markets ``"gram"`` solves)."""
    return bool(
        not agents.has_exponential
        and not agents.has_generic
        and np.all(agents.kind == ISOELASTIC)
        and np.all(agents.inv_eta == 0.5)
    )


def check_method_applies(method: str, agents: Agents) -> None:
    """Raise :class:`InputError` on ``method`` if the market is not one it can solve (``"gram"``: eta = 2
    markets; the fixed points: isoelastic and log agents)."""
    if method == "gram" and not is_eta2(agents):
        raise InputError("method", "'gram' is for markets whose agents are all isoelastic with eta = 2")
    if method in FIXED_POINTS and agents.has_exponential:
        raise InputError("method", "the fixed point (Storkey et al.) is for isoelastic and log agents only")


def auto_newton(n_goods: int, agents: Agents | None = None) -> str:
    """The method ``method="auto"`` uses when no closed form applies (module docstring; measured in
    ``benchmarks/results/core-at-scale-markets.md`` and ``session35.md``)."""
    if agents is not None and agents.n_agents <= gram_max_agents(n_goods) and is_eta2(agents):
        return "gram"
    many = agents is not None and (agents.n_agents >= FP_MIN_AGENTS or (agents.n_agents >= 100 and n_goods >= 256))
    if agents is not None and many and not agents.has_exponential:
        g = agents.inv_eta
        if bool(np.all(agents.kind == ISOELASTIC)) and g.min() >= 0.5 and g.max() <= 1.0:
            return "anderson"
    return "newton_cg" if n_goods >= CG_MIN_GOODS else "newton"


def _one_order_inv_eta(agents: Agents, wealth: np.ndarray) -> float | None:
    """The common ``1/eta`` if every agent is isoelastic with one ``eta``, has positive wealth and
    ``1/eta`` is not within 0.1 of the log agent's 1 (the kernels' lean path); else ``None``."""
    g = agents.inv_eta
    if agents.has_exponential or agents.has_generic or not np.all(agents.kind == ISOELASTIC):
        return None
    if not (np.all(g == g[0]) and abs(1.0 - g[0]) >= 0.1 and np.all(wealth > 0)):
        return None
    return float(g[0])


def fused_floor(method: str, agents: Agents) -> bool:
    """True when the compiled drivers floor the beliefs themselves, each item in cache inside their
    parallel loop (:func:`solve_prices`, the all-logarithmic closed form): every market and method
    but tâtonnement (generic utilities) and the all-exponential closed form (NumPy)."""
    if method == "tatonnement" or agents.has_generic:
        return False
    return method not in ("auto", "closed_form") or not bool(np.all(agents.kind == EXPONENTIAL))


def solve_prices(
    lp: np.ndarray,
    agents: Agents,
    tol: float,
    max_iter: int,
    code: int,
    U: np.ndarray,
    warm: bool,
    labels: np.ndarray | None = None,
    payouts: np.ndarray | None = None,
    wealth: np.ndarray | None = None,
    floor: float | None = None,
    nfl: np.ndarray | None = None,
):
    """Newton (``code`` 0) or the fixed point (1) for every item at ``agents.wealth``. One-order
    isoelastic markets go through :func:`kernels.solve_iso_block` (``P^(1/eta)`` per item inside
    the parallel loop, the same for both methods); items it cannot take, and all other markets, go through the
    general kernels. With ``labels``, also fills ``payouts`` (n, A): each agent's share of the
    realised price of the label (batch market training). ``wealth`` overrides ``agents.wealth``
    unvalidated (training: wealth may reach zero). With ``floor`` (not with ``labels``; see
    :func:`fused_floor`), ``lp`` holds validated beliefs not yet floored: the parallel loop floors
    each item in cache and ``nfl`` (n,) receives the per-item counts.

    A warm start ``U`` is first raised to the lower bound of isoelastic markets' prices where it lies
    below it (:mod:`markets.kernels.start_bound`: a start 400 log-units low cost Newton 200-400 steps,
    and one below ``-745`` is a price of zero that no method recovered from; session 44)."""
    n, A, K = lp.shape
    W = agents.wealth if wealth is None else wealth
    if warm:  # a start far below the equilibrium costs Newton steps linear in the distance
        kernels.lift_starts(np.ascontiguousarray(lp), agents.kind, agents.inv_eta, W, U)
    g = _one_order_inv_eta(agents, W)
    pay = labels is not None
    fused = floor is not None and nfl is not None
    fl = float(floor) if fused else 0.0  # type: ignore[arg-type]
    if fused and pay:
        raise ValueError("the fused floor is for equilibria only, not for training's payouts")
    no_count = np.zeros(0, np.int64)
    common = (agents.kind, agents.inv_eta, W, tol, max_iter, code)  # every kernel's market and method
    nt = numba.get_num_threads()  # the drivers split the items into one chunk per thread
    if g is None:
        L = np.ascontiguousarray(lp)
        if pay:
            iters, conv, res = kernels.batch_payouts(L, labels, *common, U, warm, payouts)
            return iters, conv, res, np.zeros(n, np.int64)
        mem = workspace.arena(kernels.items_arena_size(n, A, K, fl, nt))
        return kernels.solve_items(L, *common, U, warm, fl, nfl if fused else no_count, mem, nt)
    iters = np.zeros(n, np.int64)
    conv = np.zeros(n, bool)
    res = np.zeros(n)
    ok = np.zeros(n, bool)
    kernels.solve_iso_block(
        np.ascontiguousarray(lp),
        g,
        W,
        tol,
        max_iter,
        code,
        U,
        warm,
        ok,
        iters,
        conv,
        res,
        labels if pay else np.zeros(0, np.int64),
        payouts if pay else np.zeros((0, A)),
        fl,
        nfl if fused else no_count,
        workspace.arena(kernels.iso_arena_size(n, A, K, code, fl, nt)),
        nt,
    )
    nneg = np.zeros(n, np.int64)
    rest = np.flatnonzero(~ok)
    if rest.size:  # e.g. a good nobody believes in: the general path decides (and reports) it
        Ur, lp_r = U[rest], np.ascontiguousarray(lp[rest])
        if pay:
            assert payouts is not None and labels is not None  # pay: labels were given, and payouts
            Pr = np.empty((rest.size, A))
            it_r, conv_r, res_r = kernels.batch_payouts(lp_r, labels[rest], *common, Ur, warm, Pr)
            payouts[rest] = Pr
        else:  # the floor counts are in nfl already
            mem = workspace.arena(kernels.items_arena_size(rest.size, A, K, fl, nt))
            it_r, conv_r, res_r, nneg_r = kernels.solve_items(
                lp_r, *common, Ur, warm, fl, np.zeros(rest.size, np.int64), mem, nt
            )
            nneg[rest] = nneg_r
        U[rest], iters[rest], conv[rest], res[rest] = Ur, it_r, conv_r, res_r
    return iters, conv, res, nneg


def equilibrium(
    beliefs: Any,
    utilities: Any = "log",
    wealth: Any = None,
    *,
    method: str = "auto",
    tol: float = 1e-10,
    max_iter: int | None = None,
    kind: Kind = "log_probs",
    floor: float | None = DEFAULT_FLOOR,
    check: bool = True,
    start: np.ndarray | None = None,
) -> EquilibriumResult:
    """Equilibrium prices of the market of ``utilities`` with ``wealth`` for each item of ``beliefs``.

    Parameters
    ----------
    beliefs : (n_items, n_agents, n_classes) log-probabilities (or probabilities with
        ``kind="probs"``), validated by :func:`aggregators.validation.as_log_probs`.
    utilities : an :class:`~markets.agents.Agents` (then ``wealth`` overrides its wealth if given),
        a utility spec for all agents (``"log"``, ``"exp"``, a number ``eta``) or one per agent.
    wealth : (n_agents,) positive; normalised to sum to one. Default: equal wealth.
    method : one of :data:`METHODS`.
    tol : relative clearing tolerance ``max_k |sum_i r_ik - c_k| / c_k``. Where exponential agents sell
        short, relative to the largest gross volume of a good ``G = max_k sum_i |r_ik| / c_k`` where that
        exceeds one: ``converged`` means a clearing error at most ``tol max(1, G)``
        (:func:`markets.kernels.equilibrium.at_rounding_floor`; without a floor, short positions of
        hundreds of units put the rounding floor of the clearing error above ``1e-10``).
    max_iter : iteration cap (default 100 for Newton, 100,000 for the fixed point and tâtonnement);
        0 evaluates the start only.
    floor : probability floor (see :func:`markets.agents.prepare_beliefs`).
    check : recompute and report the equilibrium conditions from the investments.
    start : optional (n_items, n_classes) starting log-prices (warm start).
    """
    if method not in METHODS:
        raise InputError("method", f"must be one of {METHODS}; got {method!r}")
    if not (np.isfinite(tol) and tol > 0):
        raise InputError("tol", f"must be a positive number; got {tol!r}")
    if max_iter is not None and (
        isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 0
    ):
        raise InputError("max_iter", f"must be a non-negative integer (0: evaluate the start only); got {max_iter!r}")
    beliefs, agents = market_of(beliefs, utilities, wealth, kind)
    fused = floor is not None and fused_floor(method, agents)
    preds = prepare_beliefs(beliefs, agents, kind=kind, floor=floor, defer_floor=fused)
    lp = preds.log_probs
    nfl = np.zeros(lp.shape[0], np.int64)
    n, A, K = lp.shape
    t0 = time.perf_counter()

    fl = float(floor) if fused else 0.0  # type: ignore[arg-type]
    closed = _closed_form(lp, agents, fl, nfl) if method in ("auto", "closed_form") else None  # computed once
    if method == "auto":
        if closed is not None:
            method = "closed_form"
        elif agents.has_generic:
            method = "tatonnement"
        else:
            method = auto_newton(K, agents)

    if method == "closed_form":
        log_c = closed
        if log_c is None:
            raise InputError(
                "method", "no closed form for this market (only all-logarithmic or all-exponential markets)"
            )
        iters = np.zeros(n, np.int64)
        conv = np.ones(n, bool)
        res = None
    elif method == "tatonnement":
        log_c, iters, conv = _tatonnement(lp, agents, tol, 100_000 if max_iter is None else max_iter)
        res = None
    else:
        if agents.has_generic:
            raise InputError("method", f"{method!r} needs exponential/log/isoelastic agents; use 'tatonnement'")
        check_method_applies(method, agents)
        code = CODES[method]
        mi = default_max_iter(method) if max_iter is None else max_iter
        U = np.zeros((n, K)) if start is None else np.array(start, dtype=np.float64, copy=True)
        if U.shape != (n, K):
            raise InputError("start", f"must have shape ({n}, {K}); got {U.shape}")
        if start is not None:  # prices are normalised log-prices: a shifted start would not clear
            U -= logsumexp(U, axis=1, keepdims=True)
        iters, conv, res, nneg = solve_prices(
            lp, agents, float(tol), int(mi), code, U, start is not None, floor=floor if fused else None, nfl=nfl
        )
        log_c = U
    if method != "closed_form":
        conv = _unresolved_prices(lp, log_c, np.asarray(conv, bool))
    n_floored = int(nfl.sum()) if fused else preds.n_floored
    seconds = time.perf_counter() - t0
    if check:  # with a fused floor: the conditions at the floored beliefs the kernel saw
        clear, budget, psum, nneg = check_equilibrium(lp, log_c, agents, floor=floor if fused else None)
    else:
        clear = res if res is not None else np.full(n, np.nan)
        budget = np.full(n, np.nan)
        psum = np.abs(np.exp(log_c).sum(axis=1) - 1.0)
        nneg = np.zeros(n, np.int64) if res is None else nneg
    return EquilibriumResult(
        log_prices=log_c,
        method=method,
        n_iter=np.asarray(iters),
        converged=np.asarray(conv, bool),
        clearing_error=clear,
        budget_error=budget,
        price_sum_error=psum,
        n_negative_positions=np.asarray(nneg),
        tol=float(tol),
        seconds=seconds,
        n_floored=n_floored,
    )
