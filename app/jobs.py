"""Background jobs: fits, sweeps, trainings and solves too big to answer within the request.

The database is the queue. Creating a job stores its spec (JSON) and input arrays (``.npy`` blobs)
and answers 202 with ``Location: /v1/jobs/{id}``. A :class:`JobRunner` runs in each job worker
process (``agora worker``, :mod:`app.worker`; ``agora serve`` starts one beside the HTTP server, and an
app built by ``create_app`` alone runs one in its own process). It polls for queued jobs and claims
them with one statement, ``UPDATE jobs SET state='running', worker=... WHERE id IN (SELECT id ... WHERE
state='queued' ORDER BY created_at LIMIT n FOR UPDATE SKIP LOCKED) AND state='queued' RETURNING id``:
on PostgreSQL ``SKIP LOCKED`` lets concurrent workers pass over each other's rows instead of waiting;
SQLite has no row locks (the clause is left out) but runs one writing statement at a time, so the
conditional update is the claim and no job is claimed twice. The claimant's ``host:pid`` is recorded
on the job. The handler runs in a thread with a progress callback (:mod:`solvers.progress`) that

* stores the fraction done, an ETA (the handler's own, given through ``JobContext.eta``, else
  elapsed x (1 - f) / f) and a heartbeat (throttled), and
* raises :class:`solvers.progress.Cancelled` once a cancel was requested (``POST /v1/jobs/{id}/cancel``):

the job row is the channel between the HTTP process and the worker, which may be on another machine.

States: ``queued -> running -> succeeded | failed | cancelled``. The result (JSON, plus whatever the
handler stored, e.g. a pool) is kept. A job interrupted by a shutdown goes back to ``queued``; a job
whose worker died (no heartbeat for ``lease_seconds``, ``AGORA_JOB_LEASE_SECONDS``) is re-queued by any
live worker, and a worker that finds its job re-queued under it (it stalled past its lease) drops it;
so a crash loses no acknowledged job. Handlers are registered by kind with :func:`handler`; other
parts of the service (competitions) register theirs the same way.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import numpy as np
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from solvers.progress import Cancelled

from .arrays import delete_blobs, load_blobs, save_blob
from .db import Database
from .errors import ProblemError
from .models import JobRow, aware, new_id, utcnow

log = logging.getLogger("agora.jobs")

STALE_SECONDS = 20.0
HEARTBEAT_SECONDS = 2.0
FLUSH_SECONDS = 0.25
MAX_ATTEMPTS = 3
TERMINAL = ("succeeded", "failed", "cancelled")


@dataclass
class JobContext:
    """What a handler gets: the spec, the input arrays, the database, a progress callback, and
    ``eta``: where a handler that knows better hands its own estimate of the seconds left (None:
    none yet), stored instead of the straight-line extrapolation at the next progress report."""

    job_id: str | None
    spec: dict[str, Any]
    inputs: dict[str, np.ndarray]
    db: Database
    progress: Callable[[float], None] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    eta: Callable[[float | None], None] | None = None


Handler = Callable[[JobContext], dict[str, Any]]
_HANDLERS: dict[str, Handler] = {}


def handler(kind: str) -> Callable[[Handler], Handler]:
    """Register the function that runs jobs of ``kind`` (also used for the synchronous path)."""

    def deco(fn: Handler) -> Handler:
        _HANDLERS[kind] = fn
        return fn

    return deco


def run_inline(kind: str, spec: dict[str, Any], inputs: dict[str, np.ndarray], db: Database) -> dict[str, Any]:
    """Run a handler now, in the caller's thread (small requests)."""
    return _HANDLERS[kind](JobContext(None, spec, inputs, db, None))


class _Stop(Cancelled):
    """Internal: the runner is shutting down; the job goes back to the queue."""


class _Lost(Cancelled):
    """Internal: the job was re-queued under this worker (it missed its lease); another one owns it."""


def worker_id() -> str:
    """How a job records the process that claimed it: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


class JobRunner:
    """Runs queued jobs of one database in a thread pool; one per job worker process."""

    def __init__(
        self, db: Database, workers: int = 2, poll_seconds: float = 0.5, lease_seconds: float = STALE_SECONDS
    ) -> None:
        self.db = db
        self.workers = max(1, workers)
        self.poll_seconds = poll_seconds
        self.lease_seconds = lease_seconds
        self.worker_id = worker_id()
        self.pool = ThreadPoolExecutor(self.workers, thread_name_prefix="agora-job")
        self._running: set[str] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- creation -----------------------------------------------------------------------------------
    def submit(
        self,
        session: Session,
        kind: str,
        spec: dict[str, Any],
        inputs: dict[str, np.ndarray],
        *,
        resource_type: str | None = None,
        resource_id: str | None = None,
        job_id: str | None = None,
        owner: str | None = None,
    ) -> JobRow:
        """Persist a queued job (commits ``session``) and wake the poller."""
        if kind not in _HANDLERS:
            raise ValueError(f"no handler for job kind {kind!r}")
        job = JobRow(
            id=job_id or new_id("job"),
            kind=kind,
            spec=spec,
            resource_type=resource_type,
            resource_id=resource_id,
            owner=owner,
        )
        session.add(job)
        for name, arr in inputs.items():
            save_blob(session, "job", job.id, name, arr)
        session.commit()
        self._wake.set()
        return job

    # -- the poller ---------------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="agora-job-poller", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop claiming, interrupt running jobs (they return to the queue), wait for threads."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.pool.shutdown(wait=True, cancel_futures=True)

    def _loop(self) -> None:
        last_beat = 0.0
        while not self._stop.is_set():
            try:
                now = time.monotonic()
                if now - last_beat > min(HEARTBEAT_SECONDS, self.lease_seconds / 10):
                    self._heartbeat()
                    self._requeue_stale()
                    last_beat = now
                self._claim_some()
            except Exception:  # the database may be briefly unavailable; keep polling
                log.exception("job poller")
            self._wake.wait(self.poll_seconds)
            self._wake.clear()

    def _heartbeat(self) -> None:
        with self._lock:
            ids = list(self._running)
        if not ids:
            return
        with self.db.sessions() as s:
            s.execute(
                update(JobRow)
                .where(JobRow.id.in_(ids), JobRow.state == "running", JobRow.worker == self.worker_id)
                .values(heartbeat=utcnow())
            )
            s.commit()

    def _requeue_stale(self) -> None:
        cutoff = utcnow() - timedelta(seconds=self.lease_seconds)
        with self._lock:
            mine = set(self._running)
        with self.db.sessions() as s:
            stale = s.scalars(select(JobRow.id).where(JobRow.state == "running", JobRow.heartbeat < cutoff)).all()
            for jid in stale:
                if jid not in mine:
                    s.execute(
                        update(JobRow)
                        .where(JobRow.id == jid, JobRow.state == "running", JobRow.heartbeat < cutoff)
                        .values(state="queued")
                    )
            s.commit()

    def _claim_some(self) -> None:
        with self._lock:
            free = self.workers - len(self._running)
        if free <= 0:
            return
        if self._stop.is_set():
            return
        oldest = (
            select(JobRow.id)
            .where(JobRow.state == "queued")
            .order_by(JobRow.created_at)
            .limit(free)
            .with_for_update(skip_locked=True)  # PostgreSQL; SQLite renders no clause (see the module doc)
        )
        now = utcnow()
        claim = (
            update(JobRow)
            .where(JobRow.id.in_(oldest.scalar_subquery()), JobRow.state == "queued")
            .values(
                state="running",
                started_at=now,
                heartbeat=now,
                attempts=JobRow.attempts + 1,
                worker=self.worker_id,
                progress=0.0,
                eta_seconds=None,
            )
            .returning(JobRow.id)
            .execution_options(synchronize_session=False)
        )
        with self.db.sessions() as s:
            claimed = list(s.execute(claim).scalars())
            s.commit()
        for jid in claimed:
            with self._lock:
                self._running.add(jid)
            self.pool.submit(self._run, jid)

    # -- running one job ----------------------------------------------------------------------------
    def _run(self, jid: str) -> None:
        try:
            self._execute(jid)
        except Exception:  # last resort: a runner thread must survive whatever one job does
            log.exception("job %s", jid)
        finally:
            with self._lock:
                self._running.discard(jid)
            self._wake.set()

    def _finish(
        self, jid: str, drop_inputs: bool = False, *, end: tuple[str, dict[str, Any]] | None = None, **values: Any
    ) -> bool:
        """Write the job's outcome (and, with ``drop_inputs``, delete its input arrays in the same
        transaction), unless it was re-queued under this worker meanwhile (then False).

        ``end=(kind, spec)`` also runs the kind's end hook (which marks the job's resource failed or
        cancelled) in that same transaction: whoever sees the job ``failed`` sees its pool, market or
        aggregation run say so too. A hook that raises is logged and the job's outcome is written
        without it."""
        with self.db.sessions() as s:
            written = s.execute(
                update(JobRow)
                .where(JobRow.id == jid, JobRow.state == "running", JobRow.worker == self.worker_id)
                .values(**values)
                .returning(JobRow.id)
                .execution_options(synchronize_session=False)
            ).first()
            if written is not None and drop_inputs:
                delete_blobs(s, "job", jid)
            if written is not None and end is not None:
                if not _on_end(s, jid, end[0], end[1], values["state"], values.get("error")):
                    s.rollback()
                    return self._finish(jid, drop_inputs, **values)
            s.commit()
            return written is not None

    def _execute(self, jid: str) -> None:
        with self.db.sessions() as s:
            job = s.get(JobRow, jid)
            if job is None:
                return
            if job.cancel_requested:
                self._finish(
                    jid, end=(job.kind, dict(job.spec or {})), state="cancelled", finished_at=utcnow(), eta_seconds=None
                )
                return
            if job.attempts > MAX_ATTEMPTS:
                self._finish(
                    jid,
                    end=(job.kind, dict(job.spec or {})),
                    state="failed",
                    finished_at=utcnow(),
                    error={"detail": f"gave up after {MAX_ATTEMPTS} attempts (the server stopped during each)"},
                )
                return
            kind, spec = job.kind, dict(job.spec or {})
            inputs = load_blobs(s, "job", jid)
        fn = _HANDLERS.get(kind)
        if fn is None:
            self._finish(
                jid,
                end=(kind, spec),
                state="failed",
                finished_at=utcnow(),
                error={"detail": f"no handler for job kind {kind!r}"},
            )
            return
        t0 = time.monotonic()
        last = [0.0]
        told: dict[str, float | None] = {}  # the handler's own estimate, if it gives one

        def eta_from_handler(seconds: float | None) -> None:
            told["eta"] = seconds

        def progress(f: float) -> None:
            if self._stop.is_set():
                raise _Stop()
            now = time.monotonic()
            if now - last[0] < FLUSH_SECONDS and f < 1.0:
                return
            last[0] = now
            f = min(1.0, max(0.0, float(f)))
            elapsed = now - t0
            eta = told["eta"] if "eta" in told else (elapsed * (1.0 - f) / f if f > 0.005 else None)
            with self.db.sessions() as s2:
                row = s2.execute(select(JobRow.cancel_requested, JobRow.worker).where(JobRow.id == jid)).first()
                s2.execute(
                    update(JobRow)
                    .where(JobRow.id == jid, JobRow.worker == self.worker_id)
                    .values(progress=f, eta_seconds=eta, heartbeat=utcnow())
                )
                s2.commit()
            if row is None or row.worker != self.worker_id:
                raise _Lost(f"job {jid} was re-queued and claimed by {row.worker if row else 'nobody'}")
            if row.cancel_requested:
                raise Cancelled(f"job {jid} cancelled")

        ctx = JobContext(jid, spec, inputs, self.db, progress, eta=eta_from_handler)
        try:
            result = fn(ctx)
        except _Stop:
            self._finish(jid, state="queued", progress=0.0, eta_seconds=None)
            return
        except _Lost:
            log.warning("job %s: lost its lease (re-queued while this worker stalled); dropped here", jid)
            return
        except Cancelled:
            self._finish(jid, end=(kind, spec), state="cancelled", finished_at=utcnow(), eta_seconds=None)
            return
        except ProblemError as exc:
            err = {"status": exc.status, "detail": exc.detail, "errors": exc.errors}
            self._finish(jid, end=(kind, spec), state="failed", finished_at=utcnow(), eta_seconds=None, error=err)
            return
        except (ValueError, TypeError, ArithmeticError, np.linalg.LinAlgError) as exc:
            err = {"status": 422, "detail": str(exc) or exc.__class__.__name__}
            if hasattr(exc, "to_dict"):
                err["errors"] = [exc.to_dict()]
            self._finish(jid, end=(kind, spec), state="failed", finished_at=utcnow(), eta_seconds=None, error=err)
            return
        except Exception as exc:  # last resort: any other failure is recorded on the job, not lost
            log.exception("job %s (%s) crashed", jid, kind)
            err = {"status": 500, "detail": f"internal error ({exc.__class__.__name__}); it has been logged"}
            self._finish(jid, end=(kind, spec), state="failed", finished_at=utcnow(), eta_seconds=None, error=err)
            return
        # inputs are no longer needed once the result is kept
        self._finish(jid, True, state="succeeded", progress=1.0, eta_seconds=0.0, finished_at=utcnow(), result=result)


_END_HOOKS: dict[str, Callable[[Session, str, dict[str, Any], str, dict[str, Any] | None], None]] = {}


def on_end(kind: str):
    """Register a hook called when a job of ``kind`` fails or is cancelled (to mark its resource).

    The hook gets the open session of the transaction that writes the job's outcome and must not
    commit: the job's state and its resource's change are written together."""

    def deco(fn):
        _END_HOOKS[kind] = fn
        return fn

    return deco


def _on_end(s: Session, jid: str, kind: str, spec: dict[str, Any], state: str, error: dict[str, Any] | None) -> bool:
    """Run ``kind``'s end hook in ``s``; False (logged) when it raised."""
    fn = _END_HOOKS.get(kind)
    if fn is None:
        return True
    try:
        fn(s, jid, spec, state, error)
        s.flush()
    except Exception:  # last resort: a failing hook must not hide the job's own outcome
        log.exception("end hook of job %s", jid)
        return False
    return True


def request_cancel(session: Session, jid: str) -> JobRow:
    job = session.get(JobRow, jid)
    if job is None:
        raise ProblemError(404, f"no job {jid!r}", field="job_id", reason="not found")
    if job.state == "queued":
        kind, spec = job.kind, dict(job.spec or {})
        job.state = "cancelled"
        job.finished_at = utcnow()
        job.cancel_requested = True
        if not _on_end(session, jid, kind, spec, "cancelled", None):
            session.rollback()  # the job is cancelled all the same; its resource keeps what it had
            job = session.get(JobRow, jid)
            assert job is not None
            job.state, job.finished_at, job.cancel_requested = "cancelled", utcnow(), True
    elif job.state == "running":
        job.cancel_requested = True
    session.commit()
    return job


def job_view(job: JobRow) -> dict[str, Any]:
    """The public representation of a job."""
    return {
        "id": job.id,
        "kind": job.kind,
        "state": job.state,
        "progress": float(job.progress or 0.0),
        "percent": round(100.0 * float(job.progress or 0.0), 1),
        "eta_seconds": job.eta_seconds,
        "cancel_requested": bool(job.cancel_requested),
        "resource_type": job.resource_type,
        "resource_id": job.resource_id,
        "created_at": aware(job.created_at),
        "started_at": aware(job.started_at),
        "finished_at": aware(job.finished_at),
        "result": job.result,
        "error": job.error,
        "worker": job.worker,
        "links": {
            "self": f"/v1/jobs/{job.id}",
            "cancel": f"/v1/jobs/{job.id}/cancel",
            **({"resource": f"/v1/{job.resource_type}s/{job.resource_id}"} if job.resource_type else {}),
        },
    }
