"""Cursor pagination over ``(created_at, id)``, newest first: stable under inserts and deletes."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from .errors import ProblemError


def encode_cursor(created_at: datetime, rid: str) -> str:
    if created_at.tzinfo is None:
        created_at = created_at.replace(tzinfo=UTC)
    raw = json.dumps([created_at.isoformat(), rid]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        ts, rid = json.loads(raw)
        return datetime.fromisoformat(ts), str(rid)
    except (ValueError, TypeError):  # bad base64, JSON, shape or timestamp
        raise ProblemError(
            422, "cursor: not a cursor returned by this API", field="cursor", reason="invalid cursor", code="bad-cursor"
        ) from None


def page(session: Session, model: Any, limit: int, cursor: str | None, *where: Any) -> tuple[list[Any], str | None]:
    q = select(model).where(*where)
    if cursor:
        ts, rid = decode_cursor(cursor)
        if session.bind is not None and session.bind.dialect.name == "sqlite":
            ts = ts.astimezone(UTC).replace(tzinfo=None)
        q = q.where(or_(model.created_at < ts, and_(model.created_at == ts, model.id < rid)))
    rows = session.scalars(q.order_by(model.created_at.desc(), model.id.desc()).limit(limit + 1)).all()
    nxt = encode_cursor(rows[limit - 1].created_at, rows[limit - 1].id) if len(rows) > limit else None
    return list(rows[:limit]), nxt
