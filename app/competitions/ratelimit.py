"""A rate limit per client address on joining and submitting (the score oracle's other door).

The budget lives in the database (table ``competition_rate_counters``: one row per key and window
of ``window`` seconds), so every server process on one database shares it: a client cannot multiply
its budget by reaching several workers. The count is a sliding-window estimate (the current fixed
window's events plus the previous window's, weighted by how much of it still lies within the last
``window`` seconds), which never lets more than ``limit`` events through in any aligned window and
smooths the burst a fixed window allows at its boundary. Each event is one conditional ``UPDATE``
(or an ``INSERT`` opening the window), atomic on SQLite and PostgreSQL alike.

It bounds how fast one address can make identities or probe the public score; invitations and the
Ladder (``evaluation.ladder``) bound what those identities can learn.
"""

from __future__ import annotations

import math
import time

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError

from app.db import Database

from .models import RateCounter


class RateLimiter:
    """``limit`` events per ``window`` seconds and key, counted in ``db``; ``name`` separates the
    budgets of several limiters (join, submit) in the one table."""

    def __init__(self, db: Database, name: str, limit: int, window: float = 3600.0) -> None:
        self.db, self.name = db, name
        self.limit = int(limit)
        self.window = int(window)

    def _window(self, now: float) -> tuple[int, float]:
        start = int(now // self.window) * self.window
        return start, (now - start) / self.window

    def allow(self, key: str, now: float | None = None) -> bool:
        """Record an event for ``key`` unless its budget is spent; True when it was recorded."""
        now = time.time() if now is None else now
        start, frac = self._window(now)
        k = f"{self.name}:{key}"
        with self.db.sessions() as s:
            prev = s.scalar(
                select(RateCounter.count).where(RateCounter.key == k, RateCounter.window_start == start - self.window)
            )
            room = self.limit - math.ceil((prev or 0) * (1.0 - frac))
            if room <= 0:
                return False
            bump = (
                update(RateCounter)
                .where(RateCounter.key == k, RateCounter.window_start == start, RateCounter.count < room)
                .values(count=RateCounter.count + 1)
            )
            for _ in range(2):
                if s.execute(bump).rowcount == 1:
                    s.commit()
                    return True
                if s.get(RateCounter, (k, start)) is not None:
                    s.rollback()
                    return False  # the window exists and is full
                try:  # open the window (another process may open it at the same time: then bump again)
                    s.add(RateCounter(key=k, window_start=start, count=1))
                    s.execute(delete(RateCounter).where(RateCounter.window_start < start - self.window))
                    s.commit()
                    return True
                except IntegrityError:
                    s.rollback()
            return False

    def retry_after(self, key: str, now: float | None = None) -> int:
        """Seconds until ``key`` may surely act again: the end of the current window (at least 1)."""
        now = time.time() if now is None else now
        start, _ = self._window(now)
        return max(1, math.ceil(start + self.window - now))
