"""Job worker processes: background jobs run apart from the HTTP server.

``agora worker`` runs :func:`run_worker`: a :class:`app.jobs.JobRunner` on the configured database and
nothing else (no HTTP). Start as many as wanted, on this machine or on others sharing the database
(PostgreSQL; a SQLite file is for one machine). ``agora serve`` starts ``--job-processes`` of them
(default 1) beside the HTTP server with :class:`WorkerProcesses`, which restarts one that dies and
stops them with the server; a worker also stops when its parent dies (``PR_SET_PDEATHSIG`` on Linux,
and a check of its parent's pid elsewhere), so a killed server leaves no stray worker behind.

A worker may run at a lower CPU priority (``--nice``) so that on a small machine the HTTP server keeps
answering while a long job runs. Stopping (SIGTERM, SIGINT) interrupts the running jobs at their next
progress report; they go back to the queue for another worker.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time

log = logging.getLogger("agora.worker")

#: how long a stopping worker waits for its jobs to hand back before it exits anyway
STOP_SECONDS = 30.0


def _die_with(parent: int) -> None:
    """Ask Linux to send this process SIGTERM when ``parent`` exits (no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - no prctl: the pid check below suffices
        pass
    if os.getppid() != parent:  # the parent died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


def run_worker(threads: int | None = None, nice: int = 0, parent: int | None = None) -> int:
    """Run jobs until SIGTERM/SIGINT (or, with ``parent``, until that process is gone)."""
    from .db import Database
    from .jobs import JobRunner
    from .settings import get_settings

    settings = get_settings()
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # a plain flag, not a threading.Event: the handler runs in the main thread between two bytecodes,
    # and Event.set() there deadlocked when the main thread was inside Event.wait() holding the event's
    # lock (found: a stray worker stuck in three nested handlers, deaf to SIGTERM, its server long gone)
    stopping = [0]

    def _on_signal(*_: object) -> None:
        stopping[0] += 1
        if stopping[0] > 1:  # a second signal: stop now, the leases hand the jobs back
            os._exit(1)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _on_signal)
    if parent is not None:
        _die_with(parent)
    if nice:
        os.nice(nice)
    from . import main  # noqa: F401  (its routes import every module that registers a job handler)

    db = Database.from_url(settings.database_url)
    if settings.migrate_on_startup:
        db.migrate()
    runner = JobRunner(db, threads or settings.job_workers, settings.job_poll_seconds, settings.job_lease_seconds)
    runner.start()
    print(f"agora: job worker {runner.worker_id} running ({runner.workers} threads)", file=sys.stderr, flush=True)
    while not stopping[0]:
        time.sleep(0.2)  # a signal cuts the sleep short; the handler only sets the flag
        if parent is not None and os.getppid() != parent:
            break
    done = threading.Thread(target=runner.stop, daemon=True)
    done.start()
    done.join(STOP_SECONDS)
    if done.is_alive():
        # a job that never reaches a progress report would keep the interpreter alive at exit, which
        # joins the job threads (concurrent.futures registers that at exit): the worker then outlived
        # its server and ignored SIGTERM. Leave now; the job's lease expires and another worker takes it.
        log.warning("job worker: its jobs did not stop within %.0f s; exiting without them", STOP_SECONDS)
        sys.stderr.flush()
        os._exit(0)
    db.dispose()
    return 0


class WorkerProcesses:
    """``n`` job worker processes started by ``agora serve``: restarted when one dies, stopped with it."""

    def __init__(self, n: int, *, nice: int = 0, threads: int | None = None, env: dict[str, str] | None = None):
        self.n, self.nice, self.threads = n, nice, threads
        self.env = {**os.environ, **(env or {})}
        self.procs: list[subprocess.Popen] = []
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="agora-worker-watch", daemon=True)

    def _spawn(self) -> subprocess.Popen:
        cmd = [sys.executable, "-m", "app.cli", "worker", "--nice", str(self.nice), "--parent", str(os.getpid())]
        if self.threads:
            cmd += ["--threads", str(self.threads)]
        return subprocess.Popen(cmd, env=self.env)

    def start(self) -> WorkerProcesses:
        self.procs = [self._spawn() for _ in range(self.n)]
        self._watcher.start()
        return self

    def _watch(self) -> None:
        while not self._stop.wait(1.0):
            for i, p in enumerate(self.procs):
                if p.poll() is not None and not self._stop.is_set():
                    log.warning("job worker %d exited with %s; starting another", p.pid, p.returncode)
                    self.procs[i] = self._spawn()

    def stop(self, timeout: float = STOP_SECONDS + 5) -> None:
        self._stop.set()
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + timeout
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
