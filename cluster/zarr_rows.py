"""Rows of a Zarr array, read straight from its chunk files when they hold the chunk's raw bytes.

zarr-python 3 copies every chunk through its own buffer classes on its event-loop thread: reading
one uncompressed 1,000 x 269 x 64 float64 chunk (137 MB) of a local store took 0.10-0.40 s, against
0.03 s for reading the same file into the destination array, and 3.3-5.5x as long on five block
shapes from 13 MB to 1.6 GB (2 to 1,000 agents, 2 to 4,096 classes; session 14, page cache warm; a
py-spy profile put half of zarr's time in ``NDBuffer.__setitem__``). A chunked fit reads every block of its
store once per build, so on 20 such blocks zarr's read was most of a one-worker fit.

:func:`read_rows` reads rows ``start..stop-1`` (along the first axis) with one ``readinto`` per
chunk, straight into the array it returns, when the store's layout makes that exact:

- a local store (``zarr.storage.LocalStore``: a directory of files);
- Zarr format 2 or 3 metadata with no compressor, no filter and (format 3) no sharding, so a chunk
  file is the chunk's bytes: format 3's only codec is ``bytes``, format 2's order is ``"C"``;
- a fixed-size numeric dtype in this machine's byte order;
- chunks spanning every axis but the first, so a chunk's rows are contiguous in its file.

A missing chunk file reads as the array's fill value, as zarr reads it; a chunk file of another size
than a whole chunk, a fill value of None, or any other layout, and the whole read goes through zarr
(``array[start:stop]``). Both give the same array (tested on stores of both formats).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

__all__ = ["raw_chunk_layout", "read_rows"]


def raw_chunk_layout(arr: Any) -> tuple[str, int] | None:
    """``(the array's directory, rows per chunk)`` when its chunk files hold raw C-order rows (see the
    module docstring), else None."""
    from zarr.storage import LocalStore

    if not isinstance(arr.store, LocalStore) or arr.compressors or arr.filters:
        return None
    meta = arr.metadata
    dtype = np.dtype(arr.dtype)
    if dtype.kind not in "biufc" or not dtype.isnative:
        return None
    if meta.zarr_format == 3:
        from zarr.codecs import BytesCodec

        serializer = arr.serializer
        if arr.shards is not None or not isinstance(serializer, BytesCodec):
            return None
        endian = None if serializer.endian is None else serializer.endian.value
        if dtype.itemsize > 1 and endian != ("little" if np.little_endian else "big"):
            return None
    elif meta.zarr_format != 2 or meta.order != "C":
        return None
    if arr.ndim < 1 or tuple(arr.chunks[1:]) != tuple(arr.shape[1:]):
        return None
    return os.path.join(str(arr.store.root), arr.path), int(arr.chunks[0])


def read_rows(source: Any, start: int, stop: int) -> np.ndarray:
    """Rows ``start..stop-1`` of the Zarr array ``source`` (an array, or the path of one) as a new
    writable C-order array; straight from the chunk files when :func:`raw_chunk_layout` allows."""
    import zarr

    arr = zarr.open_array(source, mode="r") if isinstance(source, (str, os.PathLike)) else source
    start, stop = max(0, int(start)), min(int(stop), int(arr.shape[0]))
    layout = raw_chunk_layout(arr)
    out = None if layout is None else _read_raw(arr, layout, start, stop)
    return np.ascontiguousarray(arr[start:stop]) if out is None else out


def _read_raw(arr: Any, layout: tuple[str, int], start: int, stop: int) -> np.ndarray | None:
    """:func:`read_rows` from the chunk files; None when one of them is not a whole raw chunk."""
    root, c = layout
    dtype = np.dtype(arr.dtype)
    out = np.empty((max(0, stop - start), *arr.shape[1:]), dtype=dtype)
    row_bytes = int(np.prod(arr.shape[1:], dtype=np.int64)) * dtype.itemsize
    rest = (0,) * (arr.ndim - 1)
    for k in range(start // c, -(-stop // c)):
        r0, r1 = max(start, k * c), min(stop, (k + 1) * c)
        dest = out[r0 - start : r1 - start]
        path = os.path.join(root, arr.metadata.encode_chunk_key((k, *rest)))
        try:
            f = open(path, "rb", buffering=0)  # noqa: SIM115 - closed below, on every path
        except FileNotFoundError:
            fill = arr.metadata.fill_value
            if fill is None:
                return None
            dest[...] = fill
            continue
        with f:
            if os.fstat(f.fileno()).st_size != c * row_bytes:
                return None
            f.seek((r0 - k * c) * row_bytes)
            view = memoryview(dest.reshape(-1).view(np.uint8).data)  # the rows' bytes, written in place
            got = 0
            while got < view.nbytes:
                n = f.readinto(view[got:])
                if not n:
                    return None
                got += n
    return out
