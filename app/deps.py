"""The dependencies FastAPI injects into the routes: the database session, the caller and the
scopes it must hold.

* :func:`get_session` - a session on this app's database, closed after the request;
* :func:`require` - ``_=require("write")``: the caller's API key (or the anonymous scopes) must
  grant the scope; 401 without a key, 403 with a key that lacks it;
* :func:`get_caller` - who calls a competition route: an API key (organiser, visitor) or a
  participant token (``agp_...``).

A route declares what it needs by type: ``session: DbSession``, ``me: Reader`` (the principal,
holding ``read``), ``caller: CallerDep``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from .auth import Principal, presented_key, principal_of
from .competitions.service import Caller, participant_by_token
from .errors import forbidden, unauthenticated
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
                raise forbidden(
                    f"a competition participant token only acts on its competition (/v1/competitions/...); "
                    f"this endpoint needs an API key with scope {scope!r}",
                    f"participant token; needs an API key with scope {scope!r}",
                )
            if p.anonymous:
                raise unauthenticated(
                    f"this endpoint needs an API key with scope {scope!r}", f"missing API key with scope {scope!r}"
                )
            raise forbidden(
                f"this API key lacks scope {scope!r} (it has {', '.join(sorted(p.scopes)) or 'none'})",
                f"missing scope {scope!r}",
            )
        return p

    dep.__name__ = f"require_{scope}"
    return Depends(dep)


DbSession = Annotated[Session, Depends(get_session)]


def get_caller(request: Request, session: DbSession) -> Caller:
    """The caller of a competition route: a participant (by token) or an API-key principal."""
    secret = presented_key(request)
    if secret is not None and secret.startswith("agp_"):
        p = participant_by_token(session, secret)
        if p is None:
            raise unauthenticated("unknown participant token", "unknown participant token", code="bad-key")
        return Caller(participant=p)
    pr = principal_of(request)
    return Caller(key_id=pr.key_id, scopes=pr.scopes, org_keys=pr.org_keys)


CallerDep = Annotated[Caller, Depends(get_caller)]
Stateless = Annotated[Principal, require("stateless")]
Reader = Annotated[Principal, require("read")]
Writer = Annotated[Principal, require("write")]
Admin = Annotated[Principal, require("admin")]
