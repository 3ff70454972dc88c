"""numba's on-disk cache, keyed by the sources it was compiled from (issue 13 §5).

numba keys a cached kernel by its own file's timestamp and size only. A kernel that calls a kernel of
another module compiles the callee into itself, so after the callee's module changes the caller's cache
entry still holds the old callee, and nothing notices: benchmarks have timed old code and tests have seen
old answers that way (README, "Compiled kernels and their cache").

When ``NUMBA_CACHE_DIR`` is set, :func:`configure` points numba at ``$NUMBA_CACHE_DIR/agora-<digest>``,
where ``<digest>`` is a SHA-256 of every ``.py`` file of the packages that hold kernels
(:data:`PACKAGES`): any change to any of them (a kernel, a constant a kernel reads, a pure-Python file,
the cost of a simple rule) starts an empty directory, and a cache built from other sources is never read.
``agora warmup`` fills the new directory and :func:`prune` removes the others.

Decisions:

* Importing this module runs :func:`configure` once. ``solvers/__init__.py`` imports it, and every other
  package of :data:`PACKAGES` imports it first thing in its ``__init__``, so it runs before any
  ``@njit(cache=True)`` decorator: numba fixes a kernel's cache folder when the decorator runs.
* :func:`configure` sets both ``numba.config.CACHE_DIR`` and the environment variable: numba re-reads its
  ``NUMBA_*`` variables when one of them changes (and would then go back to the unkeyed folder), and child
  processes (Dask workers, the service's workers) inherit the keyed folder. A folder already keyed by the
  same digest is kept as it is, so keying twice is harmless.
* Without ``NUMBA_CACHE_DIR`` nothing changes: numba caches beside each source in ``__pycache__``, keyed
  by that file alone (the hazard remains there; ``make`` always sets the variable).

Standard library only, but for the one import of numba's config in :func:`configure`.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

#: the top-level packages whose sources key the cache (every package that holds a compiled kernel)
PACKAGES = ("solvers", "aggregators", "markets", "graphical", "samplers")
#: prefix of a keyed cache folder's name
PREFIX = "agora-"
_KEYED = re.compile(rf"^{PREFIX}[0-9a-f]{{16}}$")
ENV = "NUMBA_CACHE_DIR"


def source_digest(root: Path | None = None, packages: tuple[str, ...] = PACKAGES) -> str:
    """The first 16 hex digits of a SHA-256 over each ``.py`` file of ``packages`` under ``root`` (its
    path relative to ``root`` and its bytes, in sorted order); ``root`` defaults to the folder that holds
    this package."""
    root = Path(__file__).resolve().parents[1] if root is None else Path(root)
    h = hashlib.sha256()
    for name in packages:
        for path in sorted((root / name).rglob("*.py")):
            h.update(str(path.relative_to(root)).encode())
            h.update(b"\0")
            h.update(path.read_bytes())
            h.update(b"\0")
    return h.hexdigest()[:16]


def base_dir(cache_dir: str | os.PathLike | None = None) -> Path | None:
    """The user's cache folder: ``cache_dir`` (default ``$NUMBA_CACHE_DIR``) without a keyed last part."""
    value = os.environ.get(ENV) if cache_dir is None else cache_dir
    if not value:
        return None
    path = Path(value)
    return path.parent if _KEYED.match(path.name) else path


def keyed_dir(base: Path, digest: str) -> Path:
    return Path(base) / f"{PREFIX}{digest}"


def configure(root: Path | None = None, packages: tuple[str, ...] = PACKAGES) -> Path | None:
    """Point numba's cache at the folder keyed by the current sources (see the module's docstring);
    returns that folder, or ``None`` (nothing changed) without ``NUMBA_CACHE_DIR``."""
    base = base_dir()
    if base is None:
        return None
    target = keyed_dir(base, source_digest(root, packages))
    os.environ[ENV] = str(target)
    from numba.core import config

    config.CACHE_DIR = str(target)
    return target


def prune(base: Path, keep: Path) -> list[Path]:
    """Remove the keyed folders in ``base`` other than ``keep`` (caches of other sources); returns them.
    Leaves everything else in ``base`` alone (it may hold other projects' numba caches)."""
    removed: list[Path] = []
    if not Path(base).is_dir():
        return removed
    for child in sorted(Path(base).iterdir()):
        if child.is_dir() and _KEYED.match(child.name) and child.resolve() != Path(keep).resolve():
            shutil.rmtree(child, ignore_errors=True)
            removed.append(child)
    return removed


configure()
