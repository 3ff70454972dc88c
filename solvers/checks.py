"""The shared argument checks of the library: labels, counts, tolerances, choices.

One function per kind of argument, each raising :class:`solvers.errors.InputError` with the field
as the caller wrote it. :func:`as_labels` is the one label check of Agora: the problems of
:mod:`solvers.problems`, the pools (``aggregators.validation.as_labels`` is this function), the
markets and the service all call it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .errors import InputError


def as_labels(y: Any, n_items: int, n_classes: int, *, field: str = "labels") -> np.ndarray:
    """Validate class labels: integers in ``0..n_classes-1``, one per item. Returns int64 (C-contiguous).

    Integral floats (``3.0``) are accepted; booleans, strings, NaN and fractions are not. Raises
    :class:`InputError` with ``code`` ``"bad_labels"``, ``"bad_shape"``, ``"shape_mismatch"`` or
    ``"unknown_class"`` and the first offending ``item``.
    """
    try:
        arr = np.asarray(y)
    except (ValueError, TypeError):
        raise InputError(field, "must be a 1-D array of integer class labels", code="bad_labels") from None
    if arr.ndim != 1:
        raise InputError(field, f"must be 1-D; got shape {tuple(arr.shape)}", code="bad_shape")
    if arr.shape[0] != n_items:
        raise InputError(field, f"has {arr.shape[0]} labels for {n_items} items", code="shape_mismatch")
    if arr.dtype.kind not in "iuf" or arr.dtype == bool:
        raise InputError(field, "must be integer class labels", code="bad_labels")
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all() or (arr != np.round(arr)).any():
            bad = int(np.argwhere(~np.isfinite(arr) | (arr != np.round(arr)))[0][0])
            raise InputError(field, "must be integer class labels", item=bad, code="bad_labels")
    # range check before the cast: a huge float or uint64 label would wrap around in int64
    outside = (arr < 0) | (arr >= n_classes)
    if outside.any():
        i = int(np.argwhere(outside)[0][0])
        raise InputError(
            field, f"label {arr[i]:.0f} is outside 0..{n_classes - 1} (unknown class)", item=i, code="unknown_class"
        )
    return arr.astype(np.int64)  # a fresh contiguous copy


def check_tol(tol: Any, *, field: str = "tol", positive: bool = False) -> float:
    """A tolerance: a number ``>= 0`` (``> 0`` with ``positive=True``)."""
    ok = tol > 0 if positive else tol >= 0
    if not ok:
        raise InputError(field, f"must be {'> 0' if positive else '>= 0'}; got {tol!r}")
    return float(tol)


def check_count(n: Any, *, field: str = "max_iter", minimum: int = 0) -> int:
    """An integer ``>= minimum`` (``max_iter``, ``memory``, ``batch_size``...)."""
    if not (isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= minimum):
        raise InputError(field, f"must be an integer >= {minimum}; got {n!r}")
    return int(n)


def check_positive(v: Any, *, field: str) -> float:
    """A number ``> 0`` (a step size, a growth factor...)."""
    if not v > 0:
        raise InputError(field, f"must be > 0; got {v!r}")
    return float(v)


def check_choice(value: Any, choices: Iterable[Any], *, field: str) -> Any:
    """One of ``choices``."""
    choices = tuple(choices)
    if value not in choices:
        raise InputError(field, f"must be one of {choices}; got {value!r}")
    return value
