"""The service's settings: one pydantic-settings object read from the environment.

Every field is read from ``AGORA_<NAME>`` (upper case), except the database URL, which is read from
``DATABASE_URL`` (the conventional name) or ``AGORA_DATABASE_URL``. ``docs/api.md`` lists them all
with their defaults.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

#: the scopes an API key may carry
SCOPES = ("stateless", "read", "write", "admin")


class Settings(BaseSettings):
    """Service configuration (environment variables ``AGORA_*`` and ``DATABASE_URL``)."""

    model_config = SettingsConfigDict(env_prefix="AGORA_", extra="ignore", case_sensitive=False)

    database_url: str = Field(
        "sqlite:///var/agora.db",
        validation_alias=AliasChoices("DATABASE_URL", "AGORA_DATABASE_URL", "database_url"),
        description="SQLAlchemy URL; a relative SQLite path is relative to the working directory. "
        "SQLite runs in WAL mode; postgresql:// (psycopg 3) is supported.",
    )
    admin_key: str | None = Field(
        None,
        description="A bootstrap API key with every scope, compared by its hash (never stored). "
        "Other keys are created with `agora keys create` or POST /v1/keys and stored hashed.",
    )
    anonymous_scopes: str = Field(
        "stateless",
        description="Comma-separated scopes granted to requests without an API key. 'stateless' "
        "covers POST /v1/aggregate, /v1/markets/equilibrium and /v1/solve; '' disables anonymous "
        "access; 'stateless,read,write' opens everything except key management.",
    )
    max_body_bytes: int = Field(64 * 1024 * 1024, description="Largest accepted request body (413 above).")
    max_array_elements: int = Field(
        20_000_000, description="Largest number of numbers in one posted array (413 above)."
    )
    job_threshold: int = Field(
        200_000,
        description="Fits, sweeps and trainings whose work size (n_items x n_agents x n_classes, times "
        "the number of gammas of a sweep) exceeds this run as background jobs (202 + Location).",
    )
    job_workers: int = Field(2, description="Threads running background jobs in each job-running process.")
    run_jobs: bool = Field(
        True,
        description="Run background jobs inside this (HTTP) process. `agora serve` sets it false and starts "
        "job worker processes (`agora worker`) instead; an app built by `create_app` alone runs its own.",
    )
    job_lease_seconds: float = Field(
        20.0,
        gt=0,
        description="A running job whose worker has not renewed its heartbeat (every lease/10 s) for this "
        "long is re-queued by any live worker: its process died (kill -9, machine lost).",
    )
    job_poll_seconds: float = Field(0.5, gt=0, description="How often a job worker looks for queued jobs.")
    sync_offload_elements: int = Field(
        20_000,
        description="Stateless requests above this many numbers run in a worker thread instead of the event loop.",
    )
    page_size: int = Field(50, description="Default page size of list endpoints (max 500).")
    idempotency_ttl_hours: float = Field(24.0, description="How long Idempotency-Key records are kept.")
    idempotency_lease_seconds: float = Field(
        30.0,
        gt=0,
        description="Lease of a request in progress under an Idempotency-Key, renewed while it runs: a "
        "retry gets 409 while it holds, and takes the key over once it ends (the server died).",
    )
    migrate_on_startup: bool = Field(True, description="Run Alembic migrations when the app starts.")
    static_dir: str | None = Field(
        None, description="Folder served at /static (index.html at /); default: the repository's static/."
    )
    log_level: str = Field("info", description="Log level of the service.")
    demo_key_file: str = Field(
        "var/demo-organiser-key.txt",
        description="Where `agora serve --demo` writes the secret of the demo competitions' organiser key.",
    )
    demo_cache: str = Field(
        "var/demo-cache", description="Folder caching the demo's generated pixel data between starts."
    )
    dask_scheduler: str | None = Field(
        None,
        description="Address of a Dask scheduler (tcp://host:8786): a competition's aggregation runs its "
        "methods, gamma sweep and leave-one-out refits as tasks on that cluster. Unset: everything runs in "
        "the server process.",
    )
    competition_joins_per_hour: int = Field(
        20, ge=1, description="Competition joins accepted per client address per hour (429 above)."
    )
    competition_submissions_per_hour: int = Field(
        120, ge=1, description="Competition uploads accepted per client address per hour (429 above)."
    )

    @field_validator("anonymous_scopes")
    @classmethod
    def _check_scopes(cls, v: str) -> str:
        bad = [s for s in _split(v) if s not in SCOPES]
        if bad:
            raise ValueError(f"unknown scopes {bad}; known: {list(SCOPES)}")
        return v

    @property
    def anonymous_scope_set(self) -> frozenset[str]:
        return frozenset(_split(self.anonymous_scopes))

    @property
    def static_path(self) -> Path:
        if self.static_dir:
            return Path(self.static_dir)
        return Path(__file__).resolve().parent.parent / "static"

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")


def _split(v: str) -> list[str]:
    return [s.strip() for s in v.split(",") if s.strip()]


@lru_cache
def get_settings() -> Settings:
    """The settings of this process (read once from the environment)."""
    return Settings()
