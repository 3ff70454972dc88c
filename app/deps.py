"""The dependencies FastAPI injects into the routes: the database session, the caller and the
scopes it must hold.

* :func:`get_session` - a session on this app's database, closed after the request;
* :func:`require` - ``_=require("write")``: the caller's API key (or the anonymous scopes) must
  grant the scope; 401 without a key, 403 with a key that lacks it;
* :func:`get_caller` - who calls a competition route: an API key (organiser, visitor) or a
  participant token (``agp_...``).
"""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from .auth import Principal, presented_key, principal_of
from .competitions.service import Caller, participant_by_token
from .errors import ProblemError
from .settings import SCOPES


def get_session(request: Request) -> Iterator[Session]:
    """A session bound to this app's database, closed after the request."""
    with request.app.state.db.sessions() as session:
        yield session


def require(scope: str):
    """A dependency checking that the caller holds ``scope``; it returns the :class:`Principal`."""
    if scope not in SCOPES:
        raise ValueError(f"unknown scope {scope!r}")

    async def dep(request: Request) -> Principal:
        # async: no thread hand-off per request (key look-ups are cached; a miss is one indexed query)
        p = principal_of(request)
        request.state.principal = p
        if not p.allows(scope):
            if p.participant:
                raise ProblemError(
                    403,
                    f"a competition participant token only acts on its competition (/v1/competitions/...); "
                    f"this endpoint needs an API key with scope {scope!r}",
                    field="authorization",
                    reason=f"participant token; needs an API key with scope {scope!r}",
                    code="forbidden",
                )
            if p.anonymous:
                raise ProblemError(
                    401,
                    f"this endpoint needs an API key with scope {scope!r}",
                    field="authorization",
                    reason=f"missing API key with scope {scope!r}",
                    code="unauthenticated",
                    headers={"WWW-Authenticate": "Bearer"},
                )
            raise ProblemError(
                403,
                f"this API key lacks scope {scope!r} (it has {', '.join(sorted(p.scopes)) or 'none'})",
                field="authorization",
                reason=f"missing scope {scope!r}",
                code="forbidden",
            )
        return p

    dep.__name__ = f"require_{scope}"
    return Depends(dep)


def get_caller(request: Request, session: Session = Depends(get_session)) -> Caller:
    """The caller of a competition route: a participant (by token) or an API-key principal."""
    secret = presented_key(request)
    if secret is not None and secret.startswith("agp_"):
        p = participant_by_token(session, secret)
        if p is None:
            raise ProblemError(
                401,
                "unknown participant token",
                field="authorization",
                reason="unknown participant token",
                code="bad-key",
                headers={"WWW-Authenticate": "Bearer"},
            )
        return Caller(participant=p)
    pr = principal_of(request)
    return Caller(key_id=pr.key_id, scopes=pr.scopes)
