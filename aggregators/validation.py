"""The one validator for predictions and labels, used by the library and the API alike.

Data model
----------
A batch of predictions is an array of shape ``(n_items, n_agents, n_classes)``: agent ``i``'s
predictive distribution over ``K = n_classes`` classes for each item. Internally it is held as
*normalised log-probabilities* (float64, every ``(item, agent)`` row has ``logsumexp == 0``).

Two input kinds are accepted, and the caller says which (there is no guessing: a table of
probabilities with one negative entry would otherwise be silently read as log-probabilities):

``kind="probs"``
    Non-negative probabilities whose rows sum to one within ``PROB_SUM_TOL`` (absolute, default
    ``1e-6``); rows inside the tolerance are renormalised exactly. Zeros are legal.
``kind="log_probs"``
    Log-probabilities, possibly unnormalised (as the seed's competition accepted, seed 000 section
    2.7.3); each row is normalised with logsumexp. ``-inf`` means probability zero and is legal, but
    a row that is ``-inf`` everywhere is rejected.

Rejected everywhere: NaN, ``+inf``, non-numeric or ragged input, arrays that are not 3-D, fewer than
one agent or two classes, zero items. Labels must be integers in ``0..K-1``, one per item.

Zero probabilities and the floor policy
---------------------------------------
A zero is fine in a linear pool but leaves a log pool or a Rényi pool undefined (``log 0``). Pools
that need strictly positive beliefs call :func:`apply_floor`: every probability below ``eps`` is
raised to ``eps`` and the row renormalised; the number of floored entries is reported. The default
``eps`` is :data:`DEFAULT_FLOOR` (``1e-9``); ``floor=None`` turns the policy off and zeros raise
:class:`PredictionError` instead.

Errors
------
Every problem raises :class:`PredictionError` (the library's one :class:`solvers.errors.InputError`) carrying ``field``, ``reason`` and,
where it applies, the first offending ``item`` and ``agent``; the API turns it into a 422
``application/problem+json`` body.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from solvers.checks import as_labels
from solvers.errors import InputError
from solvers.special import logsumexp

PROB_SUM_TOL: float = 1e-6
"""Absolute tolerance on ``|sum(row) - 1|`` for probability input."""

DEFAULT_FLOOR: float = 1e-9
"""Default probability floor for pools that cannot take zeros (log and Rényi pools)."""

Kind = Literal["probs", "log_probs"]


PredictionError = InputError
"""Invalid predictions or labels: the library's one :class:`solvers.errors.InputError`."""


@dataclass(frozen=True)
class Predictions:
    """Validated predictions: normalised log-probabilities ``(n_items, n_agents, n_classes)``.

    ``n_floored`` counts entries raised to the floor ``floor`` (0 and ``None`` when no floor was
    applied). ``order``: ``None``, or the input's items were taken in this order (item ``i`` here is
    the input's item ``order[i]``; :func:`as_floored_log_probs` with ``shuffle``).

    Every function that validates its input (:func:`as_log_probs`, :func:`as_floored_log_probs`,
    :func:`apply_floor`, the aggregates and the pools' ``fit`` and ``predict``) takes a
    ``Predictions`` as already done: no second pass, no copy. Validate an array once and pass the
    result to many calls (a γ sweep predicting the same items at every γ).
    """

    log_probs: np.ndarray
    n_floored: int = 0
    floor: float | None = None
    order: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.log_probs.shape  # type: ignore[return-value]

    @property
    def n_items(self) -> int:
        return self.log_probs.shape[0]

    @property
    def n_agents(self) -> int:
        return self.log_probs.shape[1]

    @property
    def n_classes(self) -> int:
        return self.log_probs.shape[2]

    @property
    def has_zeros(self) -> bool:
        return bool(np.isneginf(self.log_probs).any())


def _first(mask: np.ndarray) -> tuple[int, int] | tuple[None, None]:
    """(item, agent) of the first True entry of a mask over ``(n_items, n_agents[, n_classes])``."""
    idx = np.argwhere(mask)
    if idx.size == 0:
        return None, None
    return int(idx[0][0]), int(idx[0][1])


FAST_PATH_MIN_SIZE = 1
"""Log-probability inputs with at least this many entries are normalised (and floored) by the compiled
pass of :mod:`aggregators.validation_kernels`: every input. The NumPy checks run only to name a row the
pass refuses (tests set this above any size to compare the pass with the NumPy path).

Until session 55 this was ``1 << 16`` and smaller inputs were normalised and floored in NumPy, which
rounds differently from the pass in the last bit (8.9e-16 in log-probability): the same item gave a
different market equilibrium (by 1e-15, and by 2-5e-12 where Anderson then took another path) alone and
in a call of 300 items. Now an item's validated row does not depend on what it was sent with."""

PARALLEL_MIN_SIZE = 1 << 16
"""From this many entries the compiled pass runs in parallel; below, its serial twin (the same result
bit for bit, no thread pool to wake per request)."""


def _pass_input(arr: np.ndarray) -> np.ndarray:
    """``arr`` (3-D) as the compiled pass reads it: C-contiguous float64 rows. A read-only array is a
    type of its own to numba, compiled apart (seconds, on a first call the warm-up did not cover), so a
    small one (pandas' ``to_numpy()`` under copy-on-write, ``np.load(..., mmap_mode="r")``) is copied;
    a large one is read where it is (no copy of a large input; it compiles once into the cache)."""
    flat = np.ascontiguousarray(arr, dtype=np.float64).reshape(-1, arr.shape[2])
    if not flat.flags.writeable and flat.size < PARALLEL_MIN_SIZE:
        flat = flat.copy()
    return flat


def _as_float_array(x: Any, field: str) -> np.ndarray:
    if isinstance(x, Predictions):
        return x.log_probs
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (ValueError, TypeError) as exc:
        # ragged nested lists raise ValueError in NumPy >= 1.24; strings raise ValueError too
        raise PredictionError(
            field,
            "must be a rectangular numeric array of shape (n_items, n_agents, n_classes); "
            f"could not read it as one ({exc.__class__.__name__})",
            code="not_numeric_or_ragged",
        ) from None
    return arr


def _check_shape(arr: np.ndarray, field: str) -> None:
    if arr.ndim != 3:
        raise PredictionError(
            field,
            f"must have shape (n_items, n_agents, n_classes); got {arr.ndim}-D array of shape {tuple(arr.shape)}",
            code="bad_shape",
        )
    n, a, k = arr.shape
    if n < 1:
        raise PredictionError(field, "needs at least one item", code="bad_shape")
    if a < 1:
        raise PredictionError(field, "needs at least one agent", code="bad_shape")
    if k < 2:
        raise PredictionError(field, f"needs at least two classes; got {k}", code="bad_shape")


def _reject_nan_and_posinf(arr: np.ndarray, field: str) -> None:
    nan = np.isnan(arr)
    if nan.any():
        i, a = _first(nan)
        raise PredictionError(field, "contains NaN", item=i, agent=a, code="nan")
    posinf = np.isposinf(arr)
    if posinf.any():
        i, a = _first(posinf)
        raise PredictionError(field, "contains +inf", item=i, agent=a, code="inf")


def as_log_probs(
    x: Any,
    *,
    kind: Kind = "log_probs",
    field: str = "predictions",
    tol: float = PROB_SUM_TOL,
) -> Predictions:
    """Validate predictions and return them as normalised log-probabilities.

    Parameters
    ----------
    x : array-like, shape (n_items, n_agents, n_classes), or :class:`Predictions`
    kind : ``"probs"`` or ``"log_probs"`` (unnormalised log-probabilities are normalised).
    field : the name used in error messages (the API passes its JSON field name).
    tol : absolute tolerance for probability rows summing to one.
    """
    if isinstance(x, Predictions):
        return x
    if kind not in ("probs", "log_probs"):
        raise PredictionError("kind", f"must be 'probs' or 'log_probs'; got {kind!r}", code="bad_kind")
    arr = _as_float_array(x, field)
    _check_shape(arr, field)

    if kind == "probs":
        _reject_nan_and_posinf(arr, field)
        neginf = np.isneginf(arr)
        if neginf.any():
            i, a = _first(neginf)
            raise PredictionError(field, "contains -inf (not a probability)", item=i, agent=a, code="inf")
        neg = arr < 0
        if neg.any():
            i, a = _first(neg)
            raise PredictionError(field, "contains a negative probability", item=i, agent=a, code="negative")
        sums = arr.sum(axis=2)
        bad = np.abs(sums - 1.0) > tol
        if bad.any():
            i, a = _first(bad)
            raise PredictionError(
                field,
                f"probabilities must sum to one within {tol:g}; a row sums to {sums[i, a]:.9g}",
                item=i,
                agent=a,
                code="not_normalised",
            )
        with np.errstate(divide="ignore"):
            lp = np.log(arr / sums[:, :, None])
        return Predictions(np.ascontiguousarray(lp))

    # log-probabilities: normalise each row with logsumexp
    if arr.size >= FAST_PATH_MIN_SIZE:  # one compiled pass; on any refusal the checks below name it
        from .validation_kernels import normalise_log_rows

        flat = _pass_input(arr)
        out = np.empty_like(flat)
        if normalise_log_rows(flat, out, parallel=arr.size >= PARALLEL_MIN_SIZE) == 0:
            return Predictions(out.reshape(arr.shape))
    _reject_nan_and_posinf(arr, field)
    allneg = np.isneginf(arr).all(axis=2)
    if allneg.any():
        i, a = _first(np.asarray(allneg))
        raise PredictionError(
            field, "a row is -inf for every class (zero total probability)", item=i, agent=a, code="zero_row"
        )
    with np.errstate(invalid="ignore"):
        lse = logsumexp(arr, axis=2, keepdims=True)
    if not np.isfinite(lse).all():
        i, a = _first(~np.isfinite(lse[:, :, 0]))
        raise PredictionError(field, "a row overflows when normalised", item=i, agent=a, code="overflow")
    return Predictions(np.ascontiguousarray(arr - lse))


def _check_floor(floor: Any, n_classes: int) -> float:
    try:
        floor = float(floor)
    except (TypeError, ValueError):
        raise PredictionError(
            "floor", f"must be a number in (0, 1/n_classes) or None; got {floor!r}", code="bad_floor"
        ) from None
    if not (0.0 < floor < 1.0 / n_classes):
        raise PredictionError("floor", f"must lie in (0, 1/n_classes); got {floor!r}", code="bad_floor")
    return floor


def _floor_compiled(
    arr: np.ndarray,
    floor: float,
    overwrite: bool = False,
    order: np.ndarray | None = None,
    normalise: bool = True,
) -> Predictions | None:
    """Normalise and floor ``arr`` (3-D) in one compiled pass into one new array (``overwrite``: into
    ``arr`` itself when it is a writeable C-contiguous float64 array; ``order``: a permutation of the
    items, taken in that order, never in place); ``None`` if a row is refused (the NumPy checks then
    name it: the kernel leaves a refused row as it was); ``normalise=False``: ``arr`` is normalised
    already, and is floored only (a row with nothing to floor is copied bit for bit)."""
    from .validation_kernels import normalise_floor_rows, normalise_floor_rows_serial

    in_place = (
        order is None and overwrite and arr.dtype == np.float64 and arr.flags.c_contiguous and arr.flags.writeable
    )
    flat = arr.reshape(-1, arr.shape[2]) if in_place else _pass_input(arr)
    out = flat if in_place else np.empty_like(flat)
    perm = np.empty(0, np.int64) if order is None else np.asarray(order, dtype=np.int64)
    kernel = normalise_floor_rows if arr.size >= PARALLEL_MIN_SIZE else normalise_floor_rows_serial
    bad, n = kernel(flat, out, floor, perm, max(1, arr.shape[1]), normalise)
    if bad:
        return None
    return Predictions(out.reshape(arr.shape), int(n), floor, order)


def as_floored_log_probs(
    x: Any,
    *,
    kind: Kind = "log_probs",
    floor: float | None = DEFAULT_FLOOR,
    field: str = "predictions",
    overwrite: bool = False,
    shuffle: int | None = None,
) -> Predictions:
    """:func:`as_log_probs` then :func:`apply_floor`: the input of the log and Rényi pools.

    Log-probability inputs are validated, normalised and floored in one compiled pass over
    the data writing one new array (:func:`aggregators.validation_kernels.normalise_floor_rows`);
    on a refused row, or for other inputs, the two steps run in turn (and name any bad entry).

    ``overwrite=True``: a writeable C-contiguous float64 ``x`` may receive the result itself, with
    no second array (a chunked fit's block just read from a Zarr store: the first touch of a fresh
    137 MB array cost ~0.3 s on this machine, against 0.04 s for the pass; measured in session 11).
    Rows the pass refuses are left as they were, so the error raised is the one raised without it;
    the other rows of ``x`` are then normalised and floored.

    ``shuffle`` (a seed): where the compiled pass writes a new array, it writes the items in a random
    order of this seed, at no extra cost (the result's ``order`` says which; ``None`` elsewhere: the
    items as given). The Rényi pool's fit takes it so that its warm start's random subsets of items
    are prefixes of the array, views instead of copies.
    """
    if floor is not None and kind == "log_probs" and not isinstance(x, Predictions):
        arr = _as_float_array(x, field)
        _check_shape(arr, field)
        if arr.size >= FAST_PATH_MIN_SIZE:
            order = None if shuffle is None else np.random.default_rng(shuffle).permutation(arr.shape[0])
            preds = _floor_compiled(
                arr, _check_floor(floor, arr.shape[2]), overwrite=overwrite and arr is x, order=order
            )
            if preds is not None:
                return preds
        x = arr
    return apply_floor(as_log_probs(x, kind=kind, field=field), floor, field=field)


def apply_floor(preds: Predictions, floor: float | None = DEFAULT_FLOOR, *, field: str = "predictions") -> Predictions:
    """Raise probabilities below ``floor`` to ``floor`` and renormalise (log and Rényi pools).

    Returns a new :class:`Predictions` whose ``n_floored`` counts the entries changed. With
    ``floor=None`` any zero probability raises :class:`PredictionError` instead.
    """
    lp = preds.log_probs
    if floor is None:
        if preds.floor is not None:  # floored data hold no zero probability: no scan
            return preds
        z = np.isneginf(lp)
        if z.any():
            i, a = _first(z)
            raise PredictionError(
                field,
                "zero probability is undefined under a log or Rényi pool and flooring is off",
                item=i,
                agent=a,
                code="zero_probability",
            )
        return preds
    floor = _check_floor(floor, lp.shape[2])
    if preds.floor is not None and preds.floor >= floor:  # every probability is >= preds.floor >= floor:
        return replace(preds, n_floored=0)  # flooring changes nothing (no pass, no copy)
    if lp.size >= FAST_PATH_MIN_SIZE:  # one compiled pass, one output array
        compiled = _floor_compiled(lp, floor, normalise=False)
        if compiled is not None:
            return compiled
    log_floor = np.log(floor)
    low = lp < log_floor
    n = int(low.sum())
    if n == 0:
        return Predictions(lp, 0, floor)
    # Mass-preserving floor: floored entries get exactly `floor`, the others share the remaining
    # mass 1 - m*floor in their old proportions. Rescaling can push an entry that was just above the
    # floor below it, so repeat (at most K times; floor < 1/K keeps it feasible). The result has
    # every probability >= floor, so flooring again changes nothing (idempotent).
    # (A plain "raise then renormalise" left floored entries slightly *below* the floor.)
    rows = low.any(axis=2)
    sub, fixed = lp[rows], low[rows]  # (R, K): only the rows that need flooring
    for _ in range(sub.shape[1]):
        m = fixed.sum(axis=1, keepdims=True)
        log_rest = logsumexp(np.where(fixed, -np.inf, sub), axis=1, keepdims=True)
        scaled = sub + (np.log1p(-m * floor) - log_rest)
        newly = ~fixed & (scaled < log_floor)
        if not newly.any():
            break
        fixed |= newly
    out = lp.copy()
    out[rows] = np.where(fixed, log_floor, scaled)
    n = int(fixed.sum())
    return Predictions(np.ascontiguousarray(out), n, floor)


def _nonnegative_vector(values: Any, n: int, field: str, per: Literal["agent", "item"]) -> np.ndarray:
    """``values`` as a float64 vector of ``n`` finite non-negative numbers, one per ``per``; the
    error names ``field`` and the first offending agent or item."""
    try:
        v = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise PredictionError(field, f"must be a 1-D numeric array, one weight per {per}", code="bad_weights") from None
    if v.shape != (n,):
        raise PredictionError(
            field, f"must have one weight per {per} ({n}); got shape {v.shape}", code="shape_mismatch"
        )
    for bad, reason, code in (
        (~np.isfinite(v), "must be finite (contains NaN or inf)", "nan"),
        (v < 0, "must be non-negative", "negative"),
    ):
        if bad.any():
            raise PredictionError(field, reason, code=code, **{per: int(np.flatnonzero(bad)[0])})
    return np.ascontiguousarray(v)


def check_weights(
    weights: Any,
    n_agents: int,
    *,
    field: str = "weights",
    sum_to_one: Literal["require", "rescale"] = "rescale",
) -> np.ndarray:
    """The one check of pool weights: one per agent, finite, non-negative; returns them on the simplex.

    ``sum_to_one`` is the policy for their total:

    ``"rescale"``
        any positive total, rescaled onto the simplex; ``None`` means uniform weights (stateless
        pooling and the Rényi aggregate, whose weights are relative);
    ``"require"``
        the weights must already sum to one within :data:`PROB_SUM_TOL` (explicit weights of the
        linear and log pools: a vector that does not sum to one is more likely a mistake than a
        scale); they are renormalised exactly.
    """
    if weights is None and sum_to_one == "rescale":
        return np.full(n_agents, 1.0 / n_agents)
    w = _nonnegative_vector(weights, n_agents, field, "agent")
    s = w.sum()
    if sum_to_one == "require" and abs(s - 1.0) > PROB_SUM_TOL:
        raise PredictionError(field, f"must sum to one (simplex); they sum to {s:.9g}", code="bad_weights")
    if not s > 0:
        raise PredictionError(field, "must have a positive sum", code="bad_weights")
    return w / s


def check_sample_weight(sample_weight: Any, n_items: int, *, field: str = "sample_weight") -> np.ndarray | None:
    """The one check of per-item weights (scikit-learn's ``sample_weight``): ``None`` stays ``None``
    (every item weighs 1); otherwise one finite, non-negative number per item with a positive sum,
    returned as float64. A weight ``c`` counts the item ``c`` times: integer weights fit exactly as
    the data with each item repeated, and weight 0 as the data without the item."""
    if sample_weight is None:
        return None
    sw = _nonnegative_vector(sample_weight, n_items, field, "item")
    if not sw.sum() > 0:
        raise PredictionError(field, "must have a positive sum (some item must count)", code="bad_weights")
    return np.ascontiguousarray(sw)


def validate(
    x: Any,
    y: Any | None = None,
    *,
    kind: Kind = "log_probs",
    field: str = "predictions",
    labels_field: str = "labels",
) -> tuple[Predictions, np.ndarray | None]:
    """Validate predictions and (optionally) labels together; the entry point for estimators."""
    preds = as_log_probs(x, kind=kind, field=field)
    labels = None if y is None else as_labels(y, preds.n_items, preds.n_classes, field=labels_field)
    return preds, labels
