"""Persistence on SQLite and on a throwaway PostgreSQL: migrations, binary arrays, pools that
survive a restart of the app, idempotency records, jobs re-queued after a crash."""

from __future__ import annotations

import time
from datetime import timedelta

import numpy as np
import pytest
from sqlalchemy import inspect, select, text, update

from app.db import Database
from app.models import Blob, JobRow, PoolRow, utcnow

from .conftest import make_settings


def _app_client(url):
    from fastapi.testclient import TestClient

    from app.main import create_app
    from app.pool_service import _CACHE

    _CACHE.clear()  # restored pools must come from the database, not this process's cache
    c = TestClient(create_app(make_settings(url)), headers={"Authorization": "Bearer test-admin-key"})
    c.__enter__()
    return c


def test_migrations_create_the_schema(db_url):
    db = Database.from_url(db_url)
    db.migrate()
    db.migrate()  # idempotent
    tables = set(inspect(db.engine).get_table_names())
    assert {"api_keys", "blobs", "pools", "markets", "jobs", "idempotency", "alembic_version"} <= tables
    with db.engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
        if db.engine.dialect.name == "sqlite":
            assert conn.execute(text("PRAGMA journal_mode")).scalar().lower() == "wal"
    db.dispose()


def test_pool_survives_restart_with_binary_arrays(db_url):
    rng = np.random.default_rng(7)
    p = rng.dirichlet(np.ones(5), size=(80, 70))  # 70 agents: weights stored as a .npy blob
    y = rng.integers(0, 5, 80)
    q = rng.dirichlet(np.ones(5), size=(4, 70))
    c = _app_client(db_url)
    r = c.post(
        "/v1/pools",
        json={"method": "bma", "kind": "probs", "predictions": p.tolist(), "labels": y.tolist()},
        headers={"Idempotency-Key": "persist-1"},
    )
    assert r.status_code == 201, r.text
    pid, weights = r.json()["id"], r.json()["weights"]
    before = c.post(f"/v1/pools/{pid}/predict", json={"kind": "probs", "predictions": q.tolist()}).json()["aggregate"]
    c.__exit__(None, None, None)

    c = _app_client(db_url)  # a new app: new engine, empty caches
    got = c.get(f"/v1/pools/{pid}").json()
    assert got["weights"] == weights and got["status"] == "ready"
    after = c.post(f"/v1/pools/{pid}/predict", json={"kind": "probs", "predictions": q.tolist()}).json()["aggregate"]
    np.testing.assert_array_equal(np.array(after), np.array(before))
    # the acknowledged create is still idempotent after the restart
    r2 = c.post(
        "/v1/pools",
        json={"method": "bma", "kind": "probs", "predictions": p.tolist(), "labels": y.tolist()},
        headers={"Idempotency-Key": "persist-1"},
    )
    assert r2.json()["id"] == pid and r2.headers["idempotent-replayed"] == "true"
    with c.app.state.db.sessions() as s:
        blobs = s.scalars(select(Blob).where(Blob.owner_type == "pool", Blob.owner_id == pid)).all()
        assert blobs and all(b.data[:6] == b"\x93NUMPY" for b in blobs)  # binary .npy, not JSON lists
        assert any(b.name == "weights_" for b in blobs)
        assert s.scalar(select(PoolRow.state).where(PoolRow.id == pid)).get("weights_") is None
    c.__exit__(None, None, None)


def test_crashed_job_is_requeued_and_finishes(db_url, monkeypatch):
    """A job left 'running' by a dead process (stale heartbeat) is taken up again."""
    import app.jobs as jobs

    monkeypatch.setattr(jobs, "HEARTBEAT_SECONDS", 0.1)
    rng = np.random.default_rng(8)
    p = np.log(rng.dirichlet(np.ones(3), size=(10, 2)))
    y = rng.integers(0, 3, 10)
    db = Database.from_url(db_url)
    db.migrate()
    with db.sessions() as s:
        s.add(PoolRow(id="pool_crash", method="bma", params={}, status="pending", kind="log_probs"))
        s.commit()
        runner = jobs.JobRunner(db, 1)
        job = runner.submit(
            s,
            "pool_fit",
            {"pool_id": "pool_crash", "method": "bma", "params": {}, "kind": "log_probs"},
            {"predictions": p, "labels": y},
            resource_type="pool",
            resource_id="pool_crash",
        )
        jid = job.id
        # as if a process had claimed it and died a minute ago
        s.execute(
            update(JobRow)
            .where(JobRow.id == jid)
            .values(state="running", attempts=1, heartbeat=utcnow() - timedelta(seconds=60))
        )
        s.commit()
    runner.start()
    try:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 20:
            with db.sessions() as s:
                st = s.get(JobRow, jid).state
            if st in ("succeeded", "failed"):
                break
            time.sleep(0.1)
        with db.sessions() as s:
            j = s.get(JobRow, jid)
            assert j.state == "succeeded", j.error
            assert j.attempts == 2
            assert s.get(PoolRow, "pool_crash").status == "ready"
    finally:
        runner.stop()
        db.dispose()


@pytest.mark.parametrize(
    "method,body",
    [
        ("topk", {}),
        ("power_bma", {}),
        ("linear", {}),
        ("log", {}),
        ("renyi", {"gamma": 0.3}),
        ("renyi", {"gamma": [0.05, 0.5, 1.0]}),
    ],
)
def test_every_pool_method_round_trips_through_the_database(tmp_path, method, body):
    """A stored pool, rebuilt from the database in a fresh process state, predicts exactly as the
    library's estimator fitted on the same data in memory."""
    from aggregators.registry import make_pool
    from app.pool_service import build_params

    rng = np.random.default_rng(9)
    lp = np.log(rng.dirichlet(np.ones(4), size=(60, 3)))
    y = rng.integers(0, 4, 60)
    q = np.log(rng.dirichlet(np.ones(4), size=(5, 3)))
    c = _app_client(f"sqlite:///{tmp_path}/m.db")
    r = c.post("/v1/pools", json={"method": method, "predictions": lp.tolist(), "labels": y.tolist(), **body})
    assert r.status_code == 201, r.text
    view = r.json()
    c.__exit__(None, None, None)
    ref = make_pool(method, **build_params(method, body.get("gamma"), None, {})).fit(lp, y)
    c = _app_client(f"sqlite:///{tmp_path}/m.db")
    got = c.post(f"/v1/pools/{view['id']}/predict", json={"predictions": q.tolist()}).json()["aggregate"]
    np.testing.assert_allclose(np.array(got, dtype=float), ref.predict(q), rtol=1e-9, atol=1e-12)
    if method == "renyi" and isinstance(body["gamma"], list):
        assert view["validation_curve"] and view["gamma"] in body["gamma"]
    c.__exit__(None, None, None)


def test_competition_arrays_move_to_blobs_and_back(db_url):
    """Migration 0101: a competition stored before it keeps its item ids, hidden labels and
    submissions, byte for byte, now read from the blobs table; the downgrade puts them back."""
    from alembic import command

    from app.arrays import to_npy
    from app.competitions import service as svc
    from app.db import alembic_config

    db = Database.from_url(db_url)
    cfg = alembic_config(db.engine)
    rng = np.random.default_rng(4)
    ids, y = np.arange(6, dtype=np.int64) + 100, rng.integers(0, 3, 6).astype(np.int16)
    lp = np.log(rng.dirichlet(np.ones(3), size=6)).astype(np.float32)
    now = utcnow()
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0100_competitions")
        conn.execute(
            text(
                "INSERT INTO competitions (id, title, description, n_classes, n_items, public_fraction, split_seed, daily_cap,"
                " n_select, deadline, owner_key_id, item_ids, labels, extra, created_at) VALUES ('cmp_old', 't', '', 3, 6, 0.5,"
                " 11, 5, 2, :now, 'key_x', :ids, :y, '{}', :now)"
            ),
            {"now": now, "ids": to_npy(ids), "y": to_npy(y)},
        )
        conn.execute(
            text(
                "INSERT INTO competition_participants (id, competition_id, name, token_hash, created_at)"
                " VALUES ('cpa_old', 'cmp_old', 'ann', 'h', :now)"
            ),
            {"now": now},
        )
        conn.execute(
            text(
                "INSERT INTO competition_submissions (id, competition_id, participant_id, description, filename,"
                " public_perplexity, public_log_loss, private_perplexity, private_log_loss, selected, warnings, data,"
                " created_at) VALUES ('sub_old', 'cmp_old', 'cpa_old', '', '', 2.0, 0.7, 2.0, 0.7, false, '[]', :d, :now)"
            ),
            {"d": to_npy(lp), "now": now},
        )
    db.migrate()
    with db.sessions() as s:
        comp = svc.get_competition(s, "cmp_old")
        np.testing.assert_array_equal(svc.item_ids(s, comp), ids)
        labels, public = svc.hidden_part(s, comp)
        np.testing.assert_array_equal(labels, y)
        sub = s.scalars(select(Blob).where(Blob.owner_type == "submission", Blob.owner_id == "sub_old")).one()
        assert sub.data == to_npy(lp) and sub.shape == [6, 3] and sub.dtype == "float32"
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0100_competitions")
        assert conn.execute(text("SELECT labels FROM competitions WHERE id = 'cmp_old'")).scalar() == to_npy(y)
        assert conn.execute(text("SELECT data FROM competition_submissions WHERE id = 'sub_old'")).scalar() == to_npy(
            lp
        )
        assert (
            conn.execute(text("SELECT count(*) FROM blobs WHERE owner_type IN ('competition', 'submission')")).scalar()
            == 0
        )
    db.dispose()
