"""Suite-wide settings.

Property tests (hypothesis, schemathesis) run derandomized by default: the examples come from a
seed fixed per test, so CI is reproducible and a failure on one machine fails on every machine.
To explore new random examples locally (how the online-training bug in
``test_newton_from_a_stale_warm_start_with_a_nearly_bankrupt_agent`` was found), run with
``HYPOTHESIS_PROFILE=explore``.
"""

import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import settings

from app.warm_cache import SNAPSHOT_ENV, snapshot

settings.register_profile("agora", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "agora"))


def pytest_configure(config):
    """Before any test compiles a kernel into the shared ``NUMBA_CACHE_DIR`` (and before xdist starts its
    workers, which inherit the environment), copy the cache if it is still exactly what a warm-up from an
    empty cache left; the cold-start test then checks that warm-up instead of running a second one."""
    if hasattr(config, "workerinput") or SNAPSHOT_ENV in os.environ or not os.environ.get("NUMBA_CACHE_DIR"):
        return
    dest = Path(tempfile.mkdtemp(prefix="agora-warm-cache-"))
    if snapshot(Path(os.environ["NUMBA_CACHE_DIR"]), dest):
        os.environ[SNAPSHOT_ENV] = str(dest)
        config.add_cleanup(lambda: shutil.rmtree(dest, ignore_errors=True))
    else:
        dest.rmdir()
