"""Who takes part: organiser-issued invitation codes and the participants who join (tokens shown
once, stored hashed)."""

from __future__ import annotations

import logging
import secrets

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.auth import hash_key
from app.errors import ProblemError
from app.models import new_id, utcnow
from solvers.errors import InputError

from .lifecycle import check_open
from .models import Competition, Invitation, Participant

log = logging.getLogger("agora.competitions")

MAX_INVITATIONS = 1000
"""At most this many invitations per request."""


# -- invitations and participants ------------------------------------------------------------------
def invite(session: Session, comp: Competition, n: int, note: str = "") -> list[tuple[Invitation, str]]:
    """``n`` new invitation codes (each returned once, stored hashed; one participant each)."""
    if not isinstance(n, int) or not 1 <= n <= MAX_INVITATIONS:
        raise InputError("n", f"must be an integer in 1..{MAX_INVITATIONS}; got {n!r}")
    out = []
    batch = new_id("inv")
    for i in range(n):
        code = "agi_" + secrets.token_urlsafe(18)
        inv = Invitation(
            id=f"{batch}_{i}",
            competition_id=comp.id,
            code_hash=hash_key(code),
            note=(note or "")[:200],
            created_at=utcnow(),
        )
        session.add(inv)
        out.append((inv, code))
    session.commit()
    return out


def invitations(session: Session, comp: Competition, batch: str | None = None) -> list[Invitation]:
    """The competition's invitations; with ``batch``, only those issued together by one request."""
    q = select(Invitation).where(Invitation.competition_id == comp.id)
    if batch is not None:
        q = q.where(Invitation.id.startswith(batch + "_", autoescape=True))
    return list(session.scalars(q.order_by(Invitation.created_at, Invitation.id)))


def revoke(session: Session, comp: Competition, invitation_id: str) -> None:
    """Delete an unused invitation (its code no longer admits anyone); 409 once it was redeemed: the
    participant exists, exclude their submissions instead."""
    inv = session.get(Invitation, invitation_id)
    if inv is None or inv.competition_id != comp.id:
        raise ProblemError(404, f"no invitation {invitation_id!r}", field="invitation_id", reason="not found")
    if inv.participant_id is not None:
        raise ProblemError(
            409,
            "this invitation was already used; exclude the participant's submissions instead",
            field="invitation_id",
            reason="already used",
            code="invitation-used",
        )
    session.delete(inv)
    session.commit()


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
    check_open(comp, "the competition is closed", "competition_id")
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
