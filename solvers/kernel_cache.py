"""numba's on-disk cache, keyed by the sources it was compiled from (issue 13 §5).

numba keys a cached kernel by its own file's timestamp and size only. A kernel that calls a kernel of
another module compiles the callee into itself, so after the callee's module changes the caller's cache
entry still holds the old callee, and nothing notices: benchmarks have timed old code and tests have seen
old answers that way (README, "Compiled kernels and their cache").

When ``NUMBA_CACHE_DIR`` is set, :func:`configure` points numba at ``$NUMBA_CACHE_DIR/agora-<digest>``,
where ``<digest>`` is a SHA-256 of the sources compiled code can depend on (:func:`kernel_sources`): every
module of :data:`PACKAGES` that imports numba, and every module of those packages that such a module
imports, transitively (a kernel's callees and the module constants numba freezes into it). A change to
any of them starts an empty folder, and a cache built from other sources is never read; a change to a
module outside that set (``renyi_pool.py``, the estimators, the service) keeps the cache. ``agora
warmup`` fills the new folder and :func:`prune` removes the others.

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
import warnings
from pathlib import Path

#: the top-level packages whose sources key the cache (every package that holds a compiled kernel)
PACKAGES = ("solvers", "aggregators", "markets", "graphical", "samplers")
#: prefix of a keyed cache folder's name
PREFIX = "agora-"
_KEYED = re.compile(rf"^{PREFIX}[0-9a-f]{{16}}$")
ENV = "NUMBA_CACHE_DIR"


_NUMBA = re.compile(r"^[ \t]*(?:import|from)[ \t]+numba\b", re.M)
_FROM = re.compile(r"^[ \t]*from[ \t]+([.\w]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w.]+)", re.M)


def _imports(path: Path, text: str, files: dict[tuple[str, ...], Path], root: Path) -> set[Path]:
    """The files of ``files`` (keyed by module path) that ``path`` imports: ``from a.b import c`` is
    ``a/b/c.py`` when ``c`` is a module, else ``a/b.py`` (or ``a/b/__init__.py``); relative imports
    resolved. Package ``__init__`` files passed through on the way are not dependencies of compiled
    code (a kernel can only read the names it imports)."""
    package = path.relative_to(root).parent.parts
    found: set[Path] = set()
    for mod, names in _FROM.findall(text):
        dots = len(mod) - len(mod.lstrip("."))
        parts = tuple(p for p in mod.lstrip(".").split(".") if p)
        if dots:
            parts = package[: len(package) - (dots - 1)] + parts
        listed = re.sub(r"#[^\n]*", "", names).replace("(", " ").replace(")", " ").split(",")
        wanted = [n.split()[0] for n in listed if n.split()]
        rest = False
        for name in wanted:
            sub = files.get(parts + (name,))
            if sub is not None:
                found.add(sub)
            else:
                rest = True
        if rest and parts in files:
            found.add(files[parts])
    for mod in _IMPORT.findall(text):
        parts = tuple(mod.split("."))
        if parts in files:
            found.add(files[parts])
    return found


def kernel_sources(root: Path | None = None, packages: tuple[str, ...] = PACKAGES) -> list[Path]:
    """The ``.py`` files of ``packages`` under ``root`` that compiled code can depend on: those that
    import numba, and (transitively) every file of ``packages`` they import; sorted."""
    root = Path(__file__).resolve().parents[1] if root is None else Path(root)
    texts = {p: p.read_bytes().decode("utf-8", "replace") for name in packages for p in (root / name).rglob("*.py")}
    files = {}
    for p in texts:
        parts = p.relative_to(root).with_suffix("").parts
        files[parts[:-1] if parts[-1] == "__init__" else parts] = p
    todo = [p for p, t in texts.items() if _NUMBA.search(t)]
    keep: set[Path] = set(todo)
    while todo:
        path = todo.pop()
        for dep in _imports(path, texts[path], files, root):
            if dep not in keep:
                keep.add(dep)
                todo.append(dep)
    return sorted(keep)


def source_digest(root: Path | None = None, packages: tuple[str, ...] = PACKAGES) -> str:
    """The first 16 hex digits of a SHA-256 over :func:`kernel_sources` (each file's path relative to
    ``root`` and its bytes, in sorted order); ``root`` defaults to the folder that holds this package."""
    root = Path(__file__).resolve().parents[1] if root is None else Path(root)
    h = hashlib.sha256()
    for path in kernel_sources(root, packages):
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
    returns that folder, or ``None`` (nothing changed) without ``NUMBA_CACHE_DIR``, or when the sources
    cannot be read (an install without its ``.py`` files): then a warning says the cache is not keyed,
    and the library still imports."""
    base = base_dir()
    if base is None:
        return None
    try:
        digest = source_digest(root, packages)
    except OSError as e:
        warnings.warn(
            f"Agora: numba's cache is not keyed by the sources ({e}); see solvers/kernel_cache.py", stacklevel=2
        )
        return None
    target = keyed_dir(base, digest)
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
