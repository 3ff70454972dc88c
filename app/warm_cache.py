"""What ``agora warmup`` left in ``NUMBA_CACHE_DIR``, recorded so it can be checked later (issue 13 §5).

Standard library only: the test suite's start-up reads it before any kernel is imported.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

#: written into ``NUMBA_CACHE_DIR`` by ``agora warmup``: every cache file and its SHA-256
MANIFEST = "agora-warmup.json"
#: the environment variable naming a checked copy of such a cache (the test suite's start-up sets it)
SNAPSHOT_ENV = "AGORA_WARM_SNAPSHOT"


def _digests(cache_dir: Path) -> dict[str, str]:
    return {
        str(p.relative_to(cache_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(cache_dir.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }


def write_manifest(cache_dir: Path, from_empty: bool) -> None:
    """Record what the warm-up left in ``cache_dir``: each file's digest, and whether the warm-up began
    from an empty cache (only then is the cache exactly the warm-up's work)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    (cache_dir / MANIFEST).write_text(json.dumps({"from_empty": from_empty, "files": _digests(cache_dir)}))


def snapshot(cache_dir: Path, dest: Path) -> bool:
    """Copy ``cache_dir`` into ``dest`` if it is still exactly what a warm-up from an empty cache left
    (every file as the manifest recorded it, none added); ``False`` (and nothing copied) otherwise.

    The cold-start test uses it to check ``make install``'s own warm-up instead of compiling a second one
    (two minutes of CI); anything else (a cache that tests or a later warm-up have added to) sends the
    test back to a warm-up of its own.
    """
    try:
        manifest = json.loads((cache_dir / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    if not manifest.get("from_empty") or manifest.get("files") != _digests(cache_dir):
        return False
    shutil.copytree(cache_dir, dest, dirs_exist_ok=True)
    return True
