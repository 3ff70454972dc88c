"""GET /health: liveness plus what this deployment offers."""

from __future__ import annotations

from fastapi import APIRouter, Request
from sqlalchemy import text

from .. import __version__
from ..capabilities import capabilities
from ..fastjson import FastRoute
from ..schemas import Health

router = APIRouter(tags=["health"], route_class=FastRoute)


@router.get("/health", response_model=Health, summary="Service health")
def health(request: Request) -> dict:
    db = request.app.state.db
    with db.engine.connect() as conn:
        conn.execute(text("SELECT 1"))
    caps = capabilities()
    return {"status": "ok", "version": __version__, "database": db.engine.dialect.name, **caps}
