"""The one driver of the single-sample stochastic-approximation methods (ANSGD, averaged SGD, AC-SA).

Each method is a small state machine (``init``/``step`` in the spirit of optax, as
:mod:`solvers.methods.sgd`): :func:`run_steps` draws one term index per step (an epoch is ``n_terms``
steps, the seed's expectation over ``xi`` taken as the uniform draw of a row), advances the state
with ``step(state, j)``, and records the trace at ``point(state)`` (the method's output: ANSGD's
``x_{t+1}``, the average of averaged SGD, AC-SA's aggregated point) once per epoch through
:class:`~solvers.monitor.Monitor`. Not a solver module (leading underscore: not auto-imported).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from inspect import Parameter
from typing import Any, TypeVar, Unpack

import numpy as np

from ..monitor import Monitor, Stop
from ..registry import register
from ._incremental_common import IndexDraws

S = TypeVar("S")
DEFAULT_EPOCHS = 50

_KW = Parameter.KEYWORD_ONLY
#: the sampling options every method here shares besides the stop options (defaults: run_steps')
SAMPLING = (
    Parameter("order", _KW, default="random", annotation=str),
    Parameter("seed", _KW, default=0, annotation=Any),
)


def sa_method(name: str, *, needs: tuple[str, ...], constraints: tuple[str, ...] = ("none",)) -> Callable:
    """Decorator: register ``fn(problem, x0=None, *, <its options>, **common)`` under ``name``, its
    ``**common`` declared as :data:`SAMPLING` (``order``, ``seed``) plus the stop options the registry
    adds (``tol`` default 0, ``max_iter`` default :data:`DEFAULT_EPOCHS`), so that callers and the
    service see every option by name and an unknown one is a ``TypeError``."""

    def deco(fn: Callable) -> Callable:
        sig = inspect.signature(fn, eval_str=True)
        params = list(sig.parameters.values())
        fn.__signature__ = sig.replace(parameters=[*params[:-1], *SAMPLING, params[-1]])  # type: ignore[attr-defined]
        return register(name, needs=needs, constraints=constraints, tol=0.0, max_iter=DEFAULT_EPOCHS)(fn)

    return deco


def run_steps(
    problem: Any,
    method: str,
    state: S,
    step: Callable[[S, int], S],
    point: Callable[[S], np.ndarray],
    *,
    order: str = "random",
    seed: Any = 0,
    extra: Callable[[S], dict[str, float]] | None = None,
    **stop: Unpack[Stop],
) -> tuple[S, Monitor, int]:
    """Run ``max_iter`` epochs of ``n_terms`` steps (fewer when the monitor stops); returns the final
    state, the monitor (for ``result``) and the number of epochs run.

    The keywords are the options every method here shares (each method passes its ``**common`` on):
    ``tol`` (on the monitor's measure), ``max_iter`` (epochs), ``callback``, ``progress``, ``order``
    ("random" | "permuted" | "cyclic") and ``seed``; ``extra(state)``: more trace columns (a method's
    own, e.g. stochastic ADMM's constraint residual)."""
    draw = IndexDraws(order, seed, problem.n_terms)
    mon = Monitor(problem, method, **stop)
    epoch = 0
    while not mon.check(point(state), epoch, value_grad=None, measure=None, **(extra(state) if extra else {})):
        for j in draw():
            state = step(state, int(j))
        mon.passes += 1
        epoch += 1
    return state, mon, epoch
