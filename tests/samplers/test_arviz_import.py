"""ArviZ's once-a-day stamp race on import (:func:`samplers.diagnostics._import_arviz`)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

RACE = textwrap.dedent(
    """
    import pathlib
    orig = pathlib.Path.replace
    lost = []

    def racy(self, target):
        # the first replace of the day loses the race: another process moves the same temporary file first
        if not lost and str(self).endswith("daily_warning.tmp"):
            lost.append(True)
            orig(self, target)
            raise FileNotFoundError(2, "No such file or directory", str(self))
        return orig(self, target)

    pathlib.Path.replace = racy
    import numpy as np
    from samplers.diagnostics import ess
    assert lost, "the stamp was not written: the race was not exercised"
    print(ess(np.random.default_rng(0).normal(size=400)))
    """
)


def test_importing_arviz_survives_losing_the_daily_stamp_race(tmp_path):
    """A fresh cache (no stamp for today): the first write's ``replace`` fails as it does when another
    process won the race; the diagnostics module still imports and works (it failed before the fix)."""
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", RACE], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert 200 < float(out.stdout.strip().splitlines()[-1]) <= 800
    assert (tmp_path / "arviz" / "daily_warning").exists()
