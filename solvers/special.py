"""Numerically stable special functions with little per-call overhead.

``scipy.special.logsumexp`` costs about 60 µs per call on tiny arrays (argument handling dominates),
which is most of the cost of pooling one item in the API. This NumPy-only version gives the same
values (max-shifted, ``-inf`` rows handled) for a few microseconds.
"""

from __future__ import annotations

import numpy as np


def logsumexp(
    a: np.ndarray, axis: int | None = None, keepdims: bool = False, b: np.ndarray | None = None
) -> np.ndarray:
    """``log(sum(b * exp(a), axis))`` computed stably; ``b`` (optional) are non-negative scale factors.

    Rows that are ``-inf`` everywhere (or whose ``b`` are all zero) give ``-inf``, as scipy does.
    """
    a = np.asarray(a, dtype=np.float64)
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore", under="ignore"):
        e = np.exp(a - m)
        if b is not None:
            e = e * b
        s = np.log(np.sum(e, axis=axis, keepdims=True))
    out = s + m
    if not keepdims:
        out = np.squeeze(out, axis=axis) if axis is not None else out.reshape(())
    return out
