"""One result type for every solver, carrying a trace (objective, passes, seconds).

Modelled on ``scipy.optimize.OptimizeResult``: whatever the method, callers read ``x``, ``fun``,
``n_iter``, ``converged`` and ``message``, and benchmarks and plots read ``trace``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Trace:
    """Objective after each recorded iteration, with passes over the data and seconds so far.

    ``seconds`` is wall time since the solver started, *excluding* the time spent evaluating the
    objective for the trace when the solver would not otherwise compute it.
    """

    objective: list[float] = field(default_factory=list)
    passes: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    extra: dict[str, list[float]] = field(default_factory=dict)

    def record(self, objective: float, passes: float, seconds: float, **extra: float) -> None:
        self.objective.append(float(objective))
        self.passes.append(float(passes))
        self.seconds.append(float(seconds))
        for k, v in extra.items():
            self.extra.setdefault(k, []).append(float(v))

    def __len__(self) -> int:
        return len(self.objective)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"objective": self.objective, "passes": self.passes, "seconds": self.seconds}
        d.update(self.extra)
        return d


@dataclass
class SolveResult:
    """What every solver returns."""

    x: np.ndarray
    fun: float
    n_iter: int
    n_passes: float
    converged: bool
    message: str
    method: str
    seconds: float = 0.0
    trace: Trace = field(default_factory=Trace)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "x": np.asarray(self.x).tolist(),
            "fun": float(self.fun),
            "n_iter": int(self.n_iter),
            "n_passes": float(self.n_passes),
            "converged": bool(self.converged),
            "message": self.message,
            "method": self.method,
            "seconds": float(self.seconds),
            "trace": self.trace.to_dict(),
        }


class Clock:
    """Wall clock that can be paused while the trace evaluates something the solver does not need."""

    def __init__(self) -> None:
        self._start = time.perf_counter()
        self._paused = 0.0
        self._pause_start: float | None = None

    def pause(self) -> None:
        self._pause_start = time.perf_counter()

    def resume(self) -> None:
        if self._pause_start is not None:
            self._paused += time.perf_counter() - self._pause_start
            self._pause_start = None

    def __call__(self) -> float:
        now = time.perf_counter() if self._pause_start is None else self._pause_start
        return now - self._start - self._paused
