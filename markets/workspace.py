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
the next call of the same thread (threads never share it, so concurrent calls are safe). It keeps
at most :data:`KEEP_MAX_BYTES`: a call that needs more allocates as before and keeps nothing.
:func:`release` frees this thread's arena. The memory a thread keeps is the largest arena it has
used, so a process that once solved a 1,000 x 4,096 market keeps 128 MiB per thread that did;
``release()`` after such a call gives it back.
"""

from __future__ import annotations

import threading

import numpy as np

KEEP_MAX_BYTES = 256 << 20
"""The largest arena a thread keeps between calls (256 MiB)."""

_local = threading.local()


def arena(n_floats: int) -> np.ndarray:
    """A float64 array of ``n_floats`` (uninitialised) that the next call of this thread gets again
    (module docstring); an empty array if ``n_floats`` is above :data:`KEEP_MAX_BYTES` (the kernels
    then allocate per chunk)."""
    if n_floats <= 0 or 8 * n_floats > KEEP_MAX_BYTES:
        return np.empty(0)
    buf = getattr(_local, "buf", None)
    if buf is None or buf.shape[0] < n_floats:
        _local.buf = None  # the old arena goes before the new one is allocated
        buf = np.empty(n_floats)
        _local.buf = buf
    return buf[:n_floats]


def release() -> None:
    """Free this thread's arena (module docstring)."""
    _local.buf = None


def kept_bytes() -> int:
    """Bytes of this thread's arena (0 if none)."""
    buf = getattr(_local, "buf", None)
    return 0 if buf is None else buf.nbytes
