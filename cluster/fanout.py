"""A competition's fits on a Dask cluster: the Rényi gamma sweep, the methods and the leave-one-out refits.

:func:`evaluation.aggregation.aggregate_submissions` fits every method on the public part, the
Rényi pool for each ``eta = 1/gamma`` in turn (each warm-started from the previous weights), and
refits the log pool without each submission. Given a cluster (``client=``, the service's
``AGORA_DASK_SCHEDULER``) it hands them to :class:`CompetitionTasks`: the four arrays are scattered
once to every worker, every method but the market (which needs the chosen gamma) and every
leave-one-out refit is one task submitted at the start of the run, and the sweep is data-parallel:
the warm chain stays on the driver, and each gamma's fit runs its passes over blocks of the public
items on every worker (:func:`cluster.chunked_fit.fit_chunked` on :mod:`cluster.scattered` blocks
sliced from the broadcast copies), as do its predictions, so the run's results are those of the
serial run (the chunked fit equals the in-memory one to 1e-10).

:func:`warm_sweep` is that sweep alone (the benchmark's). :func:`gamma_sweep` is the sweep as
independent tasks, one per gamma: each fit starts cold, so its weights agree with the serial sweep's
to the solver's tolerance, not bit for bit. :func:`leave_one_out` is the refits alone.
``client=None`` runs their tasks in this process, one after the other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from aggregators.metrics import perplexity
from evaluation.aggregation import DEFAULT_ETAS, fit_method, loo_perplexity, sweep_point
from solvers.errors import InputError
from solvers.progress import ProgressFn

from .connect import connected, shared_client
from .scattered import scatter_blocks

__all__ = ["CompetitionTasks", "gamma_sweep", "warm_sweep", "leave_one_out"]


def _row(eta: float, point: tuple) -> dict:
    """A ``gamma_sweep`` row with the weights, from :func:`~evaluation.aggregation.sweep_point`'s result."""
    pool, pv, _, pt = point
    w = [float(x) for x in pool.weights_]
    return {
        "eta": float(eta),
        "gamma": 1.0 / float(eta),
        "public_perplexity": pv,
        "private_perplexity": pt,
        "weights": w,
    }


def _renyi_point(val_lp: np.ndarray, val_y: np.ndarray, test_lp: np.ndarray, test_y: np.ndarray, eta: float) -> dict:
    """One point of Fig. 2.5a from a cold start, as a ``gamma_sweep`` row with the weights."""
    return _row(eta, sweep_point(val_lp, val_y, test_lp, test_y, eta))


def _etas(etas: Sequence[float]) -> list[float]:
    e = sorted(float(x) for x in etas)
    if not e or min(e) <= 0:
        raise InputError("etas", f"must be positive numbers; got {list(etas)!r}")
    return e


class CompetitionTasks:
    """A competition run's fits on a cluster (``client``: a ``distributed.Client`` or a scheduler
    address, whose connection is kept for later runs).

    ``data`` is ``(val_lp, val_y, test_lp, test_y)``. On construction every method of ``methods``
    but ``"renyi"`` and ``"market"`` is submitted (``fits[method]``: a future of
    :func:`~evaluation.aggregation.fit_method`'s result) and, with ``loo``, one log-pool refit per
    submission (``loo``: futures of private perplexities).
    """

    def __init__(self, client: Any, data: tuple, methods: Sequence[str], *, loo: bool) -> None:
        self.client = shared_client(client)
        self.data = [self.client.scatter(x, broadcast=True) for x in data]
        val_lp, val_y, test_lp, _ = self.data
        submit = self.client.submit
        self.fits = {
            m: submit(fit_method, m, val_lp, val_y, test_lp, pure=False)
            for m in methods
            if m not in ("renyi", "market")
        }
        n_agents = data[0].shape[1]
        self.loo = [submit(loo_perplexity, *self.data, a, pure=False) for a in range(n_agents)] if loo else []
        self.labels = (np.asarray(data[1]), np.asarray(data[3]))
        self.blocks = [scatter_blocks(self.data[i], self.client, shape=np.shape(data[i])) for i in (0, 2)]

    def sweep_point(self, eta: float, w0: list[float] | None, progress: ProgressFn | None = None) -> tuple:
        """:func:`~evaluation.aggregation.sweep_point` from the weights ``w0``, data-parallel on the
        cluster: the fit's passes and the predictions over item blocks on every worker."""
        (val, test), (val_y, test_y) = self.blocks, self.labels
        return sweep_point(val, val_y, test, test_y, eta, w0, progress, client=self.client)

    def cancel(self) -> None:
        """Drop every task of the run that is still pending, the scattered data and its blocks."""
        blocks = [f for data in self.blocks for _, f, _, _ in data.blocks]
        self.client.cancel([*self.fits.values(), *self.loo, *blocks, *self.data])


def warm_sweep(
    val_lp: np.ndarray,
    val_y: np.ndarray,
    test_lp: np.ndarray,
    test_y: np.ndarray,
    etas: Sequence[float] = DEFAULT_ETAS,
    *,
    w0: list[float] | None = None,
    client: Any = None,
) -> list[dict]:
    """The Rényi sweep of :func:`~evaluation.aggregation.aggregate_submissions` (``gamma_sweep`` rows
    with the weights, sorted by ``eta``, without the linear pool's point), each gamma warm-started from
    the previous one's weights (the first from ``w0``); with a ``client``, data-parallel as in
    :class:`CompetitionTasks`."""
    with connected(client) as c:
        val, test = (val_lp, test_lp) if c is None else (scatter_blocks(val_lp, c), scatter_blocks(test_lp, c))
        rows: list[dict] = []
        for eta in _etas(etas):
            rows.append(_row(eta, sweep_point(val, val_y, test, test_y, eta, w0, client=c)))
            w0 = rows[-1]["weights"]
    return rows


def _fan_out(client: Any, fn: Callable, data: tuple, points: Sequence[Any]) -> list:
    with connected(client) as c:
        if c is None:
            return [fn(*data, p) for p in points]
        shared = [c.scatter(x, broadcast=True) for x in data]
        return c.gather([c.submit(fn, *shared, p, pure=False) for p in points])


def gamma_sweep(
    val_lp: np.ndarray,
    val_y: np.ndarray,
    test_lp: np.ndarray,
    test_y: np.ndarray,
    etas: Sequence[float] = DEFAULT_ETAS,
    *,
    client: Any = None,
) -> list[dict]:
    """The Rényi sweep of :func:`~evaluation.aggregation.aggregate_submissions` (``gamma_sweep`` rows,
    without the linear pool's point), one independent cold-started task per ``eta``, sorted by ``eta``."""
    return _fan_out(client, _renyi_point, (val_lp, val_y, test_lp, test_y), _etas(etas))


def leave_one_out(
    val_lp: np.ndarray, val_y: np.ndarray, test_lp: np.ndarray, test_y: np.ndarray, *, client: Any = None
) -> list[float]:
    """The leave-one-out gains of :func:`~evaluation.aggregation.aggregate_submissions` (refit mode):
    private perplexity without each submission minus with all, one task per submission."""
    if val_lp.shape[1] < 2:
        raise InputError("val_lp", "leave-one-out needs at least two submissions")
    base = perplexity(fit_method("log", val_lp, val_y, test_lp)[2], test_y)
    ppl = _fan_out(client, loo_perplexity, (val_lp, val_y, test_lp, test_y), list(range(val_lp.shape[1])))
    return [p - base for p in ppl]
