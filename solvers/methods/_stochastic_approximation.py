"""The one driver of the single-sample stochastic-approximation methods (ANSGD, averaged SGD, AC-SA).

Each method is a small state machine (``init``/``step`` in the spirit of optax, as
:mod:`solvers.methods.sgd`): :func:`run_steps` draws one term index per step (an epoch is ``n_terms``
steps, the seed's expectation over ``xi`` taken as the uniform draw of a row), advances the state
with ``step(state, j)``, and records the trace at ``point(state)`` (the method's output: ANSGD's
``x_{t+1}``, the average of averaged SGD, AC-SA's aggregated point) once per epoch through
:class:`~solvers.monitor.Monitor`. Not a solver module (leading underscore: not auto-imported).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from inspect import Parameter
from typing import Any, TypeVar

import numpy as np

from ..monitor import Monitor
from ..registry import register
from ._incremental_common import check_common, indices, rng_of

S = TypeVar("S")
DEFAULT_EPOCHS = 50

_KW = Parameter.KEYWORD_ONLY
#: the options every method here shares, declared once (the API reads them from the signature)
COMMON = (
    Parameter("tol", _KW, default=0.0, annotation=float),
    Parameter("max_iter", _KW, default=DEFAULT_EPOCHS, annotation=int),
    Parameter("callback", _KW, default=None, annotation=Any),
    Parameter("progress", _KW, default=None, annotation=Any),
    Parameter("order", _KW, default="random", annotation=str),
    Parameter("seed", _KW, default=0, annotation=Any),
)


def sa_method(name: str, *, needs: tuple[str, ...], constraints: tuple[str, ...] = ("none",)) -> Callable:
    """Decorator: register ``fn(problem, x0=None, *, <its options>, **common)`` under ``name`` with the
    explicit signature ``(problem, x0=None, *, <its options>, tol, max_iter, callback, progress, order,
    seed)`` (:data:`COMMON`), so that callers and the service see every option by name and an unknown
    one is a ``TypeError``, as for every other solver."""

    def deco(fn: Callable) -> Callable:
        own = [p for p in inspect.signature(fn).parameters.values() if p.kind is _KW]
        head = [
            Parameter("problem", Parameter.POSITIONAL_OR_KEYWORD),
            Parameter("x0", Parameter.POSITIONAL_OR_KEYWORD, default=None),
        ]
        sig = inspect.Signature([*head, *own, *COMMON])

        @functools.wraps(fn)
        def solver(*args: Any, **kwargs: Any) -> Any:
            b = sig.bind(*args, **kwargs)
            b.apply_defaults()
            kw = dict(b.arguments)
            return fn(kw.pop("problem"), kw.pop("x0"), **kw)

        solver.__signature__ = sig  # type: ignore[attr-defined]
        return register(name, needs=needs, constraints=constraints)(solver)

    return deco


def run_steps(
    problem: Any,
    method: str,
    state: S,
    step: Callable[[S, int], S],
    point: Callable[[S], np.ndarray],
    *,
    tol: float = 0.0,
    max_iter: int = DEFAULT_EPOCHS,
    callback: Any = None,
    progress: Any = None,
    order: str = "random",
    seed: Any = 0,
) -> tuple[S, Monitor, int]:
    """Run ``max_iter`` epochs of ``n_terms`` steps (fewer when the monitor stops); returns the final
    state, the monitor (for ``result``) and the number of epochs run.

    The keywords are the options every method here shares (each method passes its ``**common`` on):
    ``tol`` (on the monitor's measure), ``max_iter`` (epochs), ``callback``, ``progress``, ``order``
    ("random" | "permuted" | "cyclic") and ``seed``."""
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
