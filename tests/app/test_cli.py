"""The command line: ``agora fit`` locally (progress bar, JSON out) and ``agora keys``."""

from __future__ import annotations

import json

import numpy as np

from app.cli import main


def _fit_bma(predictions, labels, *more: str) -> int:
    """``agora fit --method bma --kind probs`` on the two ``.npy`` files."""
    return main(
        ["fit", "--method", "bma", "--kind", "probs", "--predictions", str(predictions), "--labels", str(labels), *more]
    )


def test_fit_locally_writes_the_pool(tmp_path, capsys):
    rng = np.random.default_rng(11)
    p = rng.dirichlet(np.ones(3), size=(50, 4))
    y = rng.integers(0, 3, 50)
    np.save(tmp_path / "val.npy", p)
    np.save(tmp_path / "y.npy", y)
    rc = _fit_bma(tmp_path / "val.npy", tmp_path / "y.npy", "--out", str(tmp_path / "pool.json"))
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
    assert _fit_bma(tmp_path / "bad.npy", tmp_path / "y.npy") == 2
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


def _files(tmp_path, seed=12, n=60, a=3, k=3):
    rng = np.random.default_rng(seed)
    lp = np.log(rng.dirichlet(np.ones(k), size=(n, a)))
    y = rng.integers(0, k, n)
    np.save(tmp_path / "lp.npy", lp)
    np.save(tmp_path / "y.npy", y)
    return lp, y, ["--predictions", str(tmp_path / "lp.npy"), "--labels", str(tmp_path / "y.npy")]


def test_fit_locally_sweeps_a_gamma_list_like_the_server(tmp_path):
    from aggregators.registry import make_pool

    lp, y, files = _files(tmp_path)
    out = tmp_path / "sweep.json"
    assert main(["fit", "--method", "renyi", "--gamma", "0.01,0.1,1", *files, "--out", str(out), "--quiet"]) == 0
    got = json.loads(out.read_text())
    ref = make_pool("renyi", gamma="grid", gamma_grid=[0.01, 0.1, 1.0]).fit(lp, y)
    assert got["gamma_"] == float(ref.gamma_) and got["gamma_"] in (0.01, 0.1, 1.0)  # one γ, not per agent
    np.testing.assert_allclose(got["weights_"], ref.weights_, rtol=1e-9)


def test_cli_against_a_server_out_file_and_one_line_errors(tmp_path, capsys):
    from .conftest import ADMIN, Server, free_port

    lp, y, files = _files(tmp_path, seed=13)
    srv = Server(f"sqlite:///{tmp_path}/cli.db", tmp_path).start()
    try:
        out = tmp_path / "remote.json"
        rc = main(["fit", "--method", "bma", *files, "--server", srv.url, "--api-key", ADMIN, "--out", str(out)])
        assert rc == 0, capsys.readouterr().err
        assert json.loads(out.read_text())["id"].startswith("pool_")
        capsys.readouterr()
        assert main(["fit", "--method", "bma", *files, "--server", srv.url, "--api-key", "agora_wrong"]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "401" in err and "unknown or revoked API key" in err and "Traceback" not in err
    finally:
        srv.stop()
    down = f"http://127.0.0.1:{free_port()}"
    assert main(["fit", "--method", "bma", *files, "--server", down, "--api-key", ADMIN]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot reach {down}" in err and "Traceback" not in err


def test_examples_say_a_server_is_down_in_one_line():
    import subprocess
    import sys

    from .conftest import REPO, free_port

    url = f"http://127.0.0.1:{free_port()}"
    r = subprocess.run(
        [sys.executable, "aggregate.py", "--url", url],
        cwd=REPO / "examples",
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "PYTHONPATH": str(REPO)},
    )
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and f"cannot reach {url}" in r.stderr, r.stderr


def test_probabilities_read_as_log_probabilities_warn(tmp_path, capsys):
    rng = np.random.default_rng(14)
    np.save(tmp_path / "p.npy", rng.dirichlet(np.ones(3), size=(40, 3)))
    np.save(tmp_path / "y.npy", rng.integers(0, 3, 40))
    files = ["--predictions", str(tmp_path / "p.npy"), "--labels", str(tmp_path / "y.npy"), "--quiet"]
    assert main(["fit", "--method", "bma", *files]) == 0
    assert "look like probabilities" in capsys.readouterr().err
    assert main(["fit", "--method", "bma", "--kind", "probs", *files]) == 0
    assert "look like probabilities" not in capsys.readouterr().err
