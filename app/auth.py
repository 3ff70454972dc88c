"""API keys with scopes; keys are stored as SHA-256 hashes, never in clear.

A request presents its key as ``Authorization: Bearer <key>`` or ``X-API-Key: <key>``. Scopes:

``stateless``  POST /v1/aggregate, /v1/markets/equilibrium, /v1/solve (nothing stored)
``read``       GET pools, markets, jobs, arrays; predict with a stored pool or market
``write``      create, fit, train, delete pools and markets; upload arrays; cancel jobs
``admin``      manage API keys; see and act on every caller's resources (implies every other scope)

A scope that grants more implies less: ``write`` implies ``read``, ``read`` implies ``stateless``,
and every valid key also has what anonymous callers have (``Settings.anonymous_scopes``, default
``stateless``), so a ``read,write`` key can call ``/v1/aggregate``. A wrong key is 401, a valid key
(or a competition participant's ``agp_`` token) without the scope 403 with a message saying why.

Tenancy: stored resources (pools, markets, uploaded arrays, jobs) belong to the key that created them
(:attr:`Principal.owner`; anonymous callers share the owner ``anonymous``); lists and reads show a
caller what it owns and what the other keys of its organisation own (:attr:`Principal.owners`), an
``admin`` key sees and acts on all (:mod:`app.tenancy`). ``AGORA_ADMIN_KEY`` is a bootstrap key with every scope, checked
by hash. Key look-ups are cached for :data:`CACHE_SECONDS` per process, so a revoked key stops
working within that time.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass

from fastapi import Request
from sqlalchemy import select
from sqlalchemy.orm import Session

from solvers.errors import InputError

from .errors import unauthenticated
from .models import ApiKey, new_id
from .settings import SCOPES

CACHE_SECONDS = 5.0


def hash_key(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


#: the scopes each scope implies (itself included)
IMPLIES: dict[str, frozenset[str]] = {
    "stateless": frozenset({"stateless"}),
    "read": frozenset({"read", "stateless"}),
    "write": frozenset({"write", "read", "stateless"}),
    "admin": frozenset(SCOPES),
}


def implied(scopes: frozenset[str] | set[str] | list[str]) -> frozenset[str]:
    """``scopes`` with every scope they imply."""
    return frozenset().union(*(IMPLIES.get(s, frozenset({s})) for s in scopes))


@dataclass(frozen=True)
class Principal:
    """Who is calling: ``key_id`` (``None`` when anonymous), the granted scopes (implied ones
    included) and whether an anonymous caller presented a competition participant token."""

    key_id: str | None
    scopes: frozenset[str]
    participant: bool = False
    org_keys: frozenset[str] = frozenset()  # the keys of its organisation (itself included)

    @property
    def anonymous(self) -> bool:
        return self.key_id is None

    @property
    def admin(self) -> bool:
        return "admin" in self.scopes

    @property
    def owner(self) -> str:
        """The owner recorded on what this caller creates: its key id, or ``anonymous``."""
        return self.key_id or "anonymous"

    @property
    def owners(self) -> frozenset[str]:
        """The owners whose resources this caller sees: itself and its organisation's keys."""
        return self.org_keys | {self.owner}

    def allows(self, scope: str) -> bool:
        return scope in self.scopes or "admin" in self.scopes


def presented_key(request: Request) -> str | None:
    auth = request.headers.get("authorization")
    if auth:
        scheme, _, value = auth.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
    key = request.headers.get("x-api-key")
    return key.strip() if key and key.strip() else None


_cache: dict[str, tuple[float, Principal | None]] = {}


def _lookup(request: Request, secret: str) -> Principal | None:
    h = hash_key(secret)
    now = time.monotonic()
    hit = _cache.get(h)
    if hit is not None and hit[0] > now:
        return hit[1]
    settings = request.app.state.settings
    principal: Principal | None
    if settings.admin_key and secrets.compare_digest(h, hash_key(settings.admin_key)):
        principal = Principal("admin-env", frozenset(SCOPES))
    else:
        with request.app.state.db.sessions() as s:
            row = s.scalars(select(ApiKey).where(ApiKey.key_hash == h, ApiKey.revoked.is_(False))).first()
            principal = None
            if row is not None:
                mates = s.scalars(select(ApiKey.id).where(ApiKey.org_id == row.org_id)).all() if row.org_id else []
                scopes = implied([x for x in row.scopes.split(",") if x])
                principal = Principal(row.id, scopes, org_keys=frozenset(mates))
    if len(_cache) > 10_000:
        _cache.clear()
    _cache[h] = (now + CACHE_SECONDS, principal)
    return principal


def principal_of(request: Request) -> Principal:
    """The caller of ``request`` (a participant token outside its competition acts as anonymous)."""
    anonymous = implied(request.app.state.settings.anonymous_scope_set)
    secret = presented_key(request)
    if secret is None:
        return Principal(None, anonymous)
    if secret.startswith("agp_"):
        return Principal(None, anonymous, participant=True)
    p = _lookup(request, secret)
    if p is None:
        raise unauthenticated("unknown or revoked API key", "unknown or revoked API key", code="bad-key")
    return Principal(p.key_id, p.scopes | anonymous, org_keys=p.org_keys)


def create_key(session: Session, name: str, scopes: list[str]) -> tuple[ApiKey, str]:
    """Store a new key (hashed) and return its row and the secret, shown once."""
    bad = [s for s in scopes if s not in SCOPES]
    if bad or not scopes:
        raise InputError("scopes", f"must be a non-empty subset of {list(SCOPES)}; got {scopes}")
    secret = "agora_" + secrets.token_urlsafe(32)
    row = ApiKey(id=new_id("key"), name=name, key_hash=hash_key(secret), scopes=",".join(dict.fromkeys(scopes)))
    session.add(row)
    session.commit()
    return row, secret


def forget_keys() -> None:
    """Drop this process's cached key look-ups (a key revoked or moved between organisations)."""
    _cache.clear()


def revoke_key(session: Session, key_id: str) -> bool:
    row = session.get(ApiKey, key_id)
    if row is None:
        return False
    row.revoked = True
    session.commit()
    forget_keys()
    return True
