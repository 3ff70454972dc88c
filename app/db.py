"""Database access: the SQLAlchemy 2 engine and sessions, the declarative ``Base``, migrations.

SQLite (the default, in WAL mode so readers never block the writer) or PostgreSQL through psycopg 3,
chosen by ``DATABASE_URL``. The schema is owned by Alembic (``app/migrations``), run at start-up.

Other parts of the service (competitions...) add their tables by subclassing :class:`Base` in their
own modules and adding an Alembic revision whose ``down_revision`` is the current head.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


class Base(DeclarativeBase):
    """Declarative base of every table of the service."""


def normalise_url(url: str) -> str:
    """Make a relative SQLite path's folder exist and pick psycopg 3 for bare ``postgresql://``."""
    if url.startswith("sqlite:///") and not url.startswith("sqlite:////") and ":memory:" not in url:
        path = Path(url[len("sqlite:///") :])
        path.parent.mkdir(parents=True, exist_ok=True)
    elif url.startswith("sqlite:////"):
        Path(url[len("sqlite:///") :]).parent.mkdir(parents=True, exist_ok=True)
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite connections get WAL, a busy timeout and foreign keys."""
    url = normalise_url(url)
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):  # pragma: no cover - trivial
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


@dataclass
class Database:
    """An engine and its session factory (one per app instance, kept on ``app.state.db``)."""

    engine: Engine
    sessions: sessionmaker[Session]

    @classmethod
    def from_url(cls, url: str) -> Database:
        engine = make_engine(url)
        return cls(engine, sessionmaker(engine, expire_on_commit=False))

    def migrate(self) -> None:
        """Bring the schema to the newest Alembic revision."""
        run_migrations(self.engine)

    def dispose(self) -> None:
        self.engine.dispose()


def alembic_config(engine: Engine | None = None):
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    if engine is not None:
        cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%"))
    return cfg


def run_migrations(engine: Engine) -> None:
    """``alembic upgrade heads`` on ``engine``."""
    from alembic import command

    cfg = alembic_config(engine)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "heads")  # "heads": parallel branches of revisions all apply
