"""Who is calling a competition operation: an API key (an organiser) and/or a participant token."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.auth import hash_key

from .models import Competition, Participant

log = logging.getLogger("agora.competitions")


# -- who is calling ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Caller:
    """An API-key principal (``key_id``/``scopes``; None when anonymous; ``org_keys`` the keys of its
    organisation, itself included) and/or a participant."""

    key_id: str | None = None
    scopes: frozenset[str] = frozenset()
    participant: Participant | None = None
    org_keys: frozenset[str] = frozenset()

    def allows(self, scope: str) -> bool:
        return scope in self.scopes or "admin" in self.scopes

    def is_organiser(self, comp: Competition) -> bool:
        """The key that created the competition, any key of its organisation, or an admin."""
        return (
            self.participant is None
            and self.key_id is not None
            and (comp.owner_key_id in (self.org_keys | {self.key_id}) or "admin" in self.scopes)
        )

    def participant_of(self, comp: Competition) -> Participant | None:
        p = self.participant
        return p if p is not None and p.competition_id == comp.id else None


def participant_by_token(session: Session, token: str) -> Participant | None:
    if not token.startswith("agp_"):
        return None
    return session.scalars(select(Participant).where(Participant.token_hash == hash_key(token))).first()
