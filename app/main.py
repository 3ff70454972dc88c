"""The FastAPI application: ``create_app()`` wires settings, database, jobs, errors and routers.

Start it with ``agora serve`` (or ``uvicorn app.main:create_app --factory``). OpenAPI at ``/docs``;
the dashboard (``static/``) at ``/`` and ``/static``.
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles

from . import __version__, errors, idempotency
from .db import Database
from .idempotency import IdempotencyMiddleware
from .jobs import JobRunner
from .limits import BodyLimitMiddleware
from .recovery import reap_orphans
from .routes import aggregate, arrays, competitions, health, jobs, keys, markets, organisations, pools, solve
from .settings import Settings, get_settings

log = logging.getLogger("agora.api")

DESCRIPTION = """Agora pools probabilistic predictions (opinion pools, Rényi aggregators, machine-learning
markets) and learns their weights with a shared solver core.

Errors are `application/problem+json` (RFC 9457). Authenticate with `Authorization: Bearer <key>`
or `X-API-Key`; anonymous callers get the scopes of `AGORA_ANONYMOUS_SCOPES`. Every creating POST
honours `Idempotency-Key`. Large work answers 202 with `Location: /v1/jobs/{id}`."""


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the application (one database engine per app; its job runner runs jobs in this process
    only with ``Settings.run_jobs``, else it only queues them for the job worker processes)."""
    settings = settings or get_settings()
    db = Database.from_url(settings.database_url)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if settings.migrate_on_startup:
            db.migrate()
        reap_orphans(db)
        if settings.run_jobs:  # else job worker processes run them (agora serve, agora worker: app.worker)
            runner.start()
        try:
            yield
        finally:
            runner.stop()
            db.dispose()

    app = FastAPI(
        title="Agora",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # served below from packages that vendor the assets: /docs and /redoc work offline
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    runner = JobRunner(db, settings.job_workers, settings.job_poll_seconds, settings.job_lease_seconds)
    app.state.settings = settings
    app.state.db = db
    app.state.jobs = runner

    errors.install(app)
    idempotency.install(db)
    app.add_middleware(IdempotencyMiddleware)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)

    app.include_router(health.router)
    app.include_router(aggregate.router)
    app.include_router(pools.router)
    app.include_router(markets.router)
    app.include_router(solve.router)
    app.include_router(jobs.router)
    app.include_router(arrays.router)
    app.include_router(keys.router)
    app.include_router(organisations.router)
    app.include_router(competitions.router)

    _mount_static(app, settings)
    _mount_docs(app)
    return app


def _mount_docs(app: FastAPI) -> None:
    """Swagger UI at ``/docs`` and ReDoc at ``/redoc`` with their assets (Swagger UI 5, vendored by the
    ``swagger-ui-py`` package; ReDoc's standalone bundle, by ``fastapi-standalone-docs``) served by
    this app: no CDN and no web fonts, so both render offline."""
    from pathlib import Path

    import fastapi_standalone_docs
    import swagger_ui
    from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html

    assets = Path(swagger_ui.__file__).resolve().parent / "static"
    app.mount("/docs-assets", StaticFiles(directory=assets), name="docs-assets")
    redoc = Path(fastapi_standalone_docs.__file__).resolve().parent / "static" / "redoc"
    app.mount("/redoc-assets", StaticFiles(directory=redoc), name="redoc-assets")

    def page(path: str, render, title: str, **assets) -> None:
        """Serve at ``path`` the HTML ``render`` builds around this app's schema and ``assets``."""
        openapi = app.openapi_url or "/openapi.json"
        app.add_api_route(
            path, lambda: render(openapi_url=openapi, title=f"{app.title} - {title}", **assets), include_in_schema=False
        )

    icon = "/docs-assets/favicon-32x32.png"
    page(
        "/docs",
        get_swagger_ui_html,
        "API docs",
        swagger_js_url="/docs-assets/swagger-ui-bundle.js",
        swagger_css_url="/docs-assets/swagger-ui.css",
        swagger_favicon_url=icon,
    )
    page(
        "/redoc",
        get_redoc_html,
        "ReDoc",
        redoc_js_url="/redoc-assets/redoc.standalone.js",
        redoc_favicon_url=icon,
        with_google_fonts=False,
    )


def _mount_static(app: FastAPI, settings: Settings) -> None:
    static = settings.static_path
    if static.is_dir():
        app.mount("/static", StaticFiles(directory=static, html=True), name="static")

    @app.get("/", include_in_schema=False)
    def index():
        page = static / "index.html"
        if page.is_file():
            return FileResponse(page)
        return HTMLResponse(
            "<!doctype html><title>Agora</title><h1>Agora</h1><p>The API is documented at "
            "<a href='/docs'>/docs</a>.</p>"
        )
