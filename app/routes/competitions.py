"""/v1/competitions: competitions whose submissions are aggregated (seed 000, section 2.7.3).

Authentication: organisers use an API key (``write`` scope to create a competition; the key that
created it is its organiser; an ``admin`` key is organiser of every competition). Participants
use the token returned once by ``POST /v1/competitions/{id}/participants`` (prefix ``agp_``), in
the same ``Authorization: Bearer`` header. Reading a competition and its public leaderboard needs
no key. What each caller sees is decided in :mod:`app.competitions.schemas`.
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..arrays import load_blob
from ..competitions import parsing
from ..competitions import schemas as views
from ..competitions import service as svc
from ..competitions.models import AggregationRun, Competition, Participant, Submission
from ..competitions.parsing import SubmissionRejected
from ..competitions.ratelimit import RateLimiter
from ..deps import CallerDep as Caller
from ..deps import DbSession
from ..errors import PROBLEM, ProblemError, forbidden, problem_body, unauthenticated
from ..models import Blob, JobRow, aware, utcnow
from .common import array_in, problem_responses

router = APIRouter(prefix="/v1/competitions", tags=["competitions"])
P = problem_responses(401, 403, 404, 409, 413, 422, 429)
MAX_UPLOAD_BYTES = 256 * 1024 * 1024


def _role(caller: svc.Caller, comp: Competition) -> str:
    if caller.is_organiser(comp):
        return "organiser"
    if caller.participant_of(comp) is not None:
        return "participant"
    return "visitor"


def _reveal(caller: svc.Caller, comp: Competition) -> bool:
    return svc.is_closed(comp) or caller.is_organiser(comp)


def _counts(session: Session, comp) -> tuple[int, int]:
    n_p = (
        session.scalar(select(func.count()).select_from(Participant).where(Participant.competition_id == comp.id)) or 0
    )
    n_s = session.scalar(select(func.count()).select_from(Submission).where(Submission.competition_id == comp.id)) or 0
    return int(n_p), int(n_s)


def _view(session, comp, caller):
    n_p, n_s = _counts(session, comp)
    v = views.competition_view(
        comp, closed=svc.is_closed(comp), role=_role(caller, comp), n_participants=n_p, n_submissions=n_s
    )
    me = caller.participant_of(comp)
    if me is not None:
        v["me"] = {"participant_id": me.id, "name": me.name}
    return v


def _need_participant(caller: svc.Caller, comp: Competition) -> Participant:
    p = caller.participant_of(comp)
    if p is None:
        if caller.participant is not None:
            raise forbidden("this participant token belongs to another competition", "wrong competition")
        raise unauthenticated(
            "this action needs your participant token (join the competition first)", "missing participant token"
        )
    return p


def _competition(competition_id: str, session: DbSession) -> Competition:
    return svc.get_competition(session, competition_id)


#: the competition named in the path (404 when there is none)
Comp = Annotated[Competition, Depends(_competition)]


def _participant(comp: Comp, caller: Caller) -> Participant:
    return _need_participant(caller, comp)


def _organised(comp: Comp, caller: Caller) -> Competition:
    if not caller.is_organiser(comp):
        if caller.key_id is None and caller.participant is None:
            raise unauthenticated("this action needs the organiser's API key", "missing API key")
        raise forbidden("only the organiser of this competition may do this", "not the organiser")
    return comp


#: the calling participant of the competition in the path (401/403 otherwise)
Me = Annotated[Participant, Depends(_participant)]
#: the competition in the path, when its organiser calls (401/403 otherwise)
Organised = Annotated[Competition, Depends(_organised)]


@router.post("", status_code=201, responses=P, summary="Create a competition (organiser)")
def create_competition(
    body: views.CompetitionCreate, request: Request, response: Response, session: DbSession, caller: Caller
) -> Any:
    """Test items with hidden labels, K classes, the public share (the split itself is drawn by
    the server and never shown), a daily cap, a deadline and how many entries count at the end."""
    if caller.participant is not None or not caller.allows("write") or caller.key_id is None:
        raise ProblemError(
            401 if caller.key_id is None else 403,
            "creating a competition needs an API key with scope 'write'",
            field="authorization",
            reason="missing API key with scope 'write'",
            code="forbidden",
        )
    if aware(body.deadline) <= utcnow():
        raise ProblemError(
            422, "the deadline must be in the future", field="deadline", reason="in the past", code="bad-deadline"
        )
    labels = array_in(request, session, body.labels, "labels")
    ids = None if body.item_ids is None else array_in(request, session, body.item_ids, "item_ids")
    groups = _groups(request, session, body.groups)
    settings = body.model_dump(exclude={"labels", "item_ids", "groups"})
    comp = svc.create_competition(
        session, owner_key_id=caller.key_id, labels=labels, item_ids=ids, groups=groups, **settings
    )
    response.headers["Location"] = f"/v1/competitions/{comp.id}"
    return _view(session, comp, caller)


@router.get("", responses=P, summary="List competitions")
def list_competitions(session: DbSession, caller: Caller) -> Any:
    return {"items": [_view(session, c, caller) for c in svc.list_competitions(session)]}


@router.get("/{competition_id}", responses=P, summary="One competition (your role in it included)")
def get_competition(comp: Comp, session: DbSession, caller: Caller) -> Any:
    return _view(session, comp, caller)


@router.patch("/{competition_id}", responses=P, summary="Edit the title, description, deadline or cap (organiser)")
def edit_competition(body: views.CompetitionEdit, comp: Organised, session: DbSession, caller: Caller) -> Any:
    svc.edit_competition(session, comp, body.model_dump(exclude_unset=True, exclude_none=True))
    return _view(session, comp, caller)


@router.delete("/{competition_id}", status_code=204, responses=P, summary="Delete a competition (organiser)")
def delete_competition(comp: Organised, session: DbSession) -> Response:
    """Everything goes: participants, submissions, runs, files and the hidden labels."""
    svc.delete_competition(session, comp)
    return Response(status_code=204)


def _groups(request: Request, session: Session, value: Any) -> Any:
    """The group column of a grouped split: a JSON list may hold strings (image names), other
    array forms are resolved like every array of the API."""
    if value is None or isinstance(value, list):
        return value
    return array_in(request, session, value, "groups")


def _split_view(session: Session, comp: Competition, fmt: str) -> Any:
    public = svc.hidden_part(session, comp)[1]
    ids = svc.item_ids(session, comp)
    if fmt == "csv":
        rows = "".join(f"{int(i)},{'public' if p else 'private'}\n" for i, p in zip(ids, public, strict=True))
        return PlainTextResponse(
            "id,part\n" + rows,
            media_type="text/csv",
            headers={"Content-Disposition": f'attachment; filename="{comp.id}-split.csv"'},
        )
    return {
        "split": comp.split_kind or "random",
        "public_fraction": comp.public_fraction,
        "public_item_ids": [int(i) for i in ids[public]],
        "n_public": int(public.sum()),
        "n_items": comp.n_items,
    }


@router.get("/{competition_id}/split", responses=P, summary="The public/private split (organiser)")
def get_split(comp: Organised, session: DbSession, format: str = Query("json", pattern="^(json|csv)$")) -> Any:
    """Which item ids score the public leaderboard; the others are private. For the organiser, so
    that every score can be checked: JSON (the public ids) or CSV (``id,part`` for every item)."""
    return _split_view(session, comp, format)


@router.put("/{competition_id}/split", responses=P, summary="Define the split before the first submission (organiser)")
def put_split(body: views.SplitRequest, request: Request, comp: Organised, session: DbSession) -> Any:
    """Draw the public part again: ``random``, ``stratified`` by label or ``grouped`` by ``groups``
    (one value per item), optionally with a new ``public_fraction``; 409 once a submission exists."""
    groups = _groups(request, session, body.groups)
    svc.redefine_split(session, comp, body.split, public_fraction=body.public_fraction, groups=groups)
    return _split_view(session, comp, "json")


@router.get("/{competition_id}/submission-map", responses=P, summary="Which submissions are alike (organiser)")
def get_submission_map(comp: Organised, session: DbSession) -> Any:
    """A sparse Gaussian graphical model over the usable submissions' log-loss residuals on the public
    part: ``nodes`` (submission id, participant), ``edges`` (``pair`` of node indices, ``weight`` the
    partial correlation) and ``families`` (lists of node indices). 409 with fewer than 3 submissions."""
    return svc.submission_map(session, comp)


@router.get("/{competition_id}/items", responses=P, summary="The test item ids to predict (CSV template or JSON)")
def get_items(comp: Comp, session: DbSession, format: str = Query("json", pattern="^(json|csv)$")) -> Any:
    ids = svc.item_ids(session, comp)
    if format == "csv":
        head = "id," + ",".join(f"c{k}" for k in range(comp.n_classes)) + "\n"
        return PlainTextResponse(head + "\n".join(str(int(i)) for i in ids) + "\n", media_type="text/csv")
    return {"n_classes": comp.n_classes, "item_ids": [int(i) for i in ids]}


def _limit(request: Request, action: str) -> None:
    """429 when this client address has used up its hourly ``action`` budget (join or submit),
    counted in the database so that every server process shares it."""
    st = request.app.state.settings
    per_hour = st.competition_joins_per_hour if action == "join" else st.competition_submissions_per_hour
    limiter = RateLimiter(request.app.state.db, action, per_hour)
    key = request.client.host if request.client else "unknown"
    if not limiter.allow(key):
        raise ProblemError(
            429,
            f"too many competition {action} requests from this address; try again later",
            field="client",
            reason=f"{action} rate limit per client address",
            code="rate-limited",
            headers={"Retry-After": str(limiter.retry_after(key))},
        )


@router.post(
    "/{competition_id}/invitations", status_code=201, responses=P, summary="Issue invitation codes (organiser)"
)
def invite(body: views.InviteRequest, comp: Organised, session: DbSession) -> Any:
    """Single-use codes (shown once, stored hashed); each lets one participant join a competition
    whose ``join_policy`` is ``invite``."""
    made = svc.invite(session, comp, body.n, body.note)
    return {"items": [views.invitation_view(inv, code) for inv, code in made]}


@router.get("/{competition_id}/invitations", responses=P, summary="Invitations and who redeemed them (organiser)")
def list_invitations(
    comp: Organised,
    session: DbSession,
    batch: str | None = Query(None, max_length=40, description="only the invitations issued by one request"),
) -> Any:
    people = svc.participants(session, comp)
    return {
        "items": [
            views.invitation_view(inv, participant=people[inv.participant_id].name if inv.participant_id else None)
            for inv in svc.invitations(session, comp, batch)
        ]
    }


@router.delete(
    "/{competition_id}/invitations/{invitation_id}",
    status_code=204,
    responses=P,
    summary="Revoke an unused invitation (organiser)",
)
def revoke_invitation(invitation_id: str, comp: Organised, session: DbSession) -> Response:
    svc.revoke(session, comp, invitation_id)
    return Response(status_code=204)


@router.post(
    "/{competition_id}/participants", status_code=201, responses=P, summary="Join: get a participant token (shown once)"
)
def join(body: views.JoinRequest, request: Request, comp: Comp, session: DbSession) -> Any:
    _limit(request, "join")
    p, token = svc.join(session, comp, body.name, body.invitation)
    return views.participant_view(p, token)


@router.get("/{competition_id}/participants/{participant_id}", responses=P, summary="One participant (public)")
def get_participant(participant_id: str, comp: Comp, session: DbSession) -> Any:
    """Its id and name, as the leaderboard shows them; the token is never shown again."""
    p = session.get(Participant, participant_id)
    if p is None or p.competition_id != comp.id:
        raise ProblemError(404, f"no participant {participant_id!r}", field="participant_id", reason="not found")
    return views.participant_view(p)


UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "description": "the submission file (CSV, .npy or .npz; see docs/competitions.md), as the raw body or as "
        "the multipart field `file`",
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {
                        "file": {"type": "string", "format": "binary"},
                        "description": {"type": "string", "maxLength": 500},
                        "kind": {"type": "string", "enum": ["log_probs", "probs"]},
                    },
                }
            },
            "text/csv": {"schema": {"type": "string"}},
            "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
        },
    }
}


@router.post(
    "/{competition_id}/submissions",
    status_code=201,
    responses=P,
    summary="Upload a submission (participant)",
    openapi_extra=UPLOAD_BODY,
)
async def submit(
    request: Request,
    comp: Comp,
    me: Me,
    session: DbSession,
    kind: str = Query("log_probs", pattern="^(log_probs|probs)$"),
    description: str = Query("", max_length=500),
) -> Any:
    """The body is the file itself (CSV, ``.npy`` or ``.npz``; see docs/competitions.md) or a
    multipart form with a ``file`` field. Rejected uploads answer 422 with the validation report
    and store nothing; the public score is returned at once, the private one stays hidden."""
    _limit(request, "submit")
    ctype = request.headers.get("content-type", "")
    filename = ""
    if ctype.startswith("multipart/form-data"):
        form = await request.form()
        f = form.get("file")
        if f is None or not hasattr(f, "read"):
            raise ProblemError(422, "multipart upload needs a 'file' field", field="file", reason="missing")
        data = await f.read()
        filename = getattr(f, "filename", "") or ""
        description = description or str(form.get("description") or "")
        kind = str(form.get("kind") or kind)
    else:
        data = await request.body()
    if len(data) > MAX_UPLOAD_BYTES:
        raise ProblemError(413, "submission file too large", field="file", reason="too large", code="too-large")
    try:
        sub = svc.submit(session, comp, me, data, kind=kind, description=description, filename=filename)
    except SubmissionRejected as exc:
        # problem+json whose ``errors`` are the report's, plus the whole report (nothing was stored)
        rep = exc.report.to_dict()
        payload = problem_body(
            422, str(exc), code="submission-rejected", errors=rep["errors"], instance=request.url.path
        )
        payload["report"] = rep
        return JSONResponse(payload, status_code=422, media_type=PROBLEM)
    v = views.submission_view(sub, reveal_private=False)
    v["report"] = sub._report.to_dict()  # type: ignore[attr-defined]
    return JSONResponse(v, status_code=201, headers={"Location": f"/v1/competitions/{comp.id}/submissions/{sub.id}"})


@router.get("/{competition_id}/submissions", responses=P, summary="Your submissions (participant) or all (organiser)")
def list_submissions(comp: Comp, session: DbSession, caller: Caller) -> Any:
    closed = svc.is_closed(comp)
    if caller.is_organiser(comp):
        people = svc.participants(session, comp)
        subs = svc.list_submissions(session, comp)
        return {
            "items": [
                views.submission_view(
                    s, reveal_private=True, participant_name=people[s.participant_id].name, exact_public=True
                )
                for s in subs
            ]
        }
    me = _need_participant(caller, comp)
    subs = svc.list_submissions(session, comp, me.id)
    return {"items": [views.submission_view(s, reveal_private=closed, participant_name=me.name) for s in subs]}


@router.get("/{competition_id}/submissions/{submission_id}", responses=P, summary="One of your submissions")
def get_submission(submission_id: str, comp: Comp, session: DbSession, caller: Caller) -> Any:
    sub = session.get(Submission, submission_id)
    org = caller.is_organiser(comp)
    me = None if org else _need_participant(caller, comp)
    if sub is None or sub.competition_id != comp.id or (me is not None and sub.participant_id != me.id):
        raise ProblemError(404, f"no submission {submission_id!r} of yours", field="submission_id", reason="not found")
    return views.submission_view(sub, reveal_private=org or svc.is_closed(comp), exact_public=org)


@router.post(
    "/{competition_id}/submissions/{submission_id}/selection",
    responses=P,
    summary="Select (or unselect) a submission for the final ranking",
)
def select_submission(submission_id: str, body: views.SelectRequest, comp: Comp, me: Me, session: DbSession) -> Any:
    sub = svc.set_selected(session, comp, me, submission_id, body.selected)
    return views.submission_view(sub, reveal_private=svc.is_closed(comp))


@router.post(
    "/{competition_id}/submissions/{submission_id}/withdrawal",
    responses=P,
    summary="Withdraw one of your submissions before the deadline (participant)",
)
def withdraw_submission(submission_id: str, comp: Comp, me: Me, session: DbSession) -> Any:
    """It leaves the leaderboard and later aggregation runs; it still counts against the daily cap."""
    sub = svc.withdraw(session, comp, me, submission_id)
    return views.submission_view(sub, reveal_private=svc.is_closed(comp))


@router.post(
    "/{competition_id}/submissions/{submission_id}/exclusion",
    responses=P,
    summary="Exclude a submission from the leaderboard and runs, or restore it (organiser)",
)
def exclude_submission(submission_id: str, body: views.ExcludeRequest, comp: Organised, session: DbSession) -> Any:
    sub = svc.set_excluded(session, comp, submission_id, body.excluded, body.reason)
    return views.submission_view(sub, reveal_private=True, exact_public=True)


@router.get("/{competition_id}/leaderboard", responses=P, summary="Leaderboard (public; private after the deadline)")
def get_leaderboard(
    comp: Comp,
    session: DbSession,
    caller: Caller,
    which: str = Query("auto", pattern="^(auto|public|private)$"),
) -> Any:
    """``which=auto`` is the private leaderboard once the deadline has passed, the public one before.
    The private leaderboard before the deadline is for the organiser only. Aggregate rows come from
    the latest successful aggregation run."""
    closed = svc.is_closed(comp)
    reveal = _reveal(caller, comp)
    private = closed if which == "auto" else which == "private"
    if private and not reveal:
        raise ProblemError(
            403,
            "the private leaderboard is hidden until the deadline",
            field="which",
            reason="hidden until the deadline",
            code="hidden",
        )
    rows = svc.leaderboard_rows(session, comp, private=private)
    run = svc.leaderboard_aggregation(session, comp)
    latest = svc.latest_aggregation(session, comp)
    return {
        "competition_id": comp.id,
        "which": "private" if private else "public",
        "closed": closed,
        "aggregation_running": latest is not None and latest.state in ("queued", "running"),
        "private_revealed": reveal,
        "rows": rows,
        "aggregates": views.aggregation_rows(run, reveal_private=reveal, shown=_shown(session, comp)),
        "aggregation_id": run.id if run else None,
        "aggregation_pinned": run is not None and run.id == comp.pinned_aggregation_id,
    }


@router.put("/{competition_id}/pinned-aggregation", responses=P, summary="Pin the leaderboard's run (organiser)")
def pin_aggregation(body: views.PinRequest, comp: Organised, session: DbSession, caller: Caller) -> Any:
    """The pinned (final) run's aggregate rows stay on the leaderboard whatever exploratory runs
    follow; ``{"aggregation_id": null}`` unpins."""
    svc.pin_aggregation(session, comp, body.aggregation_id)
    return _view(session, comp, caller)


@router.post(
    "/{competition_id}/aggregations",
    status_code=202,
    responses=P,
    summary="Fit every pool on the submissions (organiser; background job)",
)
def start_aggregation(
    request: Request, comp: Organised, session: DbSession, body: views.AggregationCreate | None = None
) -> Any:
    params = {}
    if body is not None:
        if body.etas is not None:
            if any(not (1.0 <= e <= 1e6) for e in body.etas):
                raise ProblemError(422, "each eta (1/gamma) must lie in [1, 1e6]", field="etas", reason="out of range")
            params["etas"] = body.etas
        if body.methods is not None:
            params["methods"] = list(dict.fromkeys(body.methods))
        if body.market_max_epochs is not None:
            params["market_max_epochs"] = body.market_max_epochs
    run, job = svc.start_aggregation(session, comp, request.app.state.jobs, params)
    v = views.aggregation_view(run, reveal_private=True)
    return JSONResponse(v, status_code=202, headers={"Location": f"/v1/jobs/{job.id}"})


def _shown(session, comp) -> dict[str, float]:
    """Each submission's shown public score (what the unrevealed views may quote)."""
    return {s.id: svc.shown_public(s) for s in svc.list_submissions(session, comp)}


def _job(session, run):
    if not run.job_id:
        return None
    j = session.get(JobRow, run.job_id)
    return None if j is None else {"progress": float(j.progress or 0.0), "eta_seconds": j.eta_seconds, "state": j.state}


@router.get(
    "/{competition_id}/aggregations", responses=P, summary="Aggregation runs (organiser; everyone after the deadline)"
)
def list_aggregations(comp: Comp, session: DbSession, caller: Caller) -> Any:
    reveal = _reveal(caller, comp)
    runs = session.scalars(
        select(AggregationRun)
        .where(AggregationRun.competition_id == comp.id)
        .order_by(AggregationRun.created_at.desc())
    ).all()
    out = []
    for r in runs:
        v = views.aggregation_view(r, reveal_private=reveal, job_view=_job(session, r), shown=_shown(session, comp))
        v.pop("result", None)
        out.append(v)
    return {"items": out}


@router.get(
    "/{competition_id}/aggregations/{aggregation_id}",
    responses=P,
    summary="One aggregation run: Table 2.3, γ sweep, credit",
)
def get_aggregation(aggregation_id: str, comp: Comp, session: DbSession, caller: Caller) -> Any:
    if aggregation_id == "latest":
        run = svc.latest_aggregation(session, comp)
        if run is None:
            raise ProblemError(404, "no aggregation run yet", field="aggregation_id", reason="not found")
    else:
        run = svc.get_aggregation(session, comp, aggregation_id)
    return views.aggregation_view(
        run, reveal_private=_reveal(caller, comp), job_view=_job(session, run), shown=_shown(session, comp)
    )


def _table_response(ids, log_probs, fmt: str, name: str) -> Response:
    """A table of log-probabilities by item id as ``.npz`` (ids int64, ``log_probs``) or CSV
    (``id,c0,...``; 17 significant digits), the formats a submission is uploaded in."""
    if fmt == "csv":
        data, media = parsing.to_csv(ids, log_probs, digits=17), "text/csv"
    else:
        data, media = parsing.to_npz(ids, log_probs), "application/octet-stream"
    return Response(data, media_type=media, headers={"Content-Disposition": f'attachment; filename="{name}.{fmt}"'})


@router.get(
    "/{competition_id}/aggregations/{aggregation_id}/predictions/{method}",
    responses=P,
    summary="Download a run's aggregate of one method on every test item (organiser)",
)
def get_aggregation_predictions(
    aggregation_id: str,
    method: str,
    comp: Organised,
    session: DbSession,
    format: str = Query("npz", pattern="^(npz|csv)$"),
) -> Any:
    """The pooled forecast: normalised log-probabilities ``(n_items, K)`` by item id; the run's
    ``result.predictions`` lists the methods available (``best_single`` included)."""
    run = svc.get_aggregation(session, comp, aggregation_id)
    lp = svc.aggregation_predictions(session, run, method)
    return _table_response(svc.item_ids(session, comp), lp, format, f"{run.id}-{method}")


@router.get(
    "/{competition_id}/submissions/{submission_id}/data",
    responses=P,
    summary="Download a submission as stored (normalised log-probabilities; organiser or its participant)",
)
def get_submission_data(
    submission_id: str,
    comp: Comp,
    session: DbSession,
    caller: Caller,
    format: str = Query("npz", pattern="^(npz|csv)$"),
) -> Any:
    org = caller.is_organiser(comp)
    me = None if org else _need_participant(caller, comp)
    sub = svc.own_submission(session, comp, me, submission_id)
    lp = load_blob(session, "submission", sub.id, "data").astype(np.float64)
    return _table_response(svc.item_ids(session, comp), lp, format, sub.id)


@router.get("/{competition_id}/files", responses=P, summary="The competition's public data files")
def list_files(comp: Comp, session: DbSession) -> Any:
    return {"items": svc.list_files(session, comp)}


@router.put(
    "/{competition_id}/files/{name}",
    status_code=201,
    responses=P,
    summary="Publish a data file: training data, test features (organiser)",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
        }
    },
)
async def put_file(name: str, request: Request, comp: Organised, session: DbSession) -> Any:
    """The body is the file; anyone may download it from ``GET …/files/{name}``."""
    data = await request.body()
    if len(data) > MAX_UPLOAD_BYTES:
        raise ProblemError(413, "file too large", field="file", reason="too large", code="too-large")
    return svc.put_file(session, comp, name, data)


@router.get(
    "/{competition_id}/files/{name}", responses=P, summary="A public data file of the competition (e.g. training data)"
)
def get_file(name: str, comp: Comp, session: DbSession) -> Any:
    row = session.scalars(
        select(Blob).where(Blob.owner_type == "cmp_file", Blob.owner_id == comp.id, Blob.name == name)
    ).first()
    if row is None:
        raise ProblemError(404, f"no file {name!r} in this competition", field="name", reason="not found")
    return Response(
        row.data,
        media_type="application/octet-stream",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )
