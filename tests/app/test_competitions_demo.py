"""The demo loaded by ``make run``: idempotent, a full field, honest numbers."""

from __future__ import annotations

import numpy as np
import pytest

from app import demo
from app.competitions import service as svc
from app.competitions.models import AggregationRun, Competition, Participant, Submission
from app.db import Database
from app.models import JobRow
from app.settings import Settings


def test_load_demo_is_idempotent_and_complete(tmp_path):
    settings = Settings(demo_key_file=str(tmp_path / "key.txt"), demo_cache=str(tmp_path / "cache"))
    db = Database.from_url(f"sqlite:///{tmp_path}/demo.db")
    db.migrate()
    ids = demo.load_demo(db, n_test=600, n_train=6000, settings=settings)
    (tmp_path / "key.txt").unlink()  # a lost key file: a new key becomes the demo's organiser
    again = demo.load_demo(db, n_test=600, n_train=6000, settings=settings)
    assert ids == again
    from app.auth import hash_key
    from app.models import ApiKey

    with db.sessions() as s:
        key = s.query(ApiKey).filter_by(key_hash=hash_key((tmp_path / "key.txt").read_text().strip())).one()
        assert {c.owner_key_id for c in s.query(Competition)} == {key.id}
    with db.sessions() as s:
        assert s.query(Competition).count() == 2
        closed = s.get(Competition, ids[demo.TAG_CLOSED])
        opened = s.get(Competition, ids[demo.TAG_OPEN])
        assert svc.is_closed(closed) and not svc.is_closed(opened)
        # the public test file holds the patches and ids only: no image index to locate them by
        import io

        from app.models import Blob

        blob = s.query(Blob).filter_by(owner_type="cmp_file", owner_id=opened.id, name="test.npz").one()
        with np.load(io.BytesIO(blob.data)) as z:
            assert sorted(z.files) == ["id", "x"]
        assert (tmp_path / "cache" / "demo-secret.txt").stat().st_mode & 0o077 == 0
        subs = s.query(Submission).filter_by(competition_id=closed.id).all()
        assert len(subs) == 22 and s.query(Participant).filter_by(competition_id=closed.id).count() == 10
        ppl = np.array([x.public_perplexity for x in subs])
        assert ppl.min() < 8 and ppl.max() > 20  # a diverse field, from good models to a global histogram
        assert (ppl < 64).all()  # every demo agent beats uniform guessing
        # the aggregation was queued for the server's job runner, exactly once
        jobs = s.query(JobRow).filter_by(kind=svc.JOB_KIND, state="queued").all()
        assert len(jobs) == 1
        run_id = jobs[0].spec["aggregation_id"]
        assert (tmp_path / "key.txt").read_text().startswith("agora_")
    # run it (as the job runner would), with a short method list to keep the test quick
    with db.sessions() as s:
        run = s.get(AggregationRun, run_id)
        run.params = {"methods": ["topk", "linear", "log"]}
        s.commit()
    svc.run_aggregation(db, run_id)
    with db.sessions() as s:
        res = s.get(AggregationRun, run_id).result
        comp = s.get(Competition, ids[demo.TAG_CLOSED])
        rows = {r["method"]: r for r in res["rows"]}
        best_sub = min(subs, key=lambda x: x.public_perplexity)
        assert rows["best_single"]["params"]["submission_id"] == best_sub.id
        # the whole-private perplexity of the best single entry is that submission's private score
        assert rows["best_single"]["private_perplexity"] == pytest.approx(best_sub.private_perplexity, rel=1e-5)
        assert all("error" not in rows[m] for m in ("topk", "linear", "log"))
        # the demo's validation part (300 items x 22 submissions x 64 classes) exceeds the bands'
        # budget: the bands are sampled on a subset of its items and say so
        assert "credible intervals" in res["weight_bands"] and "given a random 142 of the" in res["weight_bands"]
        assert all(
            c["weight_log_interval"][0] <= c["weight_log_mean"] <= c["weight_log_interval"][1] for c in res["credit"]
        )
        lb = svc.leaderboard_rows(s, comp, private=True)
        assert len(lb) == 10 and lb[0]["rank"] == 1
