"""The one driver of the single-sample stochastic-approximation methods (ANSGD, averaged SGD, AC-SA).

Each method is a small state machine (``init``/``step`` in the spirit of optax, as
:mod:`solvers.methods.sgd`): :func:`run_steps` draws one term index per step (an epoch is ``n_terms``
steps, the seed's expectation over ``xi`` taken as the uniform draw of a row), advances the state
with ``step(state, j)``, and records the trace at ``point(state)`` (the method's output: ANSGD's
``x_{t+1}``, the average of averaged SGD, AC-SA's aggregated point) once per epoch through
:class:`~solvers.monitor.Monitor`. Not a solver module (leading underscore: not auto-imported).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ..monitor import Monitor
from ._incremental_common import check_common, indices, rng_of

S = TypeVar("S")


def run_steps(
    problem: Any,
    method: str,
    state: S,
    step: Callable[[S, int], S],
    point: Callable[[S], np.ndarray],
    *,
    tol: float,
    max_iter: int,
    callback: Any,
    progress: Any,
    order: str,
    seed: Any,
) -> tuple[S, Monitor, int]:
    """Run ``max_iter`` epochs of ``n_terms`` steps (fewer when the monitor stops); returns the final
    state, the monitor (for ``result``) and the number of epochs run."""
    check_common(order, max_iter, tol)
    mon = Monitor(problem, method, tol=tol, max_iter=max_iter, callback=callback, progress=progress)
    rng = rng_of(seed)
    epoch = 0
    while not mon.check(point(state), epoch):
        for j in indices(rng, problem.n_terms, order):
            state = step(state, int(j))
        mon.passes += 1
        epoch += 1
    return state, mon, epoch
