"""The demo loaded by ``make run`` (``agora serve --demo``): Algorithm 2.3's pixel competition.

Two competitions on the same task (the 6-bit grey level of a pixel from the patch above and to its
left, scikit-image's bundled natural images, see :mod:`evaluation.demo_task`):

* **closed**: 4,000 test pixels, a field of 22 diverse submissions from 10 participants and the
  deadline passed; the aggregation is queued as a background job at load time (the server runs it
  after start-up; the lab shows its progress), after which a visitor sees the final private
  leaderboard, Table 2.3 and the credit of every submission, and whether the aggregates beat the
  best single entry on this data (the numbers are computed, never written in);
* **open**: fresh test pixels, a few demo submissions, the deadline 30 days away and public data
  files (training pixels and the test patches) so a visitor can join, train a model and upload.

:func:`load_demo` is idempotent: a competition whose ``extra["demo"]`` tag already exists is left
alone. The organiser of both is an API key named ``demo organiser`` whose secret is written to
``Settings.demo_key_file`` (``var/demo-organiser-key.txt``, readable by whoever runs the server)
and announced once; the generated data are cached in ``Settings.demo_cache``.

The test pixels are cut from copies of the images warped by a secret drawn once and kept in
``<demo_cache>/demo-secret.txt`` (mode 0600), and the test file carries no image index, so the
hidden labels cannot be read off the public scikit-image images (:mod:`evaluation.demo_task`).
"""

from __future__ import annotations

import io
import logging
import secrets
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import select

from evaluation.aggregation import DEFAULT_ETAS
from evaluation.demo_task import make_demo_data

from .auth import create_key, hash_key
from .competitions import parsing
from .competitions import service as svc
from .competitions.models import Competition
from .models import ApiKey, Blob, JobRow, new_id, utcnow
from .settings import Settings, get_settings

log = logging.getLogger("agora.demo")

TAG_CLOSED = "pixels-closed-v2"  # v2: test pixels from secretly warped images (v1 labels were recomputable)
TAG_OPEN = "pixels-open-v2"
DEMO_ETAS = DEFAULT_ETAS
"""The demo run's Rényi sweep (η = 1/γ; η = 1 comes from the linear pool): the default 7 points, so the
lab's Fig. 2.5a is a curve. Measured on the demo's 22 submissions (2,000 validation items, 64
classes; 2 shared cores at load 15): the 7 fits took 70 s, the former 2 (η = 3, 30) 21 s."""

TASK = (
    "Predict the 6-bit grey level (64 classes) of a pixel from the 9x4 patch above it and the 4 pixels "
    "to its left (seed 000, Algorithm 2.3), on scikit-image's bundled natural images. Submit one row of "
    "(unnormalised) log-probabilities over the 64 levels per test item id; the server normalises the rows. "
    "Scored by perplexity (Eq. 2.26): uniform guessing scores 64."
)


def _organiser_key(session, key_file: Path) -> str:
    """The demo organiser's key id (created once; its secret is written to ``key_file``)."""
    if key_file.is_file():
        secret = key_file.read_text().strip()
        row = session.scalars(
            select(ApiKey).where(ApiKey.key_hash == hash_key(secret), ApiKey.revoked.is_(False))
        ).first()
        if row is not None:
            return row.id
    row, secret = create_key(session, "demo organiser", ["read", "write"])
    key_file.parent.mkdir(parents=True, exist_ok=True)
    key_file.write_text(secret + "\n")
    try:
        key_file.chmod(0o600)
    except OSError:
        pass
    print(f"agora demo: organiser API key written to {key_file} (paste it into the dashboard's key box)")
    return row.id


def _demo_secret(cache_dir: str) -> int:
    """The secret that warps the demo's test images: drawn once, kept server-side in the cache."""
    path = Path(cache_dir) / "demo-secret.txt"
    if path.is_file():
        try:
            return int(path.read_text().strip())
        except ValueError:
            pass
    path.parent.mkdir(parents=True, exist_ok=True)
    value = secrets.randbits(63)
    path.write_text(f"{value}\n")
    try:
        path.chmod(0o600)
    except OSError:
        pass
    return value


def _existing(session, tag: str) -> Competition | None:
    for c in session.scalars(select(Competition)):
        if (c.extra or {}).get("demo") == tag:
            return c
    return None


def _add_file(session, comp: Competition, name: str, data: bytes) -> None:
    session.add(Blob(owner_type="cmp_file", owner_id=comp.id, name=name, dtype="bytes", shape=[len(data)], data=data))


def _npz(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def _populate(
    db,
    owner: str,
    *,
    tag: str,
    title: str,
    seed: int,
    n_test: int,
    n_train: int,
    closed: bool,
    cache_dir: str,
    keep: slice | None = None,
    aggregate: bool = True,
) -> str:
    tr, te, agents = make_demo_data(
        n_train=n_train, n_test=n_test, seed=seed, cache_dir=cache_dir, secret=_demo_secret(cache_dir)
    )
    if keep is not None:
        agents = agents[keep]
    now = utcnow()
    start = now - timedelta(days=len(agents) + 3)
    with db.sessions() as s:
        comp = svc.create_competition(
            s,
            owner_key_id=owner,
            title=title,
            description=TASK,
            n_classes=64,
            labels=te.y,
            item_ids=np.arange(n_test) + 100_000,
            public_fraction=0.5,
            daily_cap=5,
            n_select=2,
            deadline=now + timedelta(days=30),
            extra={
                "demo": tag,
                "task": "pixel grey level, 64 classes (Algorithm 2.3)",
                "files": [] if closed else ["train.npz", "test.npz"],
            },
        )
        if not closed:
            _add_file(
                s,
                comp,
                "train.npz",
                _npz(x=tr.x.astype(np.uint8), y=tr.y.astype(np.uint8), image=tr.img.astype(np.uint8)),
            )
            _add_file(
                s,
                comp,
                "test.npz",
                _npz(x=te.x.astype(np.uint8), id=np.arange(n_test) + 100_000),  # no image index: see above
            )
            s.commit()
        people: dict[str, Any] = {}
        ids = np.arange(n_test) + 100_000
        for j, (who, what, lp) in enumerate(agents):
            if who not in people:
                people[who], _ = svc.join(s, comp, who)
            when = start + timedelta(days=j, hours=int(j * 7) % 24)
            svc.submit(
                s, comp, people[who], parsing.to_npy(ids, lp), description=what, filename=f"{who}-{j}.npy", now=when
            )
        if closed:
            comp.deadline = now - timedelta(hours=1)
            s.commit()
        cid = comp.id
        if aggregate:
            queue_aggregation(s, comp)
    return cid


def queue_aggregation(session, comp: Competition) -> str:
    """Queue the aggregation as a background job: the server's job runner picks it up once it
    starts, and the lab shows its progress. (Fitting every pool takes longer than the demo's
    start-up budget on a small machine, so :func:`load_demo` does not wait for it.)"""
    run = svc.new_aggregation(session, comp, {"etas": list(DEMO_ETAS)})
    job = JobRow(
        id=new_id("job"),
        kind=svc.JOB_KIND,
        spec={"aggregation_id": run.id},
        resource_type="competition",
        resource_id=comp.id,
    )
    session.add(job)
    run.job_id = job.id
    session.commit()
    return run.id


def load_demo(db, *, n_test: int = 4000, n_train: int = 30000, settings: Settings | None = None) -> dict[str, str]:
    """Create the demo competitions if they are missing; returns ``{tag: competition id}``.

    ``db`` is an :class:`app.db.Database` (migrated); ``settings`` (default: the process's) name
    the key file and the data cache. Safe to call at every start.
    """
    settings = settings or get_settings()
    cache = settings.demo_cache
    with db.sessions() as s:
        owner = _organiser_key(s, Path(settings.demo_key_file))
        found = {tag: _existing(s, tag) for tag in (TAG_CLOSED, TAG_OPEN)}
        for comp in found.values():  # a lost key file: the new demo key takes over the demo
            if comp is not None and comp.owner_key_id != owner:
                comp.owner_key_id = owner
        s.commit()
    demos: dict[str, dict[str, Any]] = {
        TAG_CLOSED: {"title": "Pixel grey levels (demo, closed)", "seed": 2026, "n_test": n_test, "closed": True},
        TAG_OPEN: {
            "title": "Pixel grey levels (demo, open)",
            "seed": 7,
            "n_test": n_test // 2,
            "closed": False,
            "keep": slice(0, 22, 3),
            "aggregate": False,
        },
    }
    return {
        tag: comp.id if comp else _populate(db, owner, tag=tag, n_train=n_train, cache_dir=cache, **demos[tag])
        for tag, comp in found.items()
    }
