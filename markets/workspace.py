"""Scratch memory of the equilibrium kernels, kept per thread from one call to the next.

An equilibrium of A agents over K goods needs three or four (A, K) buffers per chunk of items
(the powers ``P^(1/eta)``, the effective beliefs, the floored beliefs; :mod:`markets.kernels.equilibrium`).
Allocated afresh by every call, large ones come from the operating system each time: glibc's
``free`` gives a block back once the top of the heap holds more than its trim threshold (twice
the largest block so far, at most 64 MiB) and maps blocks above 32 MiB directly, so a call of one
item with 1,000 agents and 4,096 goods touched 96 MiB of new pages, about 25 ms of page faults,
before any arithmetic (session 37: ``solve_items`` with ``max_iter = 0`` took 35 ms against 10 ms
with the same buffers reused; at 1,024 goods 8.5 ms against 2.3 ms). Both the fixed point and
Newton paid it on every call.

:func:`arena` hands each thread one float64 array, grown when a call needs more and reused by
the next call of the same thread (threads never share it, so concurrent calls are safe). A thread
keeps at most :data:`KEEP_MAX_BYTES`, and all threads together at most
:data:`PROCESS_KEEP_MAX_BYTES` (the service runs requests in a pool of up to 40 threads: without
a process-wide bound each could keep its own large arena); a call beyond either bound gets an empty
arena, the kernels then allocate per chunk as before, and nothing is kept. An arena is freed when
its thread ends or calls :func:`release`.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

KEEP_MAX_BYTES = 256 << 20
"""The largest arena one thread keeps between calls (256 MiB: one item of 1,000 agents x 4,096
goods needs 128 MiB)."""
PROCESS_KEEP_MAX_BYTES = 512 << 20
"""The most all threads' arenas keep together (512 MiB)."""

_local = threading.local()
_lock = threading.Lock()
_kept = 0  # bytes of the live arenas of all threads


def _forget(nbytes: int) -> None:
    global _kept
    with _lock:
        _kept -= nbytes


def arena(n_floats: int) -> np.ndarray:
    """A float64 array of ``n_floats`` (uninitialised) that the next call of this thread gets again
    (module docstring); an empty array if keeping it would pass :data:`KEEP_MAX_BYTES` or
    :data:`PROCESS_KEEP_MAX_BYTES` (the kernels then allocate per chunk)."""
    global _kept
    if n_floats <= 0 or 8 * n_floats > KEEP_MAX_BYTES:
        return np.empty(0)
    buf = getattr(_local, "buf", None)
    if buf is not None and buf.shape[0] >= n_floats:
        return buf[:n_floats]
    with _lock:  # reserve before allocating (the old arena is counted until it is freed)
        if _kept + 8 * n_floats > PROCESS_KEEP_MAX_BYTES:
            return np.empty(0)
        _kept += 8 * n_floats
    _local.buf = None  # the old arena goes before the new one is allocated
    try:
        buf = np.empty(n_floats)
    except MemoryError:
        _forget(8 * n_floats)
        raise
    weakref.finalize(buf, _forget, 8 * n_floats)
    _local.buf = buf
    return buf[:n_floats]


def release() -> None:
    """Free this thread's arena (module docstring)."""
    _local.buf = None


def kept_bytes() -> int:
    """Bytes of this thread's arena (0 if none)."""
    buf = getattr(_local, "buf", None)
    return 0 if buf is None else buf.nbytes


def process_kept_bytes() -> int:
    """Bytes of the arenas of all threads still alive (module docstring)."""
    with _lock:
        return _kept
