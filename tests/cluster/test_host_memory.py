"""Free page reporting and NumPy's huge pages in the worker processes (:mod:`cluster.host_memory`).

The detection reads a sysfs tree: checked on written trees (a balloon with and without reporting,
another virtio device, no virtio bus) and, on this machine, against the real ``/sys``; the nanny's
environment reaches real worker processes of a ``LocalCluster`` (their NumPy's switch is read there).
"""

import os
from pathlib import Path

import pytest

from cluster.host_memory import BALLOON_DEVICE, REPORTING_BIT, host_reclaims_free_pages, worker_memory_env

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")


def _device(root: Path, name: str, kind: str, features: str) -> None:
    d = root / "bus" / "virtio" / "devices" / name
    d.mkdir(parents=True)
    (d / "device").write_text(kind + "\n")
    (d / "features").write_text(features + "\n")


def _bits(*on: int, n: int = 64) -> str:
    return "".join("1" if i in on else "0" for i in range(n))


def test_a_balloon_with_free_page_reporting_is_detected(tmp_path):
    _device(tmp_path, "virtio0", "0x0002", _bits(REPORTING_BIT))  # a block device: bit 5 means something else
    assert not host_reclaims_free_pages(tmp_path)
    _device(tmp_path, "virtio1", BALLOON_DEVICE, _bits(1, 2))  # a balloon without reporting
    assert not host_reclaims_free_pages(tmp_path)
    _device(tmp_path, "virtio2", BALLOON_DEVICE, _bits(1, 2, REPORTING_BIT))
    assert host_reclaims_free_pages(tmp_path)


def test_no_virtio_bus_or_unreadable_devices_mean_no_reporting(tmp_path):
    assert not host_reclaims_free_pages(tmp_path)  # bare metal: no bus/virtio
    assert not host_reclaims_free_pages(tmp_path / "missing")
    d = tmp_path / "bus" / "virtio" / "devices" / "virtio0"
    d.mkdir(parents=True)  # a device whose files cannot be read
    assert not host_reclaims_free_pages(tmp_path)
    _device(tmp_path, "virtio1", BALLOON_DEVICE, "0" * REPORTING_BIT)  # a feature string too short
    assert not host_reclaims_free_pages(tmp_path)


def test_the_workers_environment_turns_numpys_huge_pages_off_only_under_reporting(tmp_path):
    assert worker_memory_env({}, tmp_path) == {}
    _device(tmp_path, "virtio0", BALLOON_DEVICE, _bits(REPORTING_BIT))
    assert worker_memory_env({}, tmp_path) == {"NUMPY_MADVISE_HUGEPAGE": "0"}
    # the user's own setting wins, either way
    assert worker_memory_env({"NUMPY_MADVISE_HUGEPAGE": "1"}, tmp_path) == {}
    assert worker_memory_env({"NUMPY_MADVISE_HUGEPAGE": "0"}, tmp_path) == {}


def test_this_machines_detection_reads_its_balloon():
    root = Path("/sys/bus/virtio/devices")
    balloons = [d for d in root.glob("*") if (d / "device").exists() and (d / "device").read_text().strip() == "0x0005"]
    expected = any((b / "features").read_text().strip()[REPORTING_BIT : REPORTING_BIT + 1] == "1" for b in balloons)
    assert host_reclaims_free_pages() is expected


def _madvise_hugepage() -> bool:
    import numpy as np

    core = getattr(np, "_core", None) or np.core
    return bool(core.multiarray._get_madvise_hugepage())


def test_kernel_friendly_workers_get_numpys_switch(monkeypatch):
    from cluster.connect import kernel_friendly_nanny

    monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE", raising=False)  # the nanny may have left one in os.environ
    reclaims = host_reclaims_free_pages()
    with dask.config.set(kernel_friendly_nanny()):
        with (
            distributed.LocalCluster(n_workers=1, processes=True, threads_per_worker=1, dashboard_address=None) as lc,
            distributed.Client(lc) as c,
        ):
            (on,) = c.run(_madvise_hugepage).values()
            (env,) = c.run(lambda: os.environ.get("NUMPY_MADVISE_HUGEPAGE")).values()
    assert env == ("0" if reclaims else None)
    assert on is (not reclaims)


def test_a_value_in_dasks_pre_spawn_environment_is_kept(monkeypatch):
    from cluster.connect import kernel_friendly_nanny

    monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE", raising=False)
    with dask.config.set({"distributed.nanny.pre-spawn-environ": {"NUMPY_MADVISE_HUGEPAGE": "1", "X": "y"}}):
        env = kernel_friendly_nanny()["distributed.nanny.pre-spawn-environ"]
    assert env["NUMPY_MADVISE_HUGEPAGE"] == "1" and env["X"] == "y"
    with dask.config.set({"distributed.nanny.pre-spawn-environ": {"MALLOC_TRIM_THRESHOLD_": 65536}}):
        env = kernel_friendly_nanny()["distributed.nanny.pre-spawn-environ"]
    assert "MALLOC_TRIM_THRESHOLD_" not in env
    assert env.get("NUMPY_MADVISE_HUGEPAGE") == ("0" if host_reclaims_free_pages() else None)
