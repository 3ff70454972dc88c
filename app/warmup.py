"""Compile ahead of time what the service's first requests run (issue 13 §5, "the first call").

The numba kernels are compiled on their first call and cached on disk (``cache=True``) in
``NUMBA_CACHE_DIR`` (``make`` sets it to ``.numba_cache`` in the checkout; without it numba writes to
the ``__pycache__`` folders beside the sources, and where neither is writable it compiles again in
every new process). :func:`warm` calls every pool method's aggregate (log-probabilities and
probabilities), every learnt pool's fit and predict, and the market equilibrium with log and
isoelastic agents by every equilibrium method, on small arrays of the dtypes the routes pass (some
large enough to take the compiled validation pass and the parallel Rényi kernels), so
that:

- ``make install`` (``agora warmup``) leaves the cache warm: a new process then loads each kernel
  from disk instead of compiling it;
- ``agora serve`` runs it before it binds its port, so the first request of a started service
  never compiles (with a warm cache this takes the time of loading the kernels).

It lives in ``app/`` because what it warms is what the service's routes call; it only calls the
library.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import markets
from aggregators.registry import POOL_METHODS, aggregate, make_pool
from markets.equilibrium import CG_MIN_GOODS
from markets.equilibrium import METHODS as EQUILIBRIUM_METHODS

#: the learnt pools whose fit runs solvers (the others only aggregate)
LEARNT = ("linear", "log", "renyi", "bma", "power_bma", "topk")
#: the parameters a stateless aggregate needs for the methods that have no default
PARAMS: dict[str, dict[str, Any]] = {
    "topk": {"agents": [0, 1]},
    "bma": {"log_evidence": [-3.0, -2.0, -4.0]},
    "power_bma": {"log_evidence": [-3.0, -2.0, -4.0], "alpha": 0.5},
    "renyi": {"gamma": 0.5},
}
#: log agents (the linear pool) and isoelastic agents with a common and with mixed eta
UTILITIES: tuple[Any, ...] = ("log", 2.0, [0.5, 2.0, 10.0])
#: market training (the service's ``market_train`` jobs): isoelastic, mixed with log, and with exponential agents
TRAIN_UTILITIES: tuple[Any, ...] = (2.0, [2.0, 5.0, 1.0, 30.0], [2.0, "exp", 1.0, "exp"])


def _renyi_gradient(log_probs: np.ndarray) -> np.ndarray:
    """The Rényi weight gradient at a solved aggregate with every agent active: the adjoint's own pass
    over all of ``log_probs`` (a fit's gradient after its line search solved the aggregate)."""
    from aggregators.renyi_fixed_point import solve_fixed_point
    from aggregators.renyi_gradient import renyi_loglik_grad

    n, A, K = log_probs.shape
    w, gamma = np.full(A, 1.0 / A), np.full(A, 0.5)
    log_q = solve_fixed_point(log_probs, w, gamma).log_q
    return renyi_loglik_grad(log_probs, np.arange(n) % K, w, gamma, solved=log_q)[1]["w"]


def _log_curvature(log_probs: np.ndarray, labels: np.ndarray, dtype: Any) -> np.ndarray:
    """The log pool's Hessian at uniform weights with its chunk matrices in ``dtype``."""
    from solvers.problems.loglinear import ConditionalLogLinear

    problem = ConditionalLogLinear.from_log_probs(log_probs, labels)
    return problem.hessian(np.full(problem.dim, 1.0 / problem.dim), dtype=dtype)


def _renyi_curvature(log_probs: np.ndarray, dtype: Any, active: int = 3) -> np.ndarray:
    """The Rényi weights' curvature on ``log_probs`` (n, A, K) at ``active`` non-zero weights, in ``dtype``
    (fewer active agents than classes take its Woodbury branch, more its dense one with the Cholesky
    inverses of solvers.kernels.spd_inverse)."""
    from aggregators.renyi_fixed_point import solve_fixed_point
    from aggregators.renyi_weight_hessian import renyi_weight_curvature

    n, A, _ = log_probs.shape
    w = np.zeros(A)
    w[:active] = 1.0 / active
    gamma = np.full(A, 0.5)
    log_q = solve_fixed_point(log_probs, w, gamma).log_q
    labels = np.arange(n) % log_probs.shape[2]
    return renyi_weight_curvature(log_probs, labels, w, gamma, log_q, np.full(n, 1.0 / n), dtype=dtype, threads=1)


def _renyi_newton(log_probs: np.ndarray) -> np.ndarray:
    """The Rényi aggregate by Newton (not Anderson, which ``"auto"`` takes from 100 agents)."""
    from aggregators.renyi_fixed_point import solve_fixed_point

    A = log_probs.shape[1]
    return solve_fixed_point(log_probs, np.full(A, 1.0 / A), np.full(A, 0.5), method="newton").log_q


def _calls() -> Iterator[tuple[str, Callable[[], Any]]]:
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(4), size=(8, 3))  # 8 items, 3 agents, 4 classes
    log_probs = np.log(probs)
    labels = rng.integers(0, 4, 8)
    # arrays of at least aggregators.validation.PARALLEL_MIN_SIZE numbers take the parallel compiled
    # validation pass, and a log pool over more than 40 agents Newton's working set: warm them too
    big = rng.dirichlet(np.ones(16), size=(6, 700))  # 6 items, 700 agents, 16 classes = 67,200 numbers
    big_labels = rng.integers(0, 16, 6)
    for kind, arr in (("log_probs", np.log(big)), ("probs", big)):
        yield f"aggregate log ({kind}, large)", lambda k=kind, a=arr: aggregate("log", a, kind=k)
    yield "fit log (many agents)", lambda: make_pool("log").fit(big, big_labels).predict(big)
    # the Rényi fixed point and its adjoint run in parallel from renyi_kernels.PARALLEL_MIN_WORK numbers on
    huge = np.log(rng.dirichlet(np.ones(2048), size=(2, 1000)))  # 2 items, 1000 agents, 2048 classes = 4,096,000
    yield "aggregate renyi (parallel)", lambda: aggregate("renyi", huge, kind="log_probs", gamma=0.5)
    # from 100 agents the aggregate is Anderson's (aggregators.renyi_anderson.prefer), serial below
    # renyi_kernels.PARALLEL_MIN_WORK numbers; the Newton kernels still serve fewer agents and the fits
    yield "renyi newton (parallel)", lambda: _renyi_newton(huge)
    many = np.log(rng.dirichlet(np.ones(64), size=(2, 100)))  # 2 items, 100 agents, 64 classes
    yield "aggregate renyi (anderson)", lambda: aggregate("renyi", many, kind="log_probs", gamma=0.5)
    yield "fit renyi (parallel)", lambda: make_pool("renyi", gamma=0.5).fit(huge, [0, 1], kind="log_probs")
    # that fit's working set is far below PARALLEL_MIN_WORK numbers, so its adjoint is serial; a large fit's
    # (a competition's: 20,000 x 269 x 64) is parallel, ~30 s to compile on a first sweep (session 33)
    comp = np.log(rng.dirichlet(np.ones(64), size=(700, 100)))  # 4,480,000 numbers, the competition's K
    yield "renyi gradient (parallel adjoint)", lambda: _renyi_gradient(comp)
    # large log-pool (and Rényi limit-start) fits reuse float32 model Hessians (solvers.methods.newton)
    yield "log pool curvature (float32)", lambda: _log_curvature(np.log(big), big_labels, np.float32)
    # small items (aggregators.renyi_block.fits) are solved in blocks; more agents take the per-item kernels
    wide = np.log(rng.dirichlet(np.ones(16), size=(4, 20)))  # 4 items, 20 agents, 16 classes
    yield "aggregate renyi (per item)", lambda: aggregate("renyi", wide, kind="log_probs", gamma=0.5)
    yield "fit renyi (per item)", lambda: make_pool("renyi", gamma=0.5).fit(wide, [0, 1, 2, 3], kind="log_probs")
    # the weight fit's model Hessians of large fits are float32 (the small fits above take float64): about
    # 0.9 s of compilation per precision (aggregators.renyi_curvature_kernels)
    yield "renyi curvature (float32)", lambda: _renyi_curvature(wide, np.float32)
    for dtype in (np.float32, np.float64):
        yield f"renyi curvature ({dtype.__name__}, dense)", lambda d=dtype: _renyi_curvature(wide, d, active=20)
    for method in POOL_METHODS:
        kw = PARAMS.get(method, {})
        yield f"aggregate {method}", lambda m=method, kw=kw: aggregate(m, log_probs, kind="log_probs", **kw)
        yield f"aggregate {method} (probs)", lambda m=method, kw=kw: aggregate(m, probs, kind="probs", **kw)
    for method in LEARNT:
        if method in POOL_METHODS:
            yield f"fit {method}", lambda m=method: make_pool(m).fit(probs, labels).predict(probs)
    # beliefs with a zero probability take the market's floor pass (markets.kernels.floor); the others skip it
    sparse = probs.copy()
    sparse[:, :, 0] = 0.0
    sparse /= sparse.sum(axis=2, keepdims=True)
    for utility in UTILITIES:
        yield f"equilibrium floored {utility}", lambda u=utility: markets.equilibrium(sparse, u, kind="probs")
    for utility in UTILITIES:
        for method in EQUILIBRIUM_METHODS:
            if (method == "closed_form" and utility != "log") or (method == "gram" and utility != 2.0):
                continue
            yield (
                f"equilibrium {method} {utility}",
                lambda m=method, u=utility: markets.equilibrium(log_probs, u, method=m, check=False),
            )
    # training solves its equilibria in its own kernels (markets.kernels.training), dense Newton below
    # markets.equilibrium.CG_MIN_GOODS goods and Newton-CG from there: about 60 s of compilation on a first
    # training (session 45, measured on tests/markets/test_newton_cg.py's training test)
    cg_goods = CG_MIN_GOODS + 6
    for goods in (4, cg_goods):
        lp = np.log(rng.dirichlet(np.ones(goods), size=(12, 4)))  # 12 items, 4 agents
        y = rng.integers(0, goods, 12)
        for utility in TRAIN_UTILITIES:
            for mode in ("batch", "online"):
                yield (
                    f"train market {mode} {utility} ({goods} goods)",
                    lambda m=mode, u=utility, lp=lp, y=y: markets.train_market(lp, y, u, mode=m, max_epochs=1),
                )


def warm(
    report: Callable[[str, float], None] | None = None, calls: list[tuple[str, Callable[[], Any]]] | None = None
) -> dict[str, float]:
    """Run every warm-up call (``calls``: those of :func:`_calls`, built here unless given); returns the
    seconds each took (``report(name, seconds)`` after each).

    A call that fails is reported with a negative time and does not stop the others: warming is an
    optimisation, never a reason for the service not to start.
    """
    times: dict[str, float] = {}
    for name, call in calls if calls is not None else _calls():
        t0 = time.perf_counter()
        try:
            call()
            times[name] = time.perf_counter() - t0
        except Exception:  # noqa: BLE001 - last-resort boundary: warming must not stop a start
            times[name] = -1.0
        if report is not None:
            report(name, times[name])
    return times
