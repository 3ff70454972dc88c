"""Run every reproduction: each ``reproductions/*.py`` script that defines a top-level ``main()``.

``make reproduce`` calls this after the slow tests. Each script runs in its own Python process (so
one script's state, seeds or crash cannot affect another), from the repository root, and its output
streams to the terminal. A script fails if ``main()`` raises or returns a non-zero integer. The exit
status is the number of failed scripts (0: all ran).

Usage::

    python reproductions/run_all.py            # all of them, in file-name order
    python reproductions/run_all.py task1      # only scripts whose file name contains "task1"
    python reproductions/run_all.py --list     # list what would run
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

_RUNNER = (
    "import runpy, sys\n"
    "path = sys.argv[1]\n"
    "sys.argv = [path]  # scripts that parse sys.argv see no arguments: their defaults\n"
    "ns = runpy.run_path(path, run_name='reproduction')\n"
    "r = ns['main']()\n"
    "sys.exit(r if isinstance(r, int) and not isinstance(r, bool) else 0)\n"
)


def defines_main(path: Path) -> bool:
    """True if the file defines a top-level function ``main`` (checked without importing it)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError:
        return True  # let it run and fail loudly rather than be skipped silently
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "main" for n in tree.body)


def scripts(filters: list[str] | None = None) -> list[Path]:
    out = []
    for p in sorted(HERE.glob("*.py")):
        if p.name in ("run_all.py", "__init__.py") or p.name.startswith("_"):
            continue
        if filters and not any(f in p.name for f in filters):
            continue
        if defines_main(p):
            out.append(p)
    return out


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    listing = "--list" in args
    filters = [a for a in args if not a.startswith("--")]
    todo = scripts(filters)
    if listing:
        for p in todo:
            print(p.relative_to(ROOT))
        return 0
    if not todo:
        print("no reproduction scripts matched", file=sys.stderr)
        return 1
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("MPLBACKEND", "Agg")
    results = []
    for p in todo:
        print(f"\n=== {p.relative_to(ROOT)} ===", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call([sys.executable, "-c", _RUNNER, str(p)], cwd=ROOT, env=env)
        results.append((p, rc, time.perf_counter() - t0))
    print("\n=== summary ===")
    for p, rc, s in results:
        print(f"{'ok  ' if rc == 0 else 'FAIL'}  {p.relative_to(ROOT)}  ({s:.1f} s){'' if rc == 0 else f'  exit {rc}'}")
    return sum(rc != 0 for _, rc, _ in results)


if __name__ == "__main__":
    sys.exit(main())
