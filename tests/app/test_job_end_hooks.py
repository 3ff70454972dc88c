"""A job's outcome and its resource's change are written in one transaction (the race CI caught:
a client saw the fit job ``failed`` while its pool still said ``pending``), on SQLite and PostgreSQL:

* while the end hook runs, another connection still sees the job ``running``; once the job reads
  ``failed``, the hook's change is there too;
* a hook that raises is logged and the job is recorded ``failed`` all the same, without the hook's
  half-done change;
* cancelling a queued job runs its kind's hook (a queued pool fit that is cancelled says ``failed``).
"""

from __future__ import annotations

import time

import pytest
from sqlalchemy import select

from app.db import Database
from app.jobs import TERMINAL, JobRunner, handler, on_end, request_cancel
from app.models import JobRow, PoolRow, new_id


def _wait_terminal(db: Database, jid: str, timeout: float = 30.0) -> JobRow:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        with db.sessions() as s:
            job = s.get(JobRow, jid)
            if job is not None and job.state in TERMINAL:
                s.expunge(job)
                return job
        time.sleep(0.02)
    raise AssertionError(f"job {jid} did not end in {timeout} s")


def _run_one(db: Database, kind: str) -> JobRow:
    """Submit one job of ``kind``, run it on a fresh runner and return its ended row."""
    runner = JobRunner(db, 1, poll_seconds=0.01)
    with db.sessions() as s:
        jid = runner.submit(s, kind, {}, {}).id
    runner.start()
    try:
        return _wait_terminal(db, jid)
    finally:
        runner.stop()


@pytest.fixture
def db(db_url):
    d = Database.from_url(db_url)
    d.migrate()
    yield d
    d.dispose()


def test_the_resource_change_is_visible_with_the_failed_state_not_after(db):
    seen: dict[str, str] = {}

    @handler("test_end_atomic")
    def _boom(ctx):
        raise ValueError("the data cannot be fitted")

    @on_end("test_end_atomic")
    def _mark(s, jid, spec, state, error):
        with db.sessions() as other:  # another connection, as a polling client would have
            seen["job_from_outside"] = other.scalar(select(JobRow.state).where(JobRow.id == jid))
        s.get(JobRow, jid).result = {"marked_by_hook": state, "detail": error["detail"]}

    job = _run_one(db, "test_end_atomic")
    assert seen["job_from_outside"] == "running"  # the failure was not visible before the hook's change
    assert job.state == "failed" and job.error["status"] == 422
    assert job.result == {"marked_by_hook": "failed", "detail": "the data cannot be fitted"}


def test_a_hook_that_raises_leaves_the_job_failed_without_its_half_change(db, caplog):
    @handler("test_end_raises")
    def _boom(ctx):
        raise ValueError("bad input")

    @on_end("test_end_raises")
    def _broken(s, jid, spec, state, error):
        s.get(JobRow, jid).result = {"half": "done"}
        raise RuntimeError("the hook itself is broken")

    job = _run_one(db, "test_end_raises")
    assert job.state == "failed" and job.error["detail"] == "bad input"
    assert job.result is None
    assert "end hook of job" in caplog.text


def test_cancelling_a_queued_pool_fit_marks_its_pool(db):
    import app.pool_service  # noqa: F401  (registers the pool_fit hook)

    runner = JobRunner(db, 1, poll_seconds=0.01)  # never started: the job stays queued
    with db.sessions() as s:
        pool = PoolRow(id=new_id("pool"), method="linear", kind="probs", status="pending")
        s.add(pool)
        s.flush()
        jid = runner.submit(s, "pool_fit", {"pool_id": pool.id}, {}).id
        pid = pool.id
    with db.sessions() as s:
        assert request_cancel(s, jid).state == "cancelled"
    with db.sessions() as s:
        row = s.get(PoolRow, pid)
        assert row.status == "failed" and row.error == {"detail": "fit cancelled"}
