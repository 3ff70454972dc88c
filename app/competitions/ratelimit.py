"""A rate limit per client address on joining and submitting (the score oracle's other door).

A sliding window in memory, per server process: ``allow(key)`` records one event and says whether
``limit`` events in the last ``window`` seconds were already reached. It bounds how fast one address
can make identities or probe the public score; invitations and the Ladder (``evaluation.ladder``)
bound what those identities can learn.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque


class RateLimiter:
    def __init__(self, limit: int, window: float = 3600.0) -> None:
        self.limit = int(limit)
        self.window = float(window)
        self._events: dict[str, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()

    def allow(self, key: str, now: float | None = None) -> bool:
        """Record an event for ``key`` unless its window is full; True when it was recorded."""
        now = time.monotonic() if now is None else now
        with self._lock:
            q = self._events[key]
            while q and q[0] <= now - self.window:
                q.popleft()
            if len(q) >= self.limit:
                return False
            q.append(now)
            return True

    def retry_after(self, key: str, now: float | None = None) -> int:
        """Seconds until ``key`` may act again (at least 1)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            q = self._events.get(key)
            return max(1, int((q[0] + self.window - now) + 1)) if q else 1
