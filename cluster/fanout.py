"""A competition's fits as Dask tasks: the Rényi gamma sweep, the methods and the leave-one-out refits.

:func:`evaluation.aggregation.aggregate_submissions` fits every method on the public part, the
Rényi pool for each ``eta = 1/gamma`` in turn (each warm-started from the previous weights), and
refits the log pool without each submission. Given a cluster (``client=``, the service's
``AGORA_DASK_SCHEDULER``) it hands them to :class:`CompetitionTasks`: the four arrays are scattered
once to every worker, every method but the market (which needs the chosen gamma) and every
leave-one-out refit is one task submitted at the start of the run, and the sweep is a chain of
tasks, one per gamma, each starting from the previous task's weights, so the run's results are those
of the serial run. The chain runs while the other tasks do.

:func:`gamma_sweep` is the sweep as independent tasks instead: each fit starts cold, so its weights
agree with the serial sweep's to the solver's tolerance, not bit for bit. :func:`leave_one_out` is
the refits alone. ``client=None`` runs their tasks in this process, one after the other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from aggregators.metrics import perplexity
from evaluation.aggregation import DEFAULT_ETAS, fit_method, loo_perplexity, sweep_point
from solvers.errors import InputError

from .connect import connected, shared_client

__all__ = ["CompetitionTasks", "gamma_sweep", "leave_one_out"]


def _renyi_point(val_lp: np.ndarray, val_y: np.ndarray, test_lp: np.ndarray, test_y: np.ndarray, eta: float) -> dict:
    """One point of Fig. 2.5a from a cold start, as a ``gamma_sweep`` row with the weights."""
    pool, pv, _, pt = sweep_point(val_lp, val_y, test_lp, test_y, eta)
    w = [float(x) for x in pool.weights_]
    return {
        "eta": float(eta),
        "gamma": 1.0 / float(eta),
        "public_perplexity": pv,
        "private_perplexity": pt,
        "weights": w,
    }


def _sweep_step(
    val_lp: np.ndarray, val_y: np.ndarray, test_lp: np.ndarray, test_y: np.ndarray, eta: float, prev: Any
) -> tuple:
    """One link of the sweep's chain: ``prev`` is the first start (``None`` or weights) or the
    previous link's result, whose pool's weights are the start."""
    w0 = prev if prev is None or isinstance(prev, list) else [float(x) for x in prev[0].weights_]
    return sweep_point(val_lp, val_y, test_lp, test_y, eta, w0)


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
        self._chain: list = []

    def sweep(self, etas: Sequence[float], w0: list[float] | None) -> list:
        """The sweep's chain from the weights ``w0``: futures of
        :func:`~evaluation.aggregation.sweep_point`'s result, one per ``eta`` in the given order."""
        prev: Any = w0
        for eta in etas:
            prev = self.client.submit(_sweep_step, *self.data, float(eta), prev, pure=False)
            self._chain.append(prev)
        return list(self._chain)

    def cancel(self) -> None:
        """Drop every task of the run that is still pending, and the scattered data."""
        self.client.cancel([*self.fits.values(), *self.loo, *self._chain, *self.data])


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
    e = sorted(float(x) for x in etas)
    if not e or min(e) <= 0:
        raise InputError("etas", f"must be positive numbers; got {list(etas)!r}")
    return _fan_out(client, _renyi_point, (val_lp, val_y, test_lp, test_y), e)


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
