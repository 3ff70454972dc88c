"""The first call (issue 13 §5): after ``agora warmup`` a new process compiles no kernel for its first
aggregate and its first equilibrium (each kernel is loaded from ``NUMBA_CACHE_DIR``); the warm-up
covers every pool method, learnt pool and equilibrium method without failing."""

import json
import os
import shutil
import subprocess
import sys

from app.warm_cache import MANIFEST, SNAPSHOT_ENV
from app.warmup import warm


def _run(cache, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, *args], env=env, check=True, capture_output=True, text=True)


def test_after_the_warmup_a_new_process_compiles_nothing_for_its_first_calls(tmp_path):
    """From an empty cache (a fresh install): the warm-up compiles, then a new process's first aggregate
    and first equilibrium load every kernel they need.

    In a fresh clone ``make test`` has just run ``agora warmup`` from an empty cache (``make install``),
    and the suite's start-up copied that cache, checked file by file against the warm-up's manifest
    (``tests/conftest.py``): the test then checks that copy. Anywhere else (a cache that earlier tests
    added to) it runs its own warm-up from an empty cache first (about two minutes).
    """
    snapshot = os.environ.get(SNAPSHOT_ENV)
    if snapshot:
        shutil.copytree(snapshot, tmp_path, dirs_exist_ok=True)
    else:
        _run(tmp_path, "-m", "app.cli", "warmup")
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    assert manifest["from_empty"] and manifest["files"], "the warm-up recorded no cache"
    for shape in ((), ("20", "1000", "10"), ("3", "1000", "4096")):  # also many agents, many classes
        first = json.loads(_run(tmp_path, "-m", "app.first_calls", *shape).stdout)
        assert first["compilations"] == 0, (shape, first)


def test_every_warmup_call_succeeds():
    times = warm()
    assert len(times) >= 30 and all(t >= 0 for t in times.values()), {k: t for k, t in times.items() if t < 0}
