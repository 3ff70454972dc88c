"""Start-up recovery after a crash: resources left half-made by a process that died.

* a pool ``pending`` with no job was being fitted inline by a process that died (older versions
  committed it before the fit; today an inline fit writes its pool ready in one transaction): it is
  deleted, with its arrays, so a retried Idempotency-Key runs afresh;
* a pool ``pending`` or a market ``training`` whose job is gone or ended without reaching it is
  marked ``failed`` (pool) or ``ready`` again (market: its wealth is the last stored one).

Pending Idempotency-Key records need nothing here: their lease ends by itself (:mod:`app.idempotency`).
Jobs that were running are re-queued by the job runner (:mod:`app.jobs`).
"""

from __future__ import annotations

import logging

from sqlalchemy import select

from .arrays import delete_blobs
from .db import Database
from .models import JobRow, MarketRow, PoolRow

log = logging.getLogger("agora.recovery")

LIVE = ("queued", "running", "succeeded")


def reap_orphans(db: Database) -> dict[str, int]:
    """Delete or settle the orphans described above; returns how many of each were found."""
    counts = {"pools_deleted": 0, "pools_failed": 0, "markets_reset": 0}
    with db.sessions() as s:
        for row in s.scalars(select(PoolRow).where(PoolRow.status == "pending")).all():
            job = s.get(JobRow, row.job_id) if row.job_id else None
            if row.job_id is None:
                delete_blobs(s, "pool", row.id)
                s.delete(row)
                counts["pools_deleted"] += 1
            elif job is None or job.state not in LIVE:
                row.status = "failed"
                row.error = {"detail": "its fit did not survive a server stop"}
                counts["pools_failed"] += 1
        for m in s.scalars(select(MarketRow).where(MarketRow.status == "training")).all():
            job = s.get(JobRow, m.job_id) if m.job_id else None
            if job is None or job.state not in ("queued", "running"):
                m.status = "ready"
                counts["markets_reset"] += 1
        s.commit()
    if any(counts.values()):
        log.warning("start-up recovery: %s", counts)
    return counts
