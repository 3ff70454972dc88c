"""Submissions: upload (validated, scored on the public and private parts, stored), list, withdraw,
exclude, select, and the leaderboard rows made of them."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from aggregators.metrics import log_loss, perplexity
from app.arrays import save_blob
from app.errors import ProblemError, forbidden
from app.models import aware, new_id, utcnow
from evaluation import ladder, leaderboard

from .lifecycle import check_open, hidden_part, item_ids
from .membership import participants
from .models import Competition, Participant, Submission
from .parsing import parse_submission

log = logging.getLogger("agora.competitions")


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
    check_open(comp, "submissions are closed", "competition_id", now)
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
    y, public = hidden_part(session, comp)
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
    check_open(comp, "submissions are final", "submission_id")
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
    check_open(comp, "the selection is final", "selected")
    if selected and sub.status != "active":
        raise ProblemError(
            409, f"this submission is {sub.status}", field="selected", reason=sub.status, code="not-active"
        )
    if selected and not sub.selected:
        n = sum(1 for s in list_submissions(session, comp, participant.id) if s.selected)
        if n >= comp.n_select:
            detail = f"at most {comp.n_select} submissions may be selected; unselect one first"
            raise ProblemError(409, detail, field="selected", reason="too many selected", code="too-many-selected")
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
