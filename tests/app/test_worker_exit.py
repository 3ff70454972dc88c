"""A job worker process leaves when it is told to, even while a job never reaches a progress report.

A stopping worker interrupts its jobs at their next progress report; a job that has none for a long
time (a stuck library call) used to keep the process alive for ever, because the interpreter joins
every non-daemon thread at exit: a worker started by ``agora serve`` then outlived its dead server
and ignored SIGTERM (found as a stray process competing for the CI machine's two cores). Real
processes, a real SQLite database.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from .conftest import PY, REPO

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX process tree")

#: registers a job kind that sleeps without progress reports, queues one, runs a worker on it
SCRIPT = r"""
import os, sys, time
os.environ["DATABASE_URL"] = "sqlite:///" + sys.argv[1]
from app import jobs, worker
from app.db import Database

@jobs.handler("test.stuck")
def _stuck(ctx):
    open(sys.argv[2], "w").write(str(os.getpid()))
    while True:
        time.sleep(0.05)

worker.STOP_SECONDS = 2.0
db = Database.from_url(os.environ["DATABASE_URL"])
db.migrate()
with db.sessions() as s:
    jobs.JobRunner(db, 1, 0.1, 60.0).submit(s, "test.stuck", {}, {})
db.dispose()
sys.exit(worker.run_worker(1, 0, parent=os.getppid()))
"""


def _wait_for(path, timeout=120.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if path.exists() and path.read_text():
            return int(path.read_text())
        time.sleep(0.1)
    raise AssertionError("the stuck job never started")


def _gone(pid: int, timeout: float) -> bool:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def _reap(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_sigterm_stops_a_worker_whose_job_never_reports(tmp_path):
    started = tmp_path / "pid"
    proc = subprocess.Popen([PY, "-c", SCRIPT, str(tmp_path / "w.db"), str(started)], cwd=REPO)
    try:
        assert _wait_for(started) == proc.pid
        proc.terminate()
        assert proc.wait(30) == 0  # the 2 s grace, then out without the stuck thread
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_worker_leaves_when_its_parent_is_killed(tmp_path):
    """The parent (here a shell standing in for ``agora serve``) dies by SIGKILL: the worker gets
    SIGTERM from PR_SET_PDEATHSIG (or sees its parent pid change) and exits although its job is stuck."""
    started = tmp_path / "pid"
    shell = subprocess.Popen(
        ["/bin/sh", "-c", f'"{PY}" -c "$0" "$1" "$2"; sleep 600', SCRIPT, str(tmp_path / "w.db"), str(started)],
        cwd=REPO,
    )
    worker = None
    try:
        worker = _wait_for(started)
        shell.kill()
        shell.wait(10)
        assert _gone(worker, 30.0), "the worker outlived its parent"
    finally:
        if worker is not None:
            _reap(worker)
        if shell.poll() is None:
            shell.kill()
