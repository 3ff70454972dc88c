"""What every benchmark script shares: the timing protocol (notes/solver-benchmarks.md section 7)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np


def timed(fn: Callable[[], Any], reps: int) -> tuple[float, Any]:
    """Median wall-clock seconds of ``reps`` calls of ``fn`` and the last call's result."""
    times, out = [], None
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), out
