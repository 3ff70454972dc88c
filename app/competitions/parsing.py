"""Reading a submission file and the validation report that says what is wrong with it.

A submission gives, for every test item of the competition, one row of log-probabilities over the
K classes, keyed by the item id. Accepted formats (the server detects which from the bytes):

* **CSV** with a header row ``id,<class 0>,...,<class K-1>`` (the first column is the item id, any
  name; the remaining K columns are read in order) or without a header (first column ids);
* **.npy** holding a 2-D float array of shape ``(n_items, K + 1)`` whose first column is the item
  id;
* **.npz** holding two arrays ``ids`` (n_items,) and ``log_probs`` (n_items, K).

Rows are unnormalised log-probabilities (``kind="log_probs"``, the seed's convention: the server
normalises each row, so false normalisation cannot help anyone) or probabilities
(``kind="probs"``, rows summing to one within :func:`sum_tolerance`). Normalisation goes through the one validator,
:func:`aggregators.validation.as_log_probs`.

**Zero probabilities** (``-inf`` log-probabilities, ``0`` probabilities) are floored at
:data:`aggregators.validation.DEFAULT_FLOOR` (``1e-9``) with the pools' mass-preserving
:func:`~aggregators.validation.apply_floor`, on every item alike (public and private), and the
report warns with the count; so a zero on a true label costs ``-log(1e-9)`` on that item, never an
infinite or undefined score. A row with no probability at all (every class ``-inf``) is still an
error.

Nothing is stored from a rejected upload: :func:`parse_submission` either returns the aligned,
normalised matrix or raises :class:`SubmissionRejected` carrying a :class:`ValidationReport` that
lists every problem found (format, shape, ids, non-finite values, negative or unnormalised
probability rows), each with the count of offending rows and the first few offending item ids.
"""

from __future__ import annotations

import csv
import io
import math
import zipfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aggregators.validation import DEFAULT_FLOOR, PROB_SUM_TOL, PredictionError, apply_floor, as_log_probs

MAX_LISTED = 5
"""How many offending item ids a report lists per problem."""


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
FLOAT_EXACT = 2**53
"""Integers above this in magnitude are not all representable as float64: a float id beyond it is refused."""


def exact_ids(values: Any) -> np.ndarray:
    """Item ids as exact ``int64``: Python or numpy integers in the signed 64-bit range, or integral
    floats up to ``2**53``. Anything else (a fraction, a float id beyond ``2**53`` that may already
    have been rounded, an integer that does not fit in 64 bits, a bool) raises ``ValueError`` naming
    the first offending position; nothing is ever rounded or wrapped."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu":
        if values.dtype.kind == "u" and values.size and int(values.max()) > INT64_MAX:
            i = int(np.argmax(values > INT64_MAX))
            raise ValueError(f"item id at position {i} does not fit in a signed 64-bit integer")
        return values.astype(np.int64)
    seq = values.tolist() if isinstance(values, np.ndarray) else list(values)
    out = np.empty(len(seq), dtype=np.int64)
    for i, v in enumerate(seq):
        if isinstance(v, bool):
            raise ValueError(f"item id at position {i} is a boolean, not an integer")
        if isinstance(v, int):
            if not INT64_MIN <= v <= INT64_MAX:
                raise ValueError(f"item id at position {i} does not fit in a signed 64-bit integer")
            out[i] = v
        elif isinstance(v, float) and math.isfinite(v) and v == math.floor(v):
            if abs(v) > FLOAT_EXACT:
                raise ValueError(
                    f"item id at position {i} is a float beyond 2^53, which may have been rounded; "
                    "write ids as integers (CSV text, or an integer array in .npz)"
                )
            out[i] = int(v)
        else:
            raise ValueError(f"item id at position {i} is not an integer")
    return out


def _id_cell(c: str) -> int | float:
    """A CSV id cell: exact integer text stays an exact int."""
    try:
        return int(c)
    except ValueError:
        return float(c)


def sum_tolerance(n_classes: int) -> float:
    """How far a row of probabilities may sum from one and still be accepted (then renormalised
    exactly): ``n_classes * 1e-6``, so probabilities written with six significant digits or six
    decimals (each off by at most ``5e-7``), as competition platforms write them, are accepted."""
    return max(PROB_SUM_TOL, n_classes * 1e-6)


@dataclass
class ValidationReport:
    """What was checked and what is wrong. ``ok`` is True when nothing is wrong."""

    n_rows: int = 0
    n_columns: int = 0
    format: str = "unknown"
    errors: list[dict] = field(default_factory=list)
    warnings: list[dict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def error(self, field_: str, code: str, reason: str, items: list | None = None):
        """Record an error; ``items``: the item ids it concerns (the first ``MAX_LISTED`` are listed)."""
        e = {"field": field_, "code": code, "reason": reason}
        if items is not None:
            e["items"] = [int(i) for i in items[:MAX_LISTED]]
            e["count"] = len(items)
        self.errors.append(e)

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "format": self.format,
            "n_rows": self.n_rows,
            "n_columns": self.n_columns,
            "errors": self.errors,
            "warnings": self.warnings,
        }


class SubmissionRejected(ValueError):
    """An upload that failed validation; ``report`` says why."""

    def __init__(self, report: ValidationReport) -> None:
        self.report = report
        first = report.errors[0]["reason"] if report.errors else "invalid submission"
        super().__init__(f"submission rejected: {first}")


@dataclass
class ParsedSubmission:
    log_probs: np.ndarray  # (n_items, K) normalised, in the competition's item order
    report: ValidationReport


def _read_table(data: bytes, report: ValidationReport) -> np.ndarray | tuple[np.ndarray, np.ndarray] | None:
    """Raw table from the bytes: (ids, values) or a 2-D array whose first column is ids."""
    if data[:6] == b"\x93NUMPY":
        report.format = "npy"
        try:
            arr = np.load(io.BytesIO(data), allow_pickle=False)
        except Exception as exc:  # noqa: BLE001 - any unreadable file is a format error
            report.error("file", "unreadable", f"could not read the .npy file ({exc.__class__.__name__})")
            return None
        if arr.dtype.kind not in "iuf":
            report.error("file", "not_numeric", f".npy array must be numeric; got dtype {arr.dtype}")
            return None
        if arr.ndim != 2:
            report.error("file", "bad_shape", f".npy array must be 2-D (n_items, K+1); got shape {arr.shape}")
            return None
        if arr.shape[1] < 2:
            return arr.astype(np.float64)
        return arr[:, 0], arr[:, 1:].astype(np.float64)  # the id column in its own dtype (exact if integer)
    if data[:2] == b"PK":
        report.format = "npz"
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                if "ids" not in z.files or "log_probs" not in z.files:
                    report.error(
                        "file", "missing_arrays", f".npz must hold arrays 'ids' and 'log_probs'; has {z.files}"
                    )
                    return None
                ids, values = z["ids"], z["log_probs"]
        except (zipfile.BadZipFile, ValueError, OSError) as exc:
            report.error("file", "unreadable", f"could not read the .npz file ({exc.__class__.__name__})")
            return None
        if ids.ndim != 1 or values.ndim != 2 or ids.shape[0] != values.shape[0]:
            report.error(
                "file", "bad_shape", f"'ids' must be (n,) and 'log_probs' (n, K); got {ids.shape} and {values.shape}"
            )
            return None
        if ids.dtype.kind not in "iuf" or values.dtype.kind not in "iuf":
            report.error("file", "not_numeric", "'ids' and 'log_probs' must be numeric")
            return None
        return ids, values.astype(np.float64)
    report.format = "csv"
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        report.error("file", "not_text", "file is neither .npy, .npz nor UTF-8 CSV")
        return None
    rows = [r for r in csv.reader(io.StringIO(text)) if r and any(c.strip() for c in r)]
    if not rows:
        report.error("file", "empty", "the file has no rows")
        return None
    try:
        float(rows[0][0])
    except ValueError:
        rows = rows[1:]  # a header row
    if not rows:
        report.error("file", "empty", "the file has a header and no data rows")
        return None
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        bad = next(i for i, r in enumerate(rows) if len(r) != len(rows[0]))
        report.error(
            "file",
            "ragged",
            f"rows have different numbers of columns ({sorted(widths)}); first differing data row {bad + 1}",
        )
        return None
    out = np.empty((len(rows), len(rows[0])), dtype=np.float64)
    ids = np.empty(len(rows), dtype=object)
    for i, r in enumerate(rows):
        for j, c in enumerate(r):
            c = c.strip()
            try:
                if j == 0:
                    ids[i] = _id_cell(c)  # ids stay exact integers, not float64
                else:
                    out[i, j] = float(c)
            except ValueError:
                report.error("file", "not_numeric", f"data row {i + 1}, column {j + 1}: {c[:20]!r} is not a number")
                return None
    return (ids, out[:, 1:]) if out.shape[1] >= 2 else out


def parse_submission(data: bytes, item_ids: np.ndarray, n_classes: int, *, kind: str = "log_probs") -> ParsedSubmission:
    """Validate an uploaded file against the competition's item ids and K; align and normalise.

    Raises :class:`SubmissionRejected` with the full report when anything is wrong.
    """
    report = ValidationReport()
    if kind not in ("log_probs", "probs"):
        report.error("kind", "bad_kind", f"must be 'log_probs' or 'probs'; got {kind!r}")
        raise SubmissionRejected(report)
    if not data:
        report.error("file", "empty", "the upload is empty")
        raise SubmissionRejected(report)
    table = _read_table(data, report)
    if table is None:
        raise SubmissionRejected(report)
    if isinstance(table, tuple):
        ids_f, values = table
    else:
        if table.shape[1] < 2:
            report.error(
                "file", "bad_shape", f"need an id column and {n_classes} class columns; got {table.shape[1]} column(s)"
            )
            raise SubmissionRejected(report)
        ids_f, values = table[:, 0], table[:, 1:]
    report.n_rows, report.n_columns = int(values.shape[0]), int(values.shape[1])

    # shape
    if values.shape[1] != n_classes:
        report.error(
            "shape", "bad_shape", f"expected {n_classes} class columns after the id column; got {values.shape[1]}"
        )
    # ids
    ids_ok = True
    try:
        ids = exact_ids(ids_f)
    except ValueError as exc:
        report.error("ids", "bad_ids", f"item ids must be exact 64-bit integers: {exc}")
        ids_ok = False
    if ids_ok:
        uniq, counts = np.unique(ids, return_counts=True)
        known = np.asarray(item_ids, dtype=np.int64)
        for wrong, code, what in (
            (uniq[counts > 1], "duplicate_ids", "item id(s) appear more than once"),
            (np.setdiff1d(uniq, known), "unknown_ids", "item id(s) are not test items of this competition"),
            (np.setdiff1d(known, uniq), "missing_ids", "test item(s) have no row"),
        ):
            if wrong.size:
                report.error("ids", code, f"{wrong.size} {what}", items=list(wrong))
    # non-finite values (reported per item id, as the user knows them)
    row_ids = ids if ids_ok else np.arange(values.shape[0])
    for bad, code, what in (
        (np.isnan(values), "nan", "NaN"),
        (np.isposinf(values), "inf", "+inf"),
    ):
        rows = np.flatnonzero(bad.any(axis=1))
        if rows.size:
            report.error("values", code, f"{rows.size} row(s) contain {what}", items=list(row_ids[rows]))
    if kind == "probs" and values.shape[1]:
        tol = sum_tolerance(values.shape[1])
        finite = np.isfinite(values).all(axis=1)
        for rows, code, what in (
            (np.flatnonzero((values < 0).any(axis=1)), "negative", "contain a negative probability"),
            (
                np.flatnonzero(finite & (np.abs(values.sum(axis=1) - 1.0) > tol)),
                "not_normalised",
                f"do not sum to one within {tol:g}",
            ),
        ):
            if rows.size:
                report.error("values", code, f"{rows.size} row(s) {what}", items=list(row_ids[rows]))
    if kind == "log_probs":
        rows = np.flatnonzero(np.isneginf(values).all(axis=1)) if values.shape[1] else np.array([], int)
        if rows.size:
            report.error(
                "values",
                "zero_row",
                f"{rows.size} row(s) are -inf for every class (zero total probability)",
                items=list(row_ids[rows]),
            )
    if not report.ok:
        raise SubmissionRejected(report)

    # align to the competition's item order and normalise with the one validator
    order = np.argsort(ids)
    pos = np.searchsorted(ids[order], np.asarray(item_ids, dtype=np.int64))
    aligned = values[order[pos]]
    try:
        preds = apply_floor(
            as_log_probs(aligned[:, None, :], kind=kind, field="values", tol=sum_tolerance(n_classes)),
            DEFAULT_FLOOR,
            field="values",
        )
    except PredictionError as exc:
        item = None if exc.item is None else [int(np.asarray(item_ids)[exc.item])]
        report.error("values", exc.code, exc.reason, items=item)
        raise SubmissionRejected(report) from None
    if kind == "log_probs" and (values >= 0).all() and np.allclose(values.sum(axis=1), 1.0, atol=1e-3):
        report.warnings.append(
            {
                "field": "values",
                "code": "looks_like_probabilities",
                "reason": "every row is non-negative and sums to 1: these look like probabilities, but the "
                "file was read as log-probabilities; upload again with kind=probs if so",
            }
        )
    if preds.n_floored:
        report.warnings.append(
            {
                "field": "values",
                "code": "floored",
                "reason": f"{preds.n_floored} probabilities below {DEFAULT_FLOOR:g} (zeros included) were raised "
                f"to {DEFAULT_FLOOR:g} and their rows renormalised",
                "count": int(preds.n_floored),
            }
        )
    return ParsedSubmission(np.ascontiguousarray(preds.log_probs[:, 0, :]), report)


def to_csv(item_ids: np.ndarray, log_probs: np.ndarray, digits: int = 6) -> bytes:
    """A file in the CSV format above, values with ``digits`` significant digits (17: exact
    float64, as the downloads write them)."""
    buf = io.StringIO()
    k = log_probs.shape[1]
    buf.write("id," + ",".join(f"c{j}" for j in range(k)) + "\n")
    for i, row in zip(item_ids, log_probs):
        buf.write(str(int(i)) + "," + ",".join(f"{v:.{digits}g}" for v in row) + "\n")
    return buf.getvalue().encode()


def to_npz(item_ids: np.ndarray, log_probs: np.ndarray) -> bytes:
    """A file in the .npz format above (exact int64 ids; used by the downloads)."""
    buf = io.BytesIO()
    np.savez(buf, ids=np.asarray(item_ids, dtype=np.int64), log_probs=np.asarray(log_probs, dtype=np.float64))
    return buf.getvalue()


def to_npy(item_ids: np.ndarray, log_probs: np.ndarray) -> bytes:
    """A submission file in the .npy format above."""
    buf = io.BytesIO()
    np.save(buf, np.column_stack([np.asarray(item_ids, dtype=np.float64), log_probs]))
    return buf.getvalue()
