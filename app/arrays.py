"""Arrays at the edge of the service: ``.npy`` bytes at rest, JSON lists or ``.npy`` on the wire.

A posted array (predictions, labels, wealth...) may be

* a JSON nested list of numbers,
* ``{"npy": "<base64 of .npy bytes>"}`` (binary, no float formatting round trip), or
* ``{"array_id": "arr_..."}``: an array uploaded before with ``POST /v1/arrays`` (raw ``.npy`` or
  Arrow IPC body, or a multipart ``file``), stored once and reusable by many requests.

An Arrow IPC upload (stream or file format, :func:`from_arrow`) holds one column: a numeric column is
a 1-D array; an ``arrow.fixed_shape_tensor`` column (pyarrow's ``FixedShapeTensorArray``) or a
column of (nested) fixed-size lists is an array of shape ``(rows, *shape)``. Nulls are refused.

Stored arrays are always ``.npy`` bytes (``np.save`` with ``allow_pickle=False``) in the
``blobs`` table; reading uses ``allow_pickle=False`` too, so an upload can never carry code.
"""

from __future__ import annotations

import base64
import binascii
import io
from typing import Any

import numpy as np
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from solvers.errors import InputError

from .errors import ProblemError
from .models import Blob


def to_npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
    return buf.getvalue()


def load_npy(data: bytes) -> np.ndarray:
    """The array of ``.npy`` bytes written by :func:`to_npy` (stored data; no pickles)."""
    return np.load(io.BytesIO(data), allow_pickle=False)


def _bad(field: str, what: str, reason: str) -> ProblemError:
    return ProblemError(422, f"{field}: {what}", field=field, reason=reason, code="bad-npy")


def from_npy(data: bytes, field: str = "array") -> np.ndarray:
    try:
        arr = np.load(io.BytesIO(data), allow_pickle=False)
    except (
        Exception
    ) as exc:  # last resort on untrusted bytes: ValueError, EOFError, OSError, UnpicklingError, SyntaxError...
        raise ProblemError(
            422,
            f"{field}: not a readable .npy array ({exc.__class__.__name__})",
            field=field,
            reason="not a readable .npy array (object arrays are refused)",
            code="bad-npy",
        ) from None
    if not isinstance(arr, np.ndarray):
        raise _bad(field, "expected one .npy array", "expected one .npy array")
    return numeric(arr, field)


def numeric(arr: np.ndarray, field: str) -> np.ndarray:
    """``arr`` if its dtype is boolean, integer or floating; else the 422 every upload gets."""
    if arr.dtype.kind not in "biuf":
        raise _bad(field, f"array dtype {arr.dtype} is not numeric", f"dtype {arr.dtype} is not numeric")
    return arr


ARROW_MAGIC = b"ARROW1"


def is_arrow(data: bytes) -> bool:
    """Whether ``data`` starts as Arrow IPC does: the file format's magic or a stream's continuation marker."""
    return data[:6] == ARROW_MAGIC or data[:4] == b"\xff\xff\xff\xff"


def from_arrow(data: bytes, field: str = "array") -> np.ndarray:
    """The array of an Arrow IPC stream or file with one column (see the module doc); 422 otherwise."""
    import pyarrow as pa

    try:
        reader = pa.ipc.open_file(data) if data[:6] == ARROW_MAGIC else pa.ipc.open_stream(data)
        table = reader.read_all()
    except Exception as exc:  # last resort on untrusted bytes: ArrowInvalid, OSError...
        raise _bad(
            field, f"not a readable Arrow IPC stream or file ({exc.__class__.__name__})", "not readable Arrow IPC"
        ) from None
    if table.num_columns != 1:
        raise _bad(field, f"expected one column, got {table.num_columns}", "an Arrow upload holds one column")
    col = table.column(0).combine_chunks()
    if col.null_count:
        raise _bad(field, f"{col.null_count} null values", "contains nulls")
    if isinstance(col.type, pa.FixedShapeTensorType):
        return numeric(col.to_numpy_ndarray(), field)
    shape = [len(col)]
    values = col
    while pa.types.is_fixed_size_list(values.type):
        shape.append(values.type.list_size)
        values = values.flatten()
        if values.null_count:
            raise _bad(field, f"{values.null_count} null values", "contains nulls")
    if not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type) or pa.types.is_boolean(values.type)):
        raise _bad(field, f"Arrow type {values.type} is not numeric", f"Arrow type {values.type} is not numeric")
    return numeric(values.to_numpy(zero_copy_only=False).reshape(shape), field)


def check_size(n: int, limit: int, field: str) -> None:
    if n > limit:
        raise ProblemError(
            413,
            f"{field}: {n} numbers exceed the limit of {limit}",
            field=field,
            reason=f"more than {limit} numbers",
            code="too-large",
        )


def _count_leaves(x: Any, limit: int) -> int:
    """Number of entries of a rectangular nested list, read from its first entries (ragged input is
    rejected later by the validator; the body size limit bounds the rest)."""
    n = 1
    while isinstance(x, list):
        n *= len(x)
        if not x:
            break
        x = x[0]
    return n


_NUMBERS = frozenset({int, float})


def check_numbers(x: Any, field: str) -> None:
    """Every leaf of the posted nested list ``x`` is a JSON number: a string (``"0.7"``), a boolean
    or a null is a 422 naming ``field`` and the first offending position (NumPy would coerce them)."""
    stack: list[tuple[list[Any], tuple[int, ...]]] = [(x, ())]
    while stack:
        row, at = stack.pop()
        kinds = set(map(type, row))
        if kinds <= _NUMBERS:
            continue
        if kinds == {list}:
            stack.extend((r, (*at, i)) for i, r in reversed(list(enumerate(row))))
            continue
        i, v = next((i, v) for i, v in enumerate(row) if type(v) not in _NUMBERS)
        where = "".join(f"[{j}]" for j in (*at, i))
        what = "a nested list" if isinstance(v, list) else f"{type(v).__name__} {v!r}"[:60]
        raise InputError(field, f"must be a rectangular array of numbers; got {what} at {where}", code="not_a_number")


def resolve(
    value: Any,
    field: str,
    *,
    session: Session | None = None,
    limit: int = 20_000_000,
    owners: frozenset[str] | None = None,
) -> Any:
    """The array behind a posted value (a nested list is returned as is: the validator reads it).
    An ``array_id`` must name an upload of one of ``owners`` (any upload when None: an admin)."""
    if isinstance(value, dict):
        if "npy" in value:
            try:
                raw = base64.b64decode(value["npy"], validate=True)
            except (binascii.Error, TypeError, ValueError):
                raise ProblemError(
                    422,
                    f"{field}.npy: not valid base64",
                    field=f"{field}.npy",
                    reason="not valid base64",
                    code="bad-npy",
                ) from None
            arr = from_npy(raw, field)
            check_size(arr.size, limit, field)
            return arr
        if "array_id" in value:
            if session is None:
                raise ProblemError(
                    422,
                    f"{field}: array references are not accepted here",
                    field=field,
                    reason="array references are not accepted here",
                )
            arr = load_upload(session, str(value["array_id"]), field, owners)
            check_size(arr.size, limit, field)
            return arr
        raise ProblemError(
            422,
            f"{field}: an object must be {{'npy': base64}} or {{'array_id': id}}",
            field=field,
            reason="unknown array object",
            code="bad-array",
        )
    if isinstance(value, list):
        check_size(_count_leaves(value, limit), limit, field)
        check_numbers(value, field)
    return value


# -- blobs ------------------------------------------------------------------------------------------
def save_blob(
    session: Session, owner_type: str, owner_id: str, name: str, arr: np.ndarray, *, owner: str | None = None
) -> None:
    """Store ``arr`` as ``name`` of ``(owner_type, owner_id)``; ``owner`` is the key of an upload."""
    arr = np.asarray(arr)
    session.execute(delete(Blob).where(Blob.owner_type == owner_type, Blob.owner_id == owner_id, Blob.name == name))
    session.add(
        Blob(
            owner_type=owner_type,
            owner_id=owner_id,
            name=name,
            dtype=str(arr.dtype),
            shape=list(arr.shape),
            data=to_npy(arr),
            owner=owner,
        )
    )


def load_blobs(session: Session, owner_type: str, owner_id: str) -> dict[str, np.ndarray]:
    rows = session.scalars(select(Blob).where(Blob.owner_type == owner_type, Blob.owner_id == owner_id)).all()
    return {r.name: load_npy(r.data) for r in rows}


def load_blob(session: Session, owner_type: str, owner_id: str, name: str) -> np.ndarray | None:
    row = session.scalars(
        select(Blob).where(Blob.owner_type == owner_type, Blob.owner_id == owner_id, Blob.name == name)
    ).first()
    return None if row is None else load_npy(row.data)


def load_blob_of_each(session: Session, owner_type: str, owner_ids: list[str], name: str) -> dict[str, np.ndarray]:
    """The blob ``name`` of each owner in ``owner_ids`` (one query), by owner id."""
    rows = session.scalars(
        select(Blob).where(Blob.owner_type == owner_type, Blob.owner_id.in_(owner_ids), Blob.name == name)
    ).all()
    return {r.owner_id: load_npy(r.data) for r in rows}


def delete_blobs(session: Session, owner_type: str, owner_id: str) -> None:
    session.execute(delete(Blob).where(Blob.owner_type == owner_type, Blob.owner_id == owner_id))


def load_upload(
    session: Session, array_id: str, field: str = "array_id", owners: frozenset[str] | None = None
) -> np.ndarray:
    """The uploaded array ``array_id`` (a 422 naming ``field`` if none of ``owners`` owns it)."""
    row = session.scalars(
        select(Blob).where(Blob.owner_type == "upload", Blob.owner_id == array_id, Blob.name == "data")
    ).first()
    if row is not None and owners is not None and row.owner not in owners:
        raise ProblemError(
            422,
            f"{field}: uploaded array {array_id!r} belongs to another API key",
            field=field,
            reason="array owned by another API key",
            code="not-owner",
        )
    arr = None if row is None else load_npy(row.data)
    if arr is None:
        raise ProblemError(
            422,
            f"{field}: no uploaded array {array_id!r}",
            field=field,
            reason=f"no uploaded array {array_id!r}",
            code="unknown-array",
        )
    return arr


def encode(arr: np.ndarray, fmt: str = "json", *, native: bool = False) -> Any:
    """An array for a response: nested lists (``json``) or ``{"npy": base64}`` (``npy``).

    ``native=True`` returns the array itself for ``json`` (for responses written by orjson, which
    serialises NumPy arrays directly, non-finite values as ``null``)."""
    arr = np.asarray(arr)
    if fmt == "json" and native and arr.dtype.kind in "biuf":
        return np.ascontiguousarray(arr, dtype=np.float64 if arr.dtype.kind == "f" else arr.dtype)
    if fmt == "npy":
        return {"npy": base64.b64encode(to_npy(arr)).decode("ascii"), "dtype": str(arr.dtype), "shape": list(arr.shape)}
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        return _tolist_nullable(arr)  # JSON has no inf/nan: -inf log-probabilities become null
    return arr.tolist()


def _tolist_nullable(arr: np.ndarray) -> Any:
    obj = arr.astype(object)
    obj[~np.isfinite(arr)] = None
    return obj.tolist()
