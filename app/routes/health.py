"""GET /health: liveness plus what this deployment offers.

The database is pinged (``SELECT 1``, in a worker thread) at most once per :data:`PING_SECONDS`; in
between, the answer reuses the last successful ping. So under load ``/health`` costs no thread
hand-off and answers as fast as the event loop turns, while a database that stops answering still
makes it fail within a second.
"""

from __future__ import annotations

import time

import anyio
from fastapi import APIRouter, Request
from sqlalchemy import text

from .. import __version__
from ..capabilities import capabilities
from ..db import Database
from ..fastjson import FastRoute
from ..schemas import Health

router = APIRouter(tags=["health"], route_class=FastRoute)

PING_SECONDS = 1.0


def _ping(db: Database) -> None:
    with db.engine.connect() as conn:
        conn.execute(text("SELECT 1"))


@router.get("/health", response_model=Health, summary="Service health")
async def health(request: Request) -> dict:
    state = request.app.state
    db = state.db
    if time.monotonic() - getattr(state, "db_pinged_at", -PING_SECONDS) >= PING_SECONDS:
        await anyio.to_thread.run_sync(_ping, db)
        state.db_pinged_at = time.monotonic()
    return {"status": "ok", "version": __version__, "database": db.engine.dialect.name, **capabilities()}
