"""The service's tables (SQLAlchemy 2 declarative). Arrays live in :class:`Blob` as ``.npy`` bytes.

Identifiers are prefixed random strings (``pool_...``, ``mkt_...``, ``job_...``, ``arr_...``,
``key_...``) so that a cursor over ``(created_at, id)`` pages stably.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, Float, Index, Integer, LargeBinary, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, declared_attr, mapped_column

from .db import Base


def utcnow() -> datetime:
    return datetime.now(UTC)


def aware(dt: datetime | None) -> datetime | None:
    """``dt`` with its time zone: SQLite returns naive datetimes, which are UTC here."""
    if dt is None:
        return None
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(8)}"


class ApiKey(Base):
    """An API key: only the SHA-256 of the secret is stored."""

    __tablename__ = "api_keys"
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    key_hash: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    scopes: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    revoked: Mapped[bool] = mapped_column(Boolean, default=False)
    org_id: Mapped[str | None] = mapped_column(String(40), nullable=True, index=True)  # its organisation


class Blob(Base):
    """One array as ``.npy`` bytes, owned by a resource (``owner_type``, ``owner_id``, ``name``).

    Uploaded arrays have ``owner_type="upload"`` and ``owner_id`` = their own ``arr_`` id.
    """

    __tablename__ = "blobs"
    __table_args__ = (UniqueConstraint("owner_type", "owner_id", "name", name="uq_blob_owner_name"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    owner_type: Mapped[str] = mapped_column(String(20))
    owner_id: Mapped[str] = mapped_column(String(40), index=True)
    name: Mapped[str] = mapped_column(String(100))
    dtype: Mapped[str] = mapped_column(String(20))
    shape: Mapped[list[int]] = mapped_column(JSON)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    owner: Mapped[str | None] = mapped_column(String(40), nullable=True)  # the key of an upload (app.tenancy)


class Listed:
    """A table whose rows are listed newest first (:mod:`app.pagination`): their ``id``, their
    creation time and the ``(created_at, id)`` index the cursor walks."""

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    @declared_attr.directive
    def __table_args__(cls) -> tuple[Any, ...]:
        return (Index(f"ix_{cls.__tablename__}_created", "created_at", "id"),)


class StoredResource(Listed):
    """The columns every stored pool and market has besides :class:`Listed`'s: its name, its size,
    the job working on it and its owner."""

    name: Mapped[str] = mapped_column(String(200), default="")
    n_agents: Mapped[int] = mapped_column(Integer, default=0)
    n_classes: Mapped[int] = mapped_column(Integer, default=0)
    job_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    owner: Mapped[str | None] = mapped_column(String(40), nullable=True, index=True)  # app.tenancy

    def links(self, collection: str, *actions: str) -> dict[str, str]:
        """Its URL under ``/v1/{collection}``, its ``actions``' URLs and, while a job works on it, the job's."""
        me = f"/v1/{collection}/{self.id}"
        out = {"self": me} | {a: f"{me}/{a}" for a in actions}
        if self.job_id:
            out["job"] = f"/v1/jobs/{self.job_id}"
        return out


class PoolRow(StoredResource, Base):
    """A fitted (or fitting) pool: its method and parameters, learnt scalars, metrics and trace."""

    __tablename__ = "pools"
    method: Mapped[str] = mapped_column(String(40))
    params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    kind: Mapped[str] = mapped_column(String(20), default="log_probs")
    status: Mapped[str] = mapped_column(String(20), default="ready")  # pending | ready | failed
    n_items: Mapped[int] = mapped_column(Integer, default=0)
    state: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # learnt scalars / small lists
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    fit: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # solver result + trace, curve
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)


class MarketRow(StoredResource, Base):
    """A machine-learning market: its agents and their utilities, wealth, and training history."""

    __tablename__ = "markets"
    spec: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    state: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String(20), default="ready")  # ready | training | failed
    n_trained: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Organisation(Listed, Base):
    """An organisation of API keys: each of its keys sees what any of them owns (:mod:`app.tenancy`)."""

    __tablename__ = "organisations"
    name: Mapped[str] = mapped_column(String(200), default="")


class JobRow(Listed, Base):
    """A background job: its kind, inputs (spec + blobs), state, progress, ETA and result."""

    __tablename__ = "jobs"
    kind: Mapped[str] = mapped_column(String(40))
    state: Mapped[str] = mapped_column(String(20), default="queued", index=True)
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    eta_seconds: Mapped[float | None] = mapped_column(Float, nullable=True)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    resource_type: Mapped[str | None] = mapped_column(String(20), nullable=True)
    resource_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    heartbeat: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    owner: Mapped[str | None] = mapped_column(String(40), nullable=True, index=True)  # app.tenancy
    worker: Mapped[str | None] = mapped_column(String(100), nullable=True)  # host:pid of its claimant


class IdempotencyRecord(Base):
    """The stored answer to a POST sent with an ``Idempotency-Key``."""

    __tablename__ = "idempotency"
    __table_args__ = (UniqueConstraint("owner", "key", name="uq_idem_owner_key"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    owner: Mapped[str] = mapped_column(String(64))
    key: Mapped[str] = mapped_column(String(255))
    method: Mapped[str] = mapped_column(String(10))
    path: Mapped[str] = mapped_column(Text)
    request_hash: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(20), default="pending")  # pending | done
    status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    headers: Mapped[list[list[str]] | None] = mapped_column(JSON, nullable=True)
    body: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)  # pending only
    resource: Mapped[str | None] = mapped_column(String(200), nullable=True)  # written with the resource
