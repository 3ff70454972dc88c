"""Cursor pagination over ``(created_at, id)``, newest first: stable under inserts and deletes."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import Depends, Query, Request
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


@dataclass(frozen=True)
class PageRequest:
    """A list route's ``?limit=&cursor=``: how many rows at most, and after which row."""

    limit: int
    cursor: str | None


def page_request(
    request: Request,
    limit: int | None = Query(None, ge=1, le=500),
    cursor: str | None = Query(None, max_length=200),
) -> PageRequest:
    """The query's page; ``limit`` defaults to ``Settings.page_size``."""
    return PageRequest(limit or request.app.state.settings.page_size, cursor)


Paging = Annotated[PageRequest, Depends(page_request)]


def page(session: Session, model: Any, paging: PageRequest, *where: Any) -> tuple[list[Any], str | None]:
    """One page of ``model`` rows matching ``where``, newest first, and the cursor of the next one."""
    limit = paging.limit
    q = select(model).where(*where)
    if paging.cursor:
        ts, rid = decode_cursor(paging.cursor)
        if session.bind is not None and session.bind.dialect.name == "sqlite":
            ts = ts.astimezone(UTC).replace(tzinfo=None)
        q = q.where(or_(model.created_at < ts, and_(model.created_at == ts, model.id < rid)))
    rows = session.scalars(q.order_by(model.created_at.desc(), model.id.desc()).limit(limit + 1)).all()
    nxt = encode_cursor(rows[limit - 1].created_at, rows[limit - 1].id) if len(rows) > limit else None
    return list(rows[:limit]), nxt
