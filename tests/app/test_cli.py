"""The command line: ``agora fit`` locally (progress bar, JSON out) and ``agora keys``."""

from __future__ import annotations

import json

import numpy as np

from app.cli import main


def test_fit_locally_writes_the_pool(tmp_path, capsys):
    rng = np.random.default_rng(11)
    p = rng.dirichlet(np.ones(3), size=(50, 4))
    y = rng.integers(0, 3, 50)
    np.save(tmp_path / "val.npy", p)
    np.save(tmp_path / "y.npy", y)
    rc = main(
        [
            "fit",
            "--method",
            "bma",
            "--kind",
            "probs",
            "--predictions",
            str(tmp_path / "val.npy"),
            "--labels",
            str(tmp_path / "y.npy"),
            "--out",
            str(tmp_path / "pool.json"),
        ]
    )
    assert rc == 0
    out = json.loads((tmp_path / "pool.json").read_text())
    ll = np.log(p[np.arange(50), :, y]).sum(0)
    w = np.exp(ll - ll.max())
    np.testing.assert_allclose(out["weights_"], w / w.sum(), rtol=1e-8)
    agg = np.einsum("nak,a->nk", p, w / w.sum())
    assert (
        out["score"] == np.log(agg[np.arange(50), y]).mean()
        or abs(out["score"] - np.log(agg[np.arange(50), y]).mean()) < 1e-10
    )
    err = capsys.readouterr().err
    assert "fit bma" in err  # the tqdm bar
    # bad input: a clear error and a non-zero exit, no traceback
    np.save(tmp_path / "bad.npy", np.full((5, 2, 3), 0.5))
    assert (
        main(
            [
                "fit",
                "--method",
                "bma",
                "--kind",
                "probs",
                "--predictions",
                str(tmp_path / "bad.npy"),
                "--labels",
                str(tmp_path / "y.npy"),
            ]
        )
        == 2
    )
    assert "must sum to one" in capsys.readouterr().err


def test_keys_create_list_revoke(tmp_path, capsys, monkeypatch):
    from app.settings import get_settings

    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path}/k.db")
    get_settings.cache_clear()
    try:
        assert main(["keys", "create", "--scopes", "read", "--name", "ci"]) == 0
        created = json.loads(capsys.readouterr().out)
        assert created["key"].startswith("agora_") and created["scopes"] == ["read"]
        assert main(["keys", "list"]) == 0
        listed = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        assert [k["id"] for k in listed] == [created["id"]] and "key" not in listed[0]
        assert main(["keys", "revoke", "--id", created["id"]]) == 0
        assert main(["keys", "create", "--scopes", "root"]) == 2
    finally:
        get_settings.cache_clear()
