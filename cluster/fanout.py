"""A competition's independent fits as Dask tasks: the Rényi gamma sweep and the leave-one-out refits.

:func:`evaluation.aggregation.aggregate_submissions` fits the Rényi pool for each ``eta = 1/gamma``
in turn (each warm-started from the previous weights) and refits the log pool without each
submission. Those fits are independent given the data, so here each is one task: the validation
and private arrays are scattered once to every worker, each task fits one pool and returns a few
numbers. The sweep's fits start cold (no warm start across gammas), so their weights agree with the
serial sweep's to the solver's tolerance, not bit for bit.

``client=None`` runs the same tasks in this process, one after the other (the reference).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from aggregators.metrics import perplexity
from aggregators.registry import make_pool
from evaluation.aggregation import DEFAULT_ETAS, RENYI_OPTIONS
from solvers.errors import InputError

from .connect import connected

__all__ = ["gamma_sweep", "leave_one_out"]


def _renyi_point(val_lp: np.ndarray, val_y: np.ndarray, test_lp: np.ndarray, test_y: np.ndarray, eta: float) -> dict:
    """One point of Fig. 2.5a: the Rényi pool at ``gamma = 1/eta`` fitted on the public part."""
    pool = make_pool("renyi", gamma=1.0 / eta, **RENYI_OPTIONS).fit(val_lp, val_y)
    return {
        "eta": float(eta),
        "gamma": 1.0 / float(eta),
        "public_perplexity": float(np.exp(-pool.score(val_lp, val_y))),
        "private_perplexity": perplexity(pool.predict(test_lp), test_y),
        "weights": [float(w) for w in pool.weights_],
    }


def _loo_point(val_lp: np.ndarray, val_y: np.ndarray, test_lp: np.ndarray, test_y: np.ndarray, a: int) -> float:
    """The log pool refitted without submission ``a``: its private perplexity."""
    keep = np.arange(val_lp.shape[1]) != a
    return perplexity(make_pool("log").fit(val_lp[:, keep], val_y).predict(test_lp[:, keep]), test_y)


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
    without the linear pool's point), one task per ``eta``, sorted by ``eta``."""
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
    base = perplexity(make_pool("log").fit(val_lp, val_y).predict(test_lp), test_y)
    ppl = _fan_out(client, _loo_point, (val_lp, val_y, test_lp, test_y), list(range(val_lp.shape[1])))
    return [p - base for p in ppl]
