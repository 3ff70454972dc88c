"""One way to get a Dask ``distributed.Client``: from a client, a scheduler address, or nothing.

``Client(address)`` is how Agora reaches a real cluster (``tcp://host:8786``); a ``LocalCluster``'s
client is passed as it is. An address that cannot be reached within ``timeout`` seconds is an
:class:`~solvers.errors.InputError` naming the argument and the address, never a hang; so is a
cluster that loses every worker, or the scheduler, while :func:`gather` waits on it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from solvers.errors import InputError

__all__ = [
    "connect",
    "connected",
    "shared_client",
    "close_shared",
    "worker_addresses",
    "gather",
    "kernel_friendly_nanny",
]

DEFAULT_TIMEOUT = 10.0
"""Seconds to wait for a scheduler (or, while :func:`gather` waits, for a worker) before giving up."""
POLL = 1.0
"""Seconds between :func:`gather`'s checks of the cluster while it waits."""


def connect(client: Any, *, timeout: float = DEFAULT_TIMEOUT, field: str = "client") -> Any:
    """A ``distributed.Client``: ``client`` itself when it is one, else a new client connected to the
    scheduler address ``client`` (``"tcp://host:8786"``). Raises :class:`InputError` naming ``field``
    when the scheduler cannot be reached within ``timeout`` seconds."""
    from distributed import Client

    if isinstance(client, Client):
        return client
    if not isinstance(client, str) or not client.strip():
        raise InputError(field, f"must be a distributed.Client or a scheduler address; got {client!r}")
    try:
        return Client(client, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise InputError(
            field,
            f"cannot reach the Dask scheduler at {client!r} within {timeout:g} s ({type(exc).__name__}); "
            "start one with `dask scheduler` or check the address",
            code="unreachable",
        ) from exc


@contextmanager
def connected(client: Any, *, timeout: float = DEFAULT_TIMEOUT, field: str = "client") -> Iterator[Any]:
    """:func:`connect` for one piece of work: a client made here from an address is closed at the end
    (``None`` stays ``None``: the in-process path)."""
    if client is None:
        yield None
        return
    c = connect(client, timeout=timeout, field=field)
    try:
        yield c
    finally:
        if c is not client:
            c.close()


_SHARED: dict[str, Any] = {}
_SHARED_LOCK = threading.Lock()


def shared_client(client: Any, *, timeout: float = DEFAULT_TIMEOUT, field: str = "client") -> Any:
    """:func:`connect`, with the client made from an address kept open and reused by later calls with
    the same address (a service's jobs share one connection per scheduler; a closed one is replaced)."""
    if not isinstance(client, str):
        return connect(client, timeout=timeout, field=field)
    with _SHARED_LOCK:
        c = _SHARED.get(client)
        if c is None or c.status != "running":
            c = _SHARED[client] = connect(client, timeout=timeout, field=field)
        return c


def close_shared() -> None:
    """Close every client :func:`shared_client` kept (a service at shutdown, a test at its end)."""
    with _SHARED_LOCK:
        while _SHARED:
            _SHARED.popitem()[1].close()


def worker_addresses(client: Any, timeout: float = DEFAULT_TIMEOUT) -> list[str]:
    """The addresses of the client's workers, sorted (a fixed placement order); at least one. A
    cluster with none is waited for up to ``timeout`` seconds (a nanny replacing a worker that died
    leaves a moment without one: a fit started then failed at once in a fresh-clone CI run, session
    17), then it is an :class:`InputError` naming ``client``."""
    workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    if not workers:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except (TimeoutError, OSError):
            pass
        workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    if not workers:
        raise InputError("client", f"the Dask cluster has no workers (waited {timeout:g} s for one)")
    return workers


def _unhealthy(client: Any) -> tuple[str, str] | None:
    """Why no task of ``client`` can run now, as ``(code, reason)``: no scheduler, or no worker."""
    try:
        if client.status == "running":
            if client.scheduler_info(n_workers=-1)["workers"]:
                return None
            return "no_workers", "the Dask cluster has no workers left"
    except OSError:
        pass
    return "unreachable", f"lost the connection to the Dask scheduler (client status {client.status!r})"


def gather(
    client: Any, futures: list, *, timeout: float = DEFAULT_TIMEOUT, field: str = "client", fetch: bool = True
) -> list:
    """``client.gather(futures)``, which cannot wait forever on a cluster that lost its workers or its
    scheduler. ``fetch=False``: wait for the futures and raise as below, but leave their results on
    the workers (returns ``[]``): the blocks of a chunked fit are waited for, never sent to the driver.

    Dask runs the tasks of a worker that leaves the cluster on the workers that remain, and recomputes
    the results it held from their lineage, so a fit whose inputs are tasks (blocks read from a Zarr
    store, or sliced from an array held in the task) completes with the same numbers. What Dask cannot
    do is run a task with no worker, and it then waits for one forever. So every :data:`POLL` seconds
    while the futures are pending the cluster is checked, and once it has had no worker (or no
    connection to the scheduler) for ``timeout`` seconds an :class:`InputError` naming ``field`` is
    raised (``code="no_workers"`` or ``"unreachable"``). Futures Dask cancelled (the client lost the
    scheduler: ``"unreachable"``; a worker left with data that is no task's result, such as data
    scattered to it: ``"workers_lost"``) and tasks whose workers died at every try
    (:class:`distributed.KilledWorker`, often a worker's memory limit: ``"workers_died"``) raise the
    same error; a task's own error (bad input in a block) is raised as it is."""
    from distributed import KilledWorker, wait
    from distributed.client import FutureCancelledError, FuturesCancelledError

    bad_since = None
    while True:
        try:
            with client.as_current():
                wait(futures, timeout=POLL)
            if fetch:
                return client.gather(futures)
            for f in futures:
                if f.status != "finished":
                    f.result()  # raises the task's own error, or Dask's (cancelled, killed worker)
            return []
        except TimeoutError:
            pass
        except (FutureCancelledError, FuturesCancelledError) as exc:
            lost = "scheduler" in str(exc)
            raise InputError(
                field,
                f"Dask cancelled the work ({' '.join(str(exc).split())[:300]}): "
                + (
                    "it lost the connection to the scheduler"
                    if lost
                    else "a worker left with data Dask cannot recompute"
                ),
                code="unreachable" if lost else "workers_lost",
            ) from exc
        except KilledWorker as exc:
            raise InputError(
                field,
                f"every worker that ran a task died ({exc}); are the blocks too large for the workers' memory limit?",
                code="workers_died",
            ) from exc
        state = _unhealthy(client)
        bad_since = None if state is None else (bad_since or time.monotonic())
        if state is not None and bad_since is not None and time.monotonic() - bad_since >= timeout:
            code, reason = state
            raise InputError(field, f"{reason} for {timeout:g} s; the work cannot go on", code=code)


def kernel_friendly_nanny() -> dict:
    """Dask configuration for worker processes started by a nanny (``LocalCluster``, ``dask worker``)
    without the ``MALLOC_TRIM_THRESHOLD_`` Dask sets by default: with it glibc stops adapting its mmap
    threshold, so every large temporary of the pools' kernels is a fresh mmap whose pages fault in
    again; the Rényi passes then ran 1.5-2x slower in a worker than in this process (measured,
    ``benchmarks/results/cluster-session8.md``). Use ``with dask.config.set(kernel_friendly_nanny()):``
    around the cluster's start; freed memory then stays in the workers' heaps.

    On a virtual machine whose host takes freed memory back (:mod:`cluster.host_memory`) the workers
    also start with ``NUMPY_MADVISE_HUGEPAGE=0`` (unless this process's environment or the nanny's
    pre-spawn environment sets it): NumPy's huge pages
    there cost a host fault per fresh 2 MiB block, 2.4 s/GiB against 0.34 s/GiB without them
    (session 17, ``benchmarks/results/hugepages-session17.md``)."""
    import dask

    from .host_memory import worker_memory_env

    env = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}))
    env.pop("MALLOC_TRIM_THRESHOLD_", None)
    env.update(worker_memory_env({**os.environ, **env}))  # a value set in either place wins
    return {"distributed.nanny.pre-spawn-environ": env}
