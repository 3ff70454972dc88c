"""What every benchmark script shares: the timing protocol (notes/solver-benchmarks.md section 7)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


def _median_time(fn: Callable[[], Any], reps: int, clock: Callable[[], float]) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(reps):
        t = clock()
        out = fn()
        times.append(clock() - t)
    return float(np.median(times)), out


def timed(fn: Callable[[], Any], reps: int) -> tuple[float, Any]:
    """Median wall-clock seconds of ``reps`` calls of ``fn`` and the last call's result."""
    return _median_time(fn, reps, time.perf_counter)


def cpu_timed(fn: Callable[[], Any], reps: int) -> tuple[float, Any]:
    """Median CPU seconds (``time.process_time``) of ``reps`` calls of ``fn`` and the last call's result."""
    return _median_time(fn, reps, time.process_time)


def interleaved(
    fns: Sequence[Callable[[], Any]], min_reps: int = 3, max_reps: int = 15, budget: float = 1.0
) -> tuple[list[float], list[float], list[Any]]:
    """Median wall-clock and median CPU seconds (``time.process_time``: all threads of the process) of
    each of ``fns``, and each one's last result. The calls are interleaved (one round calls every
    function once, so a load spike hits all of them alike): at least ``min_reps`` rounds, more while
    the rounds so far took less than ``budget`` wall seconds. On a machine shared by more runnable
    processes than cores, a call of a few milliseconds is often descheduled for longer than it runs;
    its CPU time is not."""
    wall: list[list[float]] = [[] for _ in fns]
    cpu: list[list[float]] = [[] for _ in fns]
    outs: list[Any] = [None] * len(fns)
    total, reps = 0.0, 0
    while reps < max_reps and (reps < min_reps or total < budget):
        for k, fn in enumerate(fns):
            c = time.process_time()
            t = time.perf_counter()
            outs[k] = fn()
            dt = time.perf_counter() - t
            cpu[k].append(time.process_time() - c)
            wall[k].append(dt)
            total += dt
        reps += 1
    return [float(np.median(t)) for t in wall], [float(np.median(t)) for t in cpu], outs


def against_last(cpu: Sequence[float]) -> tuple[str, str]:
    """Table cells of seconds ``cpu`` and of each but the last as a ratio to the last (the peer's): two
    ``" | "``-joined strings."""
    return " | ".join(f"{t:.3f}" for t in cpu), " | ".join(f"{t / cpu[-1]:.2f}" for t in cpu[:-1])
