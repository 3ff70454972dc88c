"""Whether this machine's host takes freed memory back, and what the worker processes should do about it.

On a virtual machine whose balloon device reports free pages to the host (virtio-balloon's
``VIRTIO_BALLOON_F_REPORTING``, feature bit 5; Firecracker and QEMU offer it), the guest kernel hands
free 2 MiB blocks back to the host (``page_reporting_order`` 9 on the machines of sessions 16-17),
and the next write to such a block faults at the host. NumPy asks the kernel for transparent huge
pages on every array of 4 MiB or more (``madvise(MADV_HUGEPAGE)``), and a huge page *is* one such
block: every fresh huge page is a host fault on all its 512 pages. Measured here (session 17,
``benchmarks/bench_fresh_memory.py``): a first write to 1 GiB in a new process costs 2.35-2.41 s with
NumPy's huge pages and 0.33-0.35 s without (``NUMPY_MADVISE_HUGEPAGE=0``, NumPy's own switch, read
when NumPy is imported); on two 2,000 x 269 x 64 arrays the validate-and-floor pass of a γ-sweep chain
took 0.93-1.31 s in a fresh worker, 0.41-0.47 s without them. Passes over memory that is already
there run a few per cent faster on huge pages (fewer TLB misses): the sweep's points cost 0-10 % more
without them (session 17, ``benchmarks/results/hugepages-session17.md``).

Decision: Agora's worker processes (:func:`cluster.connect.kernel_friendly_nanny`) start with
``NUMPY_MADVISE_HUGEPAGE=0`` when :func:`host_reclaims_free_pages` says so, unless this process's
environment or Dask's ``distributed.nanny.pre-spawn-environ`` already sets ``NUMPY_MADVISE_HUGEPAGE``
(the user's choice wins). On a machine without free page
reporting nothing changes. This process's NumPy is not touched (it is imported already; a library
does not flip NumPy's global switches under its caller).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["BALLOON_DEVICE", "REPORTING_BIT", "host_reclaims_free_pages", "worker_memory_env"]

BALLOON_DEVICE = "0x0005"
"""The virtio device id of a memory balloon (``/sys/bus/virtio/devices/*/device``)."""
REPORTING_BIT = 5
"""``VIRTIO_BALLOON_F_REPORTING``: the position of free page reporting in the device's negotiated
feature string (``/sys/bus/virtio/devices/*/features``, one character per bit, bit 0 first)."""


def host_reclaims_free_pages(sysfs: str | os.PathLike = "/sys") -> bool:
    """True when a virtio memory balloon of this machine has negotiated free page reporting (the guest
    gives freed pages back to the host). Reads ``sysfs`` only; False where it has no virtio bus (bare
    metal, containers without it, other systems)."""
    root = Path(sysfs) / "bus" / "virtio" / "devices"
    try:
        devices = sorted(root.iterdir())
    except OSError:
        return False
    for dev in devices:
        try:
            kind = (dev / "device").read_text().strip()
            features = (dev / "features").read_text().strip()
        except OSError:
            continue
        if kind == BALLOON_DEVICE and len(features) > REPORTING_BIT and features[REPORTING_BIT] == "1":
            return True
    return False


def worker_memory_env(environ: Mapping[str, str] | None = None, sysfs: str | os.PathLike = "/sys") -> dict[str, str]:
    """The environment variables a new worker process should get for its memory:
    ``{"NUMPY_MADVISE_HUGEPAGE": "0"}`` when the host reclaims free pages and ``environ`` (by default
    this process's) does not set ``NUMPY_MADVISE_HUGEPAGE`` itself; else nothing."""
    env = os.environ if environ is None else environ
    if "NUMPY_MADVISE_HUGEPAGE" in env or not host_reclaims_free_pages(sysfs):
        return {}
    return {"NUMPY_MADVISE_HUGEPAGE": "0"}
