"""Tables of competitions (SQLAlchemy 2, on the service's :class:`app.db.Base`).

Hidden data (the labels, the server's split seed, private scores) live in columns that only
:mod:`app.competitions.service` reads; the views in :mod:`app.competitions.schemas` decide what a
caller may see. Arrays are :class:`app.models.Blob` rows like every array of the service: the item
ids and hidden labels owned by the competition (``owner_type="competition"``, names ``item_ids``
and ``labels``), each submission's matrix by the submission (``"submission"``, ``data``). Only
uploads (``"upload"``) are ever served by ``/v1/arrays``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, DateTime, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.db import Base
from app.models import Listed, utcnow


class CompetitionPart:
    """The columns of every row that belongs to a competition: its id, its competition (deleting
    the competition deletes it) and its creation time."""

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    competition_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("competitions.id", ondelete="CASCADE"), index=True
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Competition(Listed, Base):
    __tablename__ = "competitions"
    title: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    n_classes: Mapped[int] = mapped_column(Integer)
    n_items: Mapped[int] = mapped_column(Integer)
    public_fraction: Mapped[float] = mapped_column(Float, default=0.5)
    split_seed: Mapped[int] = mapped_column(Integer)  # hidden: it fixes which items are public
    # how the public part is drawn (evaluation.split.SPLIT_KINDS); "grouped" reads the "groups" blob
    split_kind: Mapped[str] = mapped_column(String(12), default="random")
    n_public: Mapped[int | None] = mapped_column(Integer, nullable=True)  # None: round(public_fraction * n)
    daily_cap: Mapped[int] = mapped_column(Integer, default=5)
    n_select: Mapped[int] = mapped_column(Integer, default=2)
    deadline: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    join_policy: Mapped[str] = mapped_column(String(10), default="open")  # open | invite
    score_mechanism: Mapped[str] = mapped_column(String(10), default="exact")  # exact | round | ladder
    score_step: Mapped[float] = mapped_column(Float, default=0.0)  # the rounding step / Ladder margin
    # the run whose aggregate rows the leaderboard shows (None: the latest successful run)
    pinned_aggregation_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    owner_key_id: Mapped[str] = mapped_column(String(40))
    # blobs: "item_ids" (int64, public), "labels" (int16, HIDDEN), "groups" (int64 codes, HIDDEN; grouped split)
    extra: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # public data links, demo notes


class Participant(CompetitionPart, Base):
    __tablename__ = "competition_participants"
    name: Mapped[str] = mapped_column(String(100))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, index=True)


class Invitation(CompetitionPart, Base):
    """An organiser-issued code: redeemed once, it makes one participant (``join_policy="invite"``)."""

    __tablename__ = "competition_invitations"
    code_hash: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    note: Mapped[str] = mapped_column(String(200), default="")
    participant_id: Mapped[str | None] = mapped_column(String(40), nullable=True)  # set when redeemed
    used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    @property
    def batch(self) -> str:
        """The id shared by the invitations issued by one request: each one's id is ``<batch>_<i>``."""
        return self.id.rsplit("_", 1)[0]


class Submission(CompetitionPart, Base):
    __tablename__ = "competition_submissions"
    __table_args__ = (Index("ix_submissions_comp_part", "competition_id", "participant_id", "created_at"),)
    participant_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("competition_participants.id", ondelete="CASCADE")
    )
    description: Mapped[str] = mapped_column(String(500), default="")
    filename: Mapped[str] = mapped_column(String(200), default="")
    public_perplexity: Mapped[float] = mapped_column(Float)
    public_log_loss: Mapped[float] = mapped_column(Float)
    # what the public leaderboard and the participant see (evaluation.ladder); the exact public
    # score above is for the organiser only when the competition rounds or ladders its scores
    shown_public_perplexity: Mapped[float | None] = mapped_column(Float, nullable=True)
    private_perplexity: Mapped[float] = mapped_column(Float)  # HIDDEN until the deadline
    private_log_loss: Mapped[float] = mapped_column(Float)  # HIDDEN until the deadline
    selected: Mapped[bool] = mapped_column(Boolean, default=False)
    # active | withdrawn (by its participant, before the deadline) | excluded (by the organiser)
    status: Mapped[str] = mapped_column(String(12), default="active")
    status_reason: Mapped[str] = mapped_column(String(200), default="")
    warnings: Mapped[list[Any]] = mapped_column(JSON, default=list)
    # blob: "data" (float32 (n_items, K), normalised log-probabilities)


class AggregationRun(CompetitionPart, Base):
    """One run of 'fit every pool on the submissions'; its result holds Table 2.3 and the credit."""

    __tablename__ = "competition_aggregations"
    job_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    state: Mapped[str] = mapped_column(
        String(20), default="queued"
    )  # queued | running | succeeded | failed | cancelled
    params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    submission_ids: Mapped[list[str]] = mapped_column(JSON, default=list)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)  # contains private scores: HIDDEN
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    stage: Mapped[str] = mapped_column(String(100), default="")  # e.g. "renyi: fit 2/4", "market: epoch 12/30"
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class RateCounter(Base):
    """Events of one rate-limit key (action and client address) in one window, shared by every
    server process through the database (:class:`app.competitions.ratelimit.RateLimiter`)."""

    __tablename__ = "competition_rate_counters"
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    window_start: Mapped[int] = mapped_column(BigInteger, primary_key=True)  # Unix seconds
    count: Mapped[int] = mapped_column(Integer, default=0)
