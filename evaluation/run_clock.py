"""Seconds left in an aggregation run, re-estimated from the measured cost of its steps.

A run's progress fraction is split among its steps by fixed weights
(:func:`evaluation.aggregation.progress_plan`), so a straight line through (elapsed, fraction) is
wrong whenever a step costs more or less than its weight says (the first, closed-form methods take
milliseconds, a Rényi fit or a market takes seconds). :class:`RunClock` watches the fraction and
the wall clock and costs

* the step in progress by its own rate: its elapsed time x (1 - g) / g, ``g`` the fraction of the
  step done (its fits, epochs or refits), once ``g`` >= 5 %;
* each step not yet started by its weight times the highest rate (seconds per weight unit)
  measured so far, over finished steps and the one in progress: the closed-form steps say nothing
  about the solver-bound ones that follow them, the solver-bound ones are alike;
* or, if less, as a finished step it is declared ``alike``: ``{"loo": ("log", n_agents)}`` costs
  the leave-one-out refits at ``n_agents`` times the measured log-pool fit.

No estimate is given before a rate is measured.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from .aggregation import stage_at

MIN_MEASURED = 0.05
"""The fraction of a step done before its own rate is trusted (its first epoch or iteration may
carry a compilation or a setup)."""


class RunClock:
    """Watches a run's progress ``fraction`` against ``plan`` (``(step, weight)`` pairs) and
    estimates the seconds left; ``clock`` is the time source (seconds, monotone)."""

    def __init__(
        self,
        plan: Sequence[tuple[str, float]],
        alike: Mapping[str, tuple[str, float]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.plan = list(plan)
        self.alike = dict(alike or {})
        self.clock = clock
        self.weights = dict(self.plan)
        self.rates: dict[str, float] = {}  # seconds per weight unit of each finished step
        self.step = self.plan[0][0] if self.plan else "done"
        self.started = clock()

    def observe(self, fraction: float) -> float | None:
        """Record that the run reached ``fraction`` now; the estimated seconds left, or None."""
        now = self.clock()
        name, g = stage_at(self.plan, fraction)
        if name != self.step:  # the step in progress finished now (a step passed over was not timed)
            if self.weights.get(self.step, 0.0) > 0:
                self.rates[self.step] = (now - self.started) / self.weights[self.step]
            self.step, self.started = name, now
        names = [n for n, _ in self.plan]
        if name not in names:
            return 0.0
        w, elapsed = self.weights[name], now - self.started
        rates = list(self.rates.values())
        measured = g >= MIN_MEASURED and w > 0 and elapsed > 0.0
        if measured:
            rates.append(elapsed / (g * w))
        if not rates:
            return None
        future = max(rates)
        left_here = elapsed * (1.0 - g) / g if measured else (1.0 - g) * self._cost(name, future)
        return left_here + sum(self._cost(n, future) for n in names[names.index(name) + 1 :])

    def _cost(self, step: str, rate: float) -> float:
        """The seconds a step not yet started should take: its weight at ``rate``, or less if its
        ``alike`` step measured less (a first fit may carry a compilation: never more)."""
        like, times = self.alike.get(step, ("", 0.0))
        by_weight = self.weights[step] * rate
        if like in self.rates:
            return min(by_weight, times * self.rates[like] * self.weights[like])
        return by_weight
