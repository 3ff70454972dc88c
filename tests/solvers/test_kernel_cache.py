"""numba's cache keyed by the sources (solvers/kernel_cache.py): a kernel whose callee changed in another
module is compiled again, not loaded stale."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from solvers import kernel_cache

REPO = Path(__file__).resolve().parents[2]

CALLER = """
from numba import njit

from .callee import f


@njit(cache=True)
def g(x):
    return 2 * f(x)
"""
CALLEE = """
from numba import njit


@njit(cache=True)
def f(x):
    return x + {step}
"""
RUN = """
import sys

if sys.argv[1] == "keyed":
    from solvers import kernel_cache

    kernel_cache.configure(root=sys.argv[2], packages=("pk",))
sys.path.insert(0, sys.argv[2])
from pk.caller import g

print(g(1))
"""


def _tree(root: Path, step: int) -> None:
    (root / "pk").mkdir(exist_ok=True)
    (root / "pk" / "__init__.py").write_text("")
    (root / "pk" / "caller.py").write_text(CALLER)
    (root / "pk" / "callee.py").write_text(CALLEE.format(step=step))


def _g_of_one(root: Path, cache: Path, mode: str) -> int:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(RUN), mode, str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return int(out.stdout.strip().splitlines()[-1])


def test_a_changed_callee_is_compiled_again_only_with_the_keyed_cache(tmp_path):
    results = {}
    for mode in ("plain", "keyed"):
        root, cache = tmp_path / mode / "src", tmp_path / mode / "cache"
        root.mkdir(parents=True)
        _tree(root, step=1)
        first = _g_of_one(root, cache, mode)
        _tree(root, step=2)  # the callee's module changes; the caller's file does not
        results[mode] = (first, _g_of_one(root, cache, mode))
    # the hazard itself, as numba has it: the caller's cache entry still holds f(x) = x + 1 (if numba
    # ever notices the callee, this line fails and kernel_cache.py can go)
    assert results["plain"] == (4, 4)
    assert results["keyed"] == (4, 6)
    # two source states of pk, two keyed folders under the user's folder (beside the one of Agora's own
    # sources, which importing solvers keys first)
    keyed = {p.name for p in (tmp_path / "keyed" / "cache").iterdir()} - {f"agora-{kernel_cache.source_digest()}"}
    assert len(keyed) == 2 and all(name.startswith("agora-") for name in keyed)


def test_the_digest_moves_with_what_compiled_code_can_read_and_only_with_it(tmp_path):
    _tree(tmp_path, step=1)
    pk = tmp_path / "pk"
    (pk / "constants.py").write_text("TINY = 1e-300\n")  # a pure-Python module a kernel module imports
    (pk / "caller.py").write_text(
        CALLER.replace("from .callee import f", "from .callee import f\nfrom .constants import TINY")
    )
    (pk / "estimator.py").write_text("from .caller import g\n")  # Python that calls the kernels
    assert kernel_cache.kernel_sources(tmp_path, ("pk",)) == sorted(
        pk / m for m in ("callee.py", "caller.py", "constants.py")
    )
    d1 = kernel_cache.source_digest(tmp_path, ("pk",))
    assert kernel_cache.source_digest(tmp_path, ("pk",)) == d1 and len(d1) == 16
    (pk / "estimator.py").write_text("from .caller import g\n\nSTEP = 2\n")
    (pk / "notes.txt").write_text("not a source")
    assert kernel_cache.source_digest(tmp_path, ("pk",)) == d1  # nothing a kernel reads
    (pk / "constants.py").write_text("TINY = 1e-200\n")
    d2 = kernel_cache.source_digest(tmp_path, ("pk",))
    assert d2 != d1  # a constant numba freezes into the caller
    (pk / "callee.py").write_text(CALLEE.format(step=2))
    assert kernel_cache.source_digest(tmp_path, ("pk",)) not in (d1, d2)


def test_agoras_kernel_sources_cover_every_compiled_function_and_leave_the_estimators_out():
    sources = {p.relative_to(REPO).as_posix() for p in kernel_cache.kernel_sources()}
    for pkg in kernel_cache.PACKAGES:
        for path in (REPO / pkg).rglob("*.py"):
            if re.search(r"^\s*@(?:numba\.)?(?:njit|jit|vectorize|guvectorize)\b", path.read_text(), re.M):
                assert path.relative_to(REPO).as_posix() in sources, path
    assert {"aggregators/renyi_hessian.py", "solvers/kernels/fastexp.py", "markets/kernels/potential.py"} <= sources
    assert not {"aggregators/renyi_pool.py", "aggregators/logpool.py", "markets/estimator.py"} & sources


def test_keying_twice_keeps_one_level_and_prune_spares_other_projects(tmp_path, monkeypatch):
    from numba.core import config

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(config, "CACHE_DIR", config.CACHE_DIR)
    first = kernel_cache.configure()
    assert first is not None and first.parent == tmp_path
    assert kernel_cache.configure() == first  # the keyed folder is not keyed again
    assert os.environ["NUMBA_CACHE_DIR"] == config.CACHE_DIR == str(first)
    assert kernel_cache.base_dir() == tmp_path

    stale = tmp_path / "agora-0123456789abcdef"
    other = tmp_path / "someone-elses-project"
    for d in (first, stale, other):
        d.mkdir(exist_ok=True)
        (d / "x.nbi").write_bytes(b"")
    assert kernel_cache.prune(tmp_path, first) == [stale]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([first.name, other.name])


def test_without_the_variable_numba_keeps_its_own_default(monkeypatch):
    from numba.core import config

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(config, "CACHE_DIR", "")
    assert kernel_cache.configure() is None
    assert config.CACHE_DIR == "" and "NUMBA_CACHE_DIR" not in os.environ


def test_unreadable_sources_leave_the_cache_unkeyed_with_a_warning(tmp_path, monkeypatch):
    from numba.core import config

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path))
    (tmp_path / "pk").mkdir()
    (tmp_path / "pk" / "k.py").write_text("import numba\n")
    (tmp_path / "pk" / "k.py").chmod(0)
    if os.access(tmp_path / "pk" / "k.py", os.R_OK):  # root reads anything: make the read fail another way
        monkeypatch.setattr(kernel_cache, "source_digest", lambda *a: (_ for _ in ()).throw(PermissionError("denied")))
    with pytest.warns(UserWarning, match="not keyed"):
        assert kernel_cache.configure(root=tmp_path, packages=("pk",)) is None
    assert os.environ["NUMBA_CACHE_DIR"] == config.CACHE_DIR == str(tmp_path)
