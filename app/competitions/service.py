"""Operations on competitions, called by the routes, the demo and the job runner.

Everything that touches hidden data (labels, the split seed, private scores) happens here; what a
caller may *see* is decided by :mod:`app.competitions.schemas`. Errors are
:class:`app.errors.ProblemError` (problem+json in the API), and their messages never quote hidden
values.
"""

from __future__ import annotations

import logging
import re
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from aggregators.metrics import log_loss, perplexity
from aggregators.validation import as_labels
from app import estimator_store as store
from app.arrays import load_blob, load_blob_of_each, save_blob
from app.auth import hash_key
from app.db import Database
from app.errors import ProblemError, forbidden
from app.jobs import JobContext, handler, on_end
from app.models import Blob, PoolRow, aware, new_id, utcnow
from app.settings import get_settings
from evaluation import aggregation, ladder, leaderboard
from evaluation.split import public_private_split
from evaluation.submission_map import submission_map as evaluation_submission_map
from solvers.errors import InputError

from .models import AggregationRun, Competition, Invitation, Participant, Submission
from .parsing import exact_ids, parse_submission

log = logging.getLogger("agora.competitions")

JOB_KIND = "competition_aggregate"
MAX_AGENTS = 100
"""At most this many submissions (the best on the public part) enter an aggregation run."""
MAX_ITEMS = 200_000
MAX_CLASSES = 1000
JOIN_POLICIES = ("open", "invite")
MAX_INVITATIONS = 1000
"""At most this many invitations per request."""


# -- who is calling ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Caller:
    """An API-key principal (``key_id``/``scopes``; None when anonymous) and/or a participant."""

    key_id: str | None = None
    scopes: frozenset[str] = frozenset()
    participant: Participant | None = None

    def allows(self, scope: str) -> bool:
        return scope in self.scopes or "admin" in self.scopes

    def is_organiser(self, comp: Competition) -> bool:
        return (
            self.participant is None
            and self.key_id is not None
            and (self.key_id == comp.owner_key_id or "admin" in self.scopes)
        )

    def participant_of(self, comp: Competition) -> Participant | None:
        p = self.participant
        return p if p is not None and p.competition_id == comp.id else None


def participant_by_token(session: Session, token: str) -> Participant | None:
    if not token.startswith("agp_"):
        return None
    return session.scalars(select(Participant).where(Participant.token_hash == hash_key(token))).first()


# -- competitions ----------------------------------------------------------------------------------
def is_closed(comp: Competition, now: datetime | None = None) -> bool:
    """True once the deadline has passed: private scores become visible, uploads stop."""
    return (now or utcnow()) >= aware(comp.deadline)


def _check_open(comp: Competition, settled: str, field: str, now: datetime | None = None) -> None:
    """409 ``closed`` naming ``field`` once the deadline of ``comp`` has passed and ``settled`` is final."""
    if is_closed(comp, now):
        raise ProblemError(409, f"the deadline has passed; {settled}", field=field, reason="closed", code="closed")


def create_competition(
    session: Session,
    *,
    owner_key_id: str,
    title: str,
    n_classes: int,
    labels: Any,
    item_ids: Any | None = None,
    public_fraction: float = 0.5,
    daily_cap: int = 5,
    n_select: int = 2,
    deadline: datetime,
    description: str = "",
    extra: dict | None = None,
    split_seed: int | None = None,
    join_policy: str = "open",
    score_mechanism: str = "exact",
    score_step: float | None = None,
) -> Competition:
    """Store a competition. The split seed is drawn by the server (never returned).

    ``join_policy="invite"`` lets only holders of an organiser-issued invitation join;
    ``score_mechanism``/``score_step`` choose what the public leaderboard shows
    (:mod:`evaluation.ladder`).
    """
    if join_policy not in JOIN_POLICIES:
        raise InputError("join_policy", f"must be one of {', '.join(JOIN_POLICIES)}; got {join_policy!r}")
    step = ladder.check_display(score_mechanism, score_step)
    if not isinstance(n_classes, int) or not 2 <= n_classes <= MAX_CLASSES:
        raise ProblemError(
            422, f"n_classes must be an integer in 2..{MAX_CLASSES}", field="n_classes", reason="out of range"
        )
    try:
        y_arr = np.asarray(labels)
    except (ValueError, TypeError):
        y_arr = np.asarray(None)  # not an array at all: rejected below
    if y_arr.ndim != 1 or y_arr.dtype.kind not in "iuf" or y_arr.dtype == bool:
        raise ProblemError(
            422,
            "labels must be a 1-D list of integer classes",
            field="labels",
            reason="not a 1-D integer array",
            code="bad-labels",
        )
    try:
        y = as_labels(y_arr, int(y_arr.shape[0]), n_classes, field="labels")
    except InputError as exc:
        # the message names the rule and the position, never echoes a label value
        where = f" (first at position {exc.item})" if exc.item is not None else ""
        reason = {"unknown_class": f"labels must be integers in 0..{n_classes - 1}"}.get(exc.code, exc.reason) + where
        raise ProblemError(422, f"labels: {reason}", field="labels", reason=reason, code="bad-labels") from None
    n = len(y)
    if not 2 <= n <= MAX_ITEMS:
        raise ProblemError(
            422,
            f"a competition needs 2..{MAX_ITEMS} test items; got {n}",
            field="labels",
            reason="wrong number of items",
        )
    if item_ids is None:
        ids = np.arange(n, dtype=np.int64)
    else:
        try:
            ids = exact_ids(item_ids)
        except (TypeError, ValueError) as exc:
            raise ProblemError(
                422, f"item_ids must be exact 64-bit integers: {exc}", field="item_ids", reason=str(exc)
            ) from None
        if ids.shape != (n,):
            raise ProblemError(
                422, f"item_ids must be {n} integers, one per label", field="item_ids", reason="wrong shape"
            )
        if len(np.unique(ids)) != n:
            raise ProblemError(422, "item_ids must be distinct", field="item_ids", reason="duplicates")
    if not 0.0 < float(public_fraction) < 1.0:
        raise ProblemError(422, "public_fraction must lie in (0, 1)", field="public_fraction", reason="out of range")
    if daily_cap < 1 or n_select < 1:
        raise ProblemError(
            422,
            "daily_cap and n_select must be at least 1",
            field="daily_cap" if daily_cap < 1 else "n_select",
            reason="must be >= 1",
        )
    comp = Competition(
        id=new_id("cmp"),
        title=title.strip()[:200] or "untitled",
        description=description[:5000],
        n_classes=n_classes,
        n_items=n,
        public_fraction=float(public_fraction),
        split_seed=int(split_seed if split_seed is not None else secrets.randbelow(2**31 - 1)),
        daily_cap=int(daily_cap),
        n_select=int(n_select),
        deadline=aware(deadline),
        join_policy=join_policy,
        score_mechanism=score_mechanism,
        score_step=step,
        owner_key_id=owner_key_id,
        extra=extra or {},
        created_at=utcnow(),
    )
    session.add(comp)
    save_blob(session, "competition", comp.id, "item_ids", ids)
    save_blob(session, "competition", comp.id, "labels", y.astype(np.int16))
    session.commit()
    log.info("competition %s created (%d items, %d classes)", comp.id, n, n_classes)
    return comp


def edit_competition(session: Session, comp: Competition, changes: dict[str, Any]) -> Competition:
    """Change the title, description, deadline (only to a future time) or daily cap."""
    if "deadline" in changes:
        deadline = aware(changes["deadline"])
        if deadline <= utcnow():
            raise ProblemError(422, "the deadline must be in the future", field="deadline", reason="in the past")
        comp.deadline = deadline
    for key in ("title", "description", "daily_cap"):
        if key in changes:
            setattr(comp, key, changes[key])
    session.commit()
    return comp


def delete_competition(session: Session, comp: Competition) -> None:
    """Delete a competition with its participants, submissions, runs and every array they own."""
    running = latest_aggregation(session, comp)
    if running is not None and running.state in ("queued", "running"):
        raise ProblemError(
            409,
            "an aggregation run is in progress; cancel its job first",
            field="competition_id",
            reason="run in progress",
            code="busy",
        )
    sub_ids = [s.id for s in list_submissions(session, comp)]
    run_ids = list(session.scalars(select(AggregationRun.id).where(AggregationRun.competition_id == comp.id)))
    for owner_type, owners in (
        ("competition", [comp.id]),
        ("cmp_file", [comp.id]),
        ("submission", sub_ids),
        ("aggregation", run_ids),
    ):
        if owners:
            session.execute(delete(Blob).where(Blob.owner_type == owner_type, Blob.owner_id.in_(owners)))
    for model in (Submission, AggregationRun, Invitation, Participant):
        session.execute(delete(model).where(model.competition_id == comp.id))
    session.delete(comp)
    session.commit()


FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def put_file(session: Session, comp: Competition, name: str, data: bytes) -> dict[str, Any]:
    """Publish a data file (training data, test features...) under ``name``, replacing one of that name."""
    if not FILE_NAME.match(name):
        raise ProblemError(
            422, "a file name is 1..100 letters, digits, '.', '_' or '-'", field="name", reason="bad file name"
        )
    if not data:
        raise ProblemError(422, "the file is empty", field="file", reason="empty")
    session.execute(delete(Blob).where(Blob.owner_type == "cmp_file", Blob.owner_id == comp.id, Blob.name == name))
    session.add(Blob(owner_type="cmp_file", owner_id=comp.id, name=name, dtype="bytes", shape=[len(data)], data=data))
    files = list((comp.extra or {}).get("files", []))
    comp.extra = {**(comp.extra or {}), "files": sorted(set(files) | {name})}
    session.commit()
    return {"name": name, "bytes": len(data)}


def list_files(session: Session, comp: Competition) -> list[dict[str, Any]]:
    rows = session.scalars(select(Blob).where(Blob.owner_type == "cmp_file", Blob.owner_id == comp.id))
    return sorted(({"name": b.name, "bytes": int(b.shape[0])} for b in rows), key=lambda f: f["name"])


def public_items(session: Session, comp: Competition) -> np.ndarray:
    """Which item ids are public (organiser only: the split itself)."""
    _, public = _hidden(session, comp)
    return item_ids(session, comp)[public]


def get_competition(session: Session, comp_id: str) -> Competition:
    comp = session.get(Competition, comp_id)
    if comp is None:
        raise ProblemError(404, f"no competition {comp_id!r}", field="competition_id", reason="not found")
    return comp


def list_competitions(session: Session) -> list[Competition]:
    return list(session.scalars(select(Competition).order_by(Competition.created_at.desc(), Competition.id)))


def item_ids(session: Session, comp: Competition) -> np.ndarray:
    return load_blob(session, "competition", comp.id, "item_ids")


def _hidden(session: Session, comp: Competition) -> tuple[np.ndarray, np.ndarray]:
    """(labels, public mask): the hidden part, for scoring only."""
    y = load_blob(session, "competition", comp.id, "labels").astype(np.int64)
    return y, public_private_split(comp.n_items, comp.public_fraction, comp.split_seed)


# -- invitations and participants ------------------------------------------------------------------
def invite(session: Session, comp: Competition, n: int, note: str = "") -> list[tuple[Invitation, str]]:
    """``n`` new invitation codes (each returned once, stored hashed; one participant each)."""
    if not isinstance(n, int) or not 1 <= n <= MAX_INVITATIONS:
        raise InputError("n", f"must be an integer in 1..{MAX_INVITATIONS}; got {n!r}")
    out = []
    for _ in range(n):
        code = "agi_" + secrets.token_urlsafe(18)
        inv = Invitation(
            id=new_id("inv"),
            competition_id=comp.id,
            code_hash=hash_key(code),
            note=(note or "")[:200],
            created_at=utcnow(),
        )
        session.add(inv)
        out.append((inv, code))
    session.commit()
    return out


def invitations(session: Session, comp: Competition) -> list[Invitation]:
    q = select(Invitation).where(Invitation.competition_id == comp.id)
    return list(session.scalars(q.order_by(Invitation.created_at, Invitation.id)))


def _redeem(session: Session, comp: Competition, code: str | None) -> Invitation:
    inv = None
    if code:
        inv = session.scalars(select(Invitation).where(Invitation.code_hash == hash_key(code))).first()
    # an unknown code, another competition's code and a used code are refused alike
    if inv is None or inv.competition_id != comp.id or inv.participant_id is not None:
        raise ProblemError(
            403,
            "this competition is by invitation: join with an unused invitation code from the organiser",
            field="invitation",
            reason="missing, unknown or used invitation code",
            code="invitation-required",
        )
    return inv


def join(session: Session, comp: Competition, name: str, invitation: str | None = None) -> tuple[Participant, str]:
    """A new participant and its token (returned once, stored hashed). A competition whose
    ``join_policy`` is ``invite`` needs an unused ``invitation`` code, which this spends."""
    name = (name or "").strip()
    if not 1 <= len(name) <= 100:
        raise ProblemError(422, "name must be 1..100 characters", field="name", reason="length")
    _check_open(comp, "the competition is closed", "competition_id")
    inv = _redeem(session, comp, invitation) if comp.join_policy == "invite" else None
    taken = session.scalar(
        select(func.count())
        .select_from(Participant)
        .where(Participant.competition_id == comp.id, Participant.name == name)
    )
    if taken:
        raise ProblemError(
            409, f"the name {name!r} is taken in this competition", field="name", reason="taken", code="name-taken"
        )
    token = "agp_" + secrets.token_urlsafe(32)
    p = Participant(
        id=new_id("cpa"), competition_id=comp.id, name=name, token_hash=hash_key(token), created_at=utcnow()
    )
    session.add(p)
    if inv is not None:
        inv.participant_id, inv.used_at = p.id, p.created_at
    session.commit()
    return p, token


def participants(session: Session, comp: Competition) -> dict[str, Participant]:
    return {p.id: p for p in session.scalars(select(Participant).where(Participant.competition_id == comp.id))}


# -- submissions -----------------------------------------------------------------------------------
def submissions_today(session: Session, participant: Participant, now: datetime) -> int:
    day = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return int(
        session.scalar(
            select(func.count())
            .select_from(Submission)
            .where(Submission.participant_id == participant.id, Submission.created_at >= day)
        )
        or 0
    )


def submit(
    session: Session,
    comp: Competition,
    participant: Participant,
    data: bytes,
    *,
    kind: str = "log_probs",
    description: str = "",
    filename: str = "",
    now: datetime | None = None,
) -> Submission:
    """Validate, score and store one submission. Nothing is stored when it is rejected.

    Raises :class:`~app.competitions.parsing.SubmissionRejected` (with the validation report), or
    ProblemError 409 after the deadline and 429 past the daily cap.
    """
    now = now or utcnow()
    if participant.competition_id != comp.id:
        raise forbidden("this participant token belongs to another competition", "wrong competition")
    _check_open(comp, "submissions are closed", "competition_id", now)
    used = submissions_today(session, participant, now)
    if used >= comp.daily_cap:
        raise ProblemError(
            429,
            f"daily cap reached: {comp.daily_cap} submissions per UTC day",
            field="file",
            reason="daily cap reached",
            code="daily-cap",
        )
    parsed = parse_submission(data, item_ids(session, comp), comp.n_classes, kind=kind)
    y, public = _hidden(session, comp)
    lp = parsed.log_probs
    public_ppl = perplexity(lp[public], y[public])
    earlier = [
        s.shown_public_perplexity if s.shown_public_perplexity is not None else s.public_perplexity
        for s in list_submissions(session, comp, participant.id)
    ]
    sub = Submission(
        id=new_id("sub"),
        competition_id=comp.id,
        participant_id=participant.id,
        description=(description or "")[:500],
        filename=(filename or "")[:200],
        public_perplexity=public_ppl,
        public_log_loss=log_loss(lp[public], y[public]),
        shown_public_perplexity=ladder.shown_score(public_ppl, earlier, comp.score_mechanism, comp.score_step),
        private_perplexity=perplexity(lp[~public], y[~public]),
        private_log_loss=log_loss(lp[~public], y[~public]),
        selected=False,
        warnings=parsed.report.warnings,
        created_at=now,
    )
    session.add(sub)
    save_blob(session, "submission", sub.id, "data", lp.astype(np.float32))
    session.commit()
    log.info("submission %s accepted for competition %s", sub.id, comp.id)  # no scores in logs
    sub._report = parsed.report  # type: ignore[attr-defined]
    return sub


def list_submissions(session: Session, comp: Competition, participant_id: str | None = None) -> list[Submission]:
    q = select(Submission).where(Submission.competition_id == comp.id)
    if participant_id is not None:
        q = q.where(Submission.participant_id == participant_id)
    return list(session.scalars(q.order_by(Submission.created_at.desc(), Submission.id)))


def own_submission(session: Session, comp: Competition, participant: Participant | None, sub_id: str) -> Submission:
    sub = session.get(Submission, sub_id)
    # someone else's submission is reported exactly like a missing one
    if (
        sub is None
        or sub.competition_id != comp.id
        or (participant is not None and sub.participant_id != participant.id)
    ):
        raise ProblemError(404, f"no submission {sub_id!r} of yours", field="submission_id", reason="not found")
    return sub


def withdraw(session: Session, comp: Competition, participant: Participant, sub_id: str) -> Submission:
    """The participant takes a submission back before the deadline: it leaves the leaderboard and
    every later run, but still counts against the daily cap and the Ladder's state (else a
    withdrawal would reset either)."""
    sub = own_submission(session, comp, participant, sub_id)
    _check_open(comp, "submissions are final", "submission_id")
    if sub.status == "active":
        sub.status, sub.status_reason, sub.selected = "withdrawn", "withdrawn by the participant", False
        session.commit()
    return sub


def set_excluded(session: Session, comp: Competition, sub_id: str, excluded: bool, reason: str = "") -> Submission:
    """The organiser excludes a submission (with a reason shown to its participant) or restores it."""
    sub = own_submission(session, comp, None, sub_id)
    if sub.status == "withdrawn":
        raise ProblemError(
            409, "the participant withdrew this submission", field="submission_id", reason="withdrawn", code="withdrawn"
        )
    if excluded:
        sub.status, sub.status_reason, sub.selected = "excluded", (reason or "excluded by the organiser")[:200], False
    else:
        sub.status, sub.status_reason = "active", ""
    session.commit()
    return sub


def set_selected(
    session: Session, comp: Competition, participant: Participant, sub_id: str, selected: bool
) -> Submission:
    sub = own_submission(session, comp, participant, sub_id)
    _check_open(comp, "the selection is final", "selected")
    if selected and sub.status != "active":
        raise ProblemError(
            409, f"this submission is {sub.status}", field="selected", reason=sub.status, code="not-active"
        )
    if selected and not sub.selected:
        n = sum(1 for s in list_submissions(session, comp, participant.id) if s.selected)
        if n >= comp.n_select:
            raise ProblemError(
                409,
                f"at most {comp.n_select} submissions may be selected; unselect one first",
                field="selected",
                reason="too many selected",
                code="too-many-selected",
            )
    sub.selected = bool(selected)
    session.commit()
    return sub


def shown_public(sub: Submission) -> float:
    """The public perplexity everyone but the organiser sees (the exact one for old rows)."""
    return sub.public_perplexity if sub.shown_public_perplexity is None else sub.shown_public_perplexity


def leaderboard_rows(session: Session, comp: Competition, *, private: bool) -> list[dict]:
    people = participants(session, comp)
    recs = [
        dict(
            participant_id=s.participant_id,
            participant=people[s.participant_id].name,
            submission_id=s.id,
            created_at=aware(s.created_at),
            public_perplexity=shown_public(s),
            private_perplexity=s.private_perplexity,
            selected=s.selected,
        )
        for s in list_submissions(session, comp)
        if s.status == "active"
    ]
    return leaderboard.leaderboard(recs, private=private, n_select=comp.n_select)


# -- aggregation -----------------------------------------------------------------------------------
def latest_aggregation(session: Session, comp: Competition, *, succeeded: bool = False) -> AggregationRun | None:
    q = select(AggregationRun).where(AggregationRun.competition_id == comp.id)
    if succeeded:
        q = q.where(AggregationRun.state == "succeeded")
    return session.scalars(q.order_by(AggregationRun.created_at.desc(), AggregationRun.id.desc())).first()


def leaderboard_aggregation(session: Session, comp: Competition) -> AggregationRun | None:
    """The run whose aggregate rows the leaderboard shows: the pinned one, else the latest successful."""
    if comp.pinned_aggregation_id:
        run = session.get(AggregationRun, comp.pinned_aggregation_id)
        if run is not None and run.state == "succeeded":
            return run
    return latest_aggregation(session, comp, succeeded=True)


def pin_aggregation(session: Session, comp: Competition, agg_id: str | None) -> AggregationRun | None:
    """Pin a succeeded run as the leaderboard's (``None`` unpins: the latest successful run again)."""
    run = None
    if agg_id is not None:
        run = get_aggregation(session, comp, agg_id)
        if run.state != "succeeded":
            raise ProblemError(
                409,
                f"only a succeeded run can be pinned; this one is {run.state}",
                field="aggregation_id",
                reason=run.state,
                code="not-succeeded",
            )
    comp.pinned_aggregation_id = agg_id
    session.commit()
    return run


def aggregation_predictions(session: Session, run: AggregationRun, method: str) -> np.ndarray:
    """A run's aggregate of ``method`` on every test item (normalised log-probabilities)."""
    if method not in ((run.result or {}).get("predictions") or []):
        raise ProblemError(
            404, f"no aggregate {method!r} in this run", field="method", reason="not found", code="not-found"
        )
    return load_blob(session, "aggregation", run.id, method)


def get_aggregation(session: Session, comp: Competition, agg_id: str) -> AggregationRun:
    run = session.get(AggregationRun, agg_id)
    if run is None or run.competition_id != comp.id:
        raise ProblemError(
            404, f"no aggregation {agg_id!r} in this competition", field="aggregation_id", reason="not found"
        )
    return run


def new_aggregation(session: Session, comp: Competition, params: dict | None = None) -> AggregationRun:
    run = AggregationRun(
        id=new_id("agg"),
        competition_id=comp.id,
        state="queued",
        params=params or {},
        submission_ids=[],
        created_at=utcnow(),
    )
    session.add(run)
    session.commit()
    return run


def beats_uniform(n_classes: int) -> float:
    """The public perplexity a submission must stay below to enter a run: a uniform guess scores
    ``n_classes`` up to rounding, so the bar sits a relative 1e-9 below it."""
    return n_classes * (1.0 - 1e-9)


def choose_submissions(subs: list[Submission], n_classes: int) -> tuple[list[Submission], list[tuple[Submission, str]]]:
    """The submissions a run uses (better than a uniform guess on the public part, at most
    ``MAX_AGENTS``, best public score first) and the ones it leaves out, each with the reason."""
    ranked = sorted(subs, key=lambda x: (x.public_perplexity, aware(x.created_at)))
    used, left_out = [], []
    for x in ranked:
        if x.status != "active":
            left_out.append((x, x.status_reason or x.status))
        elif not x.public_perplexity < beats_uniform(n_classes):
            left_out.append((x, f"public perplexity not below {n_classes} (a uniform guess)"))
        elif len(used) >= MAX_AGENTS:
            left_out.append((x, f"not among the {MAX_AGENTS} best by public perplexity"))
        else:
            used.append(x)
    return used, left_out


def usable_submissions(
    session: Session, comp: Competition, *, status: int, minimum: int = 2, what: str = "aggregation"
) -> tuple[list[Submission], list[tuple[Submission, str]]]:
    """:func:`choose_submissions` over the submissions of ``comp``; a ``status`` problem when fewer
    than ``minimum`` are usable."""
    subs, left_out = choose_submissions(list_submissions(session, comp), comp.n_classes)
    if len(subs) < minimum:
        raise ProblemError(
            status,
            f"{what} needs at least {minimum} submissions better than a uniform prediction",
            field="submissions",
            reason="too few",
            code="too-few-submissions",
        )
    return subs, left_out


def submission_map(session: Session, comp: Competition) -> dict[str, Any]:
    """The map of the usable submissions on the public part (:mod:`evaluation.submission_map`):
    ``nodes`` (submission id, participant), ``edges`` (node-index pair, partial correlation) and
    ``families`` (lists of node indices); a 409 problem when fewer than 3 are usable."""
    y, public = _hidden(session, comp)
    people = participants(session, comp)
    subs, _ = usable_submissions(session, comp, status=409, minimum=3, what="the submission map")
    data = load_blob_of_each(session, "submission", [x.id for x in subs], "data")
    lp = np.stack([data[x.id][public].astype(np.float64) for x in subs], axis=1)
    nodes = [{"submission_id": x.id, "participant": people[x.participant_id].name} for x in subs]
    return {"nodes": nodes, **evaluation_submission_map(lp, y[public])}


def run_aggregation(db, agg_id: str, progress=None) -> dict:
    """Fit every pool on the competition's submissions and store Table 2.3 and the credit.

    ``db`` is an :class:`app.db.Database`. The returned dict (the job result) holds only ids: the
    private scores stay in the run's row, served by the routes to whoever may see them.
    """
    with db.sessions() as s:
        run = s.get(AggregationRun, agg_id)
        comp = s.get(Competition, run.competition_id)
        run.state = "running"
        s.commit()
        y, public = _hidden(s, comp)
        people = participants(s, comp)
        subs, left_out = usable_submissions(s, comp, status=422)
        data = load_blob_of_each(s, "submission", [x.id for x in subs], "data")
        lp = np.stack([data[x.id].astype(np.float64) for x in subs], axis=1)  # (n_items, A, K)
        meta = [
            dict(
                submission_id=x.id,
                participant=people[x.participant_id].name,
                participant_id=x.participant_id,
                description=x.description,
            )
            for x in subs
        ]
        params = dict(run.params or {})
        seed, comp_id, comp_k = comp.split_seed, comp.id, comp.n_classes
    etas = params.get("etas") or aggregation.DEFAULT_ETAS
    methods = params.get("methods") or aggregation.METHODS
    max_epochs = int(params.get("market_max_epochs") or aggregation.MARKET_MAX_EPOCHS)
    n_val, n_agents = int(public.sum()), lp.shape[1]
    plan = aggregation.progress_plan(
        methods,
        len(etas),
        n_agents,
        loo_refit=n_val * n_agents * comp_k * n_agents <= aggregation.LOO_REFIT_BUDGET,
    )
    progress = _staged(db, agg_id, plan, progress, n_etas=len(etas), max_epochs=max_epochs, n_agents=n_agents)
    result = aggregation.aggregate_submissions(
        lp[public],
        y[public],
        lp[~public],
        y[~public],
        seed=seed,
        etas=etas,
        methods=methods,
        progress=progress,
        predict_lp=lp,
        market_max_epochs=max_epochs,
        client=get_settings().dask_scheduler,
    )
    predictions = result.pop("predictions")
    models = result.pop("models")
    result["predictions"] = sorted(predictions)  # the methods whose aggregate can be downloaded
    result["used"] = [{"submission_id": m["submission_id"], "participant": m["participant"]} for m in meta]
    result["left_out"] = [
        {"submission_id": x.id, "participant": people[x.participant_id].name, "reason": why} for x, why in left_out
    ]
    for c in result["credit"]:
        c.update(meta[c["index"]])
    for row in result["rows"]:
        if row["method"] == "best_single":
            row["params"].update(meta[row["params"]["submission_index"]])
    with db.sessions() as s:
        run = s.get(AggregationRun, agg_id)
        run.state, run.result, run.finished_at, run.stage = "succeeded", result, utcnow(), "done"
        run.submission_ids = [m["submission_id"] for m in meta]
        for method, arr in predictions.items():
            save_blob(s, "aggregation", agg_id, method, arr)
        run.result = {**result, "pools": _export_pools(s, agg_id, models, lp.shape[0])}
        s.commit()
    return {"aggregation_id": agg_id, "competition_id": comp_id}


def _stage_label(name: str, g: float, *, n_etas: int, max_epochs: int, n_agents: int) -> str:
    if name == "renyi":
        return f"renyi: fit {min(n_etas, int(g * n_etas) + 1)}/{n_etas}"
    if name == "market":
        return f"market: epoch {min(max_epochs, int(g * max_epochs))}/{max_epochs}"
    if name == "loo":
        return f"leave-one-out: {min(n_agents, int(g * n_agents))}/{n_agents}"
    return name


def _staged(db, agg_id: str, plan, progress, *, n_etas: int, max_epochs: int, n_agents: int):
    """The job's progress callback, which also keeps the run's ``stage`` (method, Rényi fit, market
    epoch, leave-one-out submission) up to date, at most about four writes a second."""
    last = {"label": "", "t": 0.0}

    def cb(f: float) -> None:
        if progress is not None:
            progress(f)
        name, g = aggregation.stage_at(plan, f)
        label = _stage_label(name, g, n_etas=n_etas, max_epochs=max_epochs, n_agents=n_agents)
        now = time.monotonic()
        if label != last["label"] and (now - last["t"] >= 0.25 or not label.startswith(last["label"].split(":")[0])):
            last["label"], last["t"] = label, now
            with db.sessions() as s:
                run = s.get(AggregationRun, agg_id)
                if run is not None:
                    run.stage = label
                    s.commit()

    return cb


def _export_pools(session: Session, agg_id: str, models: dict[str, Any], n_items: int) -> dict[str, str]:
    """Every fitted pool of a run as a ``/v1/pools`` resource (ready to predict on new items);
    returns ``{method: pool id}``. A pool whose state cannot be stored is skipped (and logged)."""
    out = {}
    for method, pool in models.items():
        try:
            state, arrays = store.dump(pool)
            params = store.public(store.jsonable(pool.get_params()))
        except Exception:  # noqa: BLE001 - one pool that cannot be stored must not sink the run
            log.warning("run %s: the %s pool could not be stored as a resource", agg_id, method, exc_info=True)
            continue
        row = PoolRow(
            id=new_id("pool"),
            name=f"competition run {agg_id}: {method}",
            method=method,
            params=params,
            kind="log_probs",
            status="ready",
            n_items=n_items,
            n_agents=int(pool.n_agents_),
            n_classes=int(pool.n_classes_),
            state=state,
            metrics={},
            fit={},
            created_at=utcnow(),
        )
        session.add(row)
        for name, arr in arrays.items():
            save_blob(session, "pool", row.id, name, arr)
        out[method] = row.id
    return out


@handler(JOB_KIND)
def _run_aggregation_job(ctx: JobContext) -> dict:
    return run_aggregation(ctx.db, ctx.spec["aggregation_id"], ctx.progress)


@on_end(JOB_KIND)
def _aggregation_job_ended(db: Database, jid: str, spec: dict, state: str, error: dict | None) -> None:
    with db.sessions() as s:
        run = s.get(AggregationRun, spec["aggregation_id"])
        if run is not None:
            run.state, run.error, run.finished_at = state, error, utcnow()
            s.commit()


def start_aggregation(session: Session, comp: Competition, runner, params: dict | None = None):
    """Queue an aggregation run as a background job; returns ``(run, job)`` (409 when fewer than
    two submissions are usable)."""
    usable_submissions(session, comp, status=409)
    run = new_aggregation(session, comp, params)
    job = runner.submit(
        session, JOB_KIND, {"aggregation_id": run.id}, {}, resource_type="competition", resource_id=comp.id
    )
    run.job_id = job.id
    session.commit()
    return run, job
