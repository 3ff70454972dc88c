"""/v1/jobs: background work's state, percent done, ETA, result; cancel."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from sqlalchemy.orm import Session

from ..deps import DbSession, Reader, Writer
from ..fastjson import FastRoute
from ..jobs import job_view, request_cancel
from ..models import JobRow
from ..pagination import Paging, page
from ..schemas import JobList, JobView
from ..tenancy import check_owner, job_owner, jobs_seen_by
from .common import not_found, problem_responses

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], route_class=FastRoute)
P = problem_responses(401, 403, 404, 422)


@router.get("", response_model=JobList, responses=P, summary="List jobs (newest first)")
def list_jobs(
    paging: Paging,
    session: DbSession,
    me: Reader,
    state: str | None = Query(None, pattern="^(queued|running|succeeded|failed|cancelled)$"),
) -> Any:
    where = jobs_seen_by(me) + ([] if state is None else [JobRow.state == state])
    rows, nxt = page(session, JobRow, paging, *where)
    return {"items": [job_view(r) for r in rows], "next_cursor": nxt}


@router.get("/{job_id}", response_model=JobView, responses=P, summary="A job: state, percent done, ETA, result")
def get_job(job_id: str, session: DbSession, me: Reader) -> Any:
    return job_view(_owned_job(session, job_id, me))


def _owned_job(session: Session, job_id: str, me: Any) -> JobRow:
    job = session.get(JobRow, job_id)
    if job is None:
        raise not_found("job", job_id)
    check_owner(me, job_owner(session, job), "job", job_id)
    return job


@router.post("/{job_id}/cancel", status_code=202, response_model=JobView, responses=P, summary="Ask a job to stop")
def cancel_job(job_id: str, session: DbSession, me: Writer) -> Any:
    """A queued job is cancelled at once; a running one stops at its next progress report. Only the
    job's owner (the key that started it; a competition's organiser) or an admin key may cancel."""
    _owned_job(session, job_id, me)
    return job_view(request_cancel(session, job_id))
