"""Arrow IPC uploads to ``POST /v1/arrays`` beside ``.npy``: the same arrays come back, they are usable
wherever an array is, and bad uploads get the same 422 naming ``body`` (never a 5xx), on SQLite and
PostgreSQL."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

STREAM = "application/vnd.apache.arrow.stream"
FILE = "application/vnd.apache.arrow.file"


def ipc(table: pa.Table, fmt: str = "stream") -> bytes:
    sink = io.BytesIO()
    new = pa.ipc.new_stream if fmt == "stream" else pa.ipc.new_file
    with new(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue()


def tensor_table(arr: np.ndarray) -> pa.Table:
    return pa.table({"predictions": pa.FixedShapeTensorArray.from_numpy_ndarray(arr)})


def _npy(client, aid: str) -> np.ndarray:
    r = client.get(f"/v1/arrays/{aid}/data")
    assert r.status_code == 200
    return np.load(io.BytesIO(r.content), allow_pickle=False)


def _upload(client, data: bytes, ctype: str):
    return client.post("/v1/arrays", content=data, headers={"content-type": ctype})


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_db_client(request, make_client, tmp_path):
    if request.param == "sqlite":
        return make_client()
    return make_client(request.getfixturevalue("pg_cluster").new_database())


def test_arrow_uploads_round_trip_and_pool_like_npy(any_db_client):
    client = any_db_client
    rng = np.random.default_rng(11)
    lp = np.log(rng.dirichlet(np.ones(4), size=(30, 3)))
    y = rng.integers(0, 4, 30)
    # (30, 3, 4) as a fixed-shape tensor column (stream), labels as an int64 column (file format)
    r = _upload(client, ipc(tensor_table(lp)), STREAM)
    assert r.status_code == 201, r.text
    assert r.json()["shape"] == [30, 3, 4] and r.json()["dtype"] == "float64"
    pred_id = r.json()["id"]
    np.testing.assert_array_equal(_npy(client, pred_id), lp)
    r = _upload(client, ipc(pa.table({"y": pa.array(y)}), "file"), FILE)
    assert r.status_code == 201, r.text
    lab_id = r.json()["id"]
    np.testing.assert_array_equal(_npy(client, lab_id), y)
    # nested fixed-size lists give the same (rows, *shape) array
    nested = pa.array(lp.tolist(), type=pa.list_(pa.list_(pa.float64(), 4), 3))
    r = _upload(client, ipc(pa.table({"p": nested})), STREAM)
    assert r.status_code == 201, r.text
    np.testing.assert_array_equal(_npy(client, r.json()["id"]), lp)
    # multipart with an Arrow file part, told apart from .npy by its magic bytes
    r = client.post("/v1/arrays", files={"file": ("y.arrow", ipc(pa.table({"y": pa.array(y)}), "file"))})
    assert r.status_code == 201, r.text
    np.testing.assert_array_equal(_npy(client, r.json()["id"]), y)
    # a pool fitted on the Arrow uploads equals the one fitted on the same arrays inline
    by_ref = client.post(
        "/v1/pools", json={"method": "log", "predictions": {"array_id": pred_id}, "labels": {"array_id": lab_id}}
    )
    inline = client.post("/v1/pools", json={"method": "log", "predictions": lp.tolist(), "labels": y.tolist()})
    assert by_ref.status_code == inline.status_code == 201, (by_ref.text, inline.text)
    np.testing.assert_allclose(by_ref.json()["weights"], inline.json()["weights"], rtol=1e-10)


BAD = {
    "two columns": (pa.table({"a": [1.0, 2.0], "b": [3.0, 4.0]}), "one column"),
    "nulls": (pa.table({"a": pa.array([1.0, None, 3.0])}), "null"),
    "strings": (pa.table({"a": pa.array(["0.7", "0.3"])}), "not numeric"),
    "null inside a list": (
        pa.table({"a": pa.array([[1.0, None], [0.5, 0.5]], type=pa.list_(pa.float64(), 2))}),
        "null",
    ),
    "variable-length lists": (pa.table({"a": pa.array([[1.0], [0.5, 0.5]])}), "not numeric"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_arrow_uploads_are_422_naming_body(client, case):
    table, words = BAD[case]
    r = _upload(client, ipc(table), STREAM)
    assert r.status_code == 422, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    err = r.json()["errors"][0]
    assert err["field"] == "body" and words in r.json()["detail"], r.json()


@pytest.mark.parametrize("data", [b"", b"not arrow at all", b"ARROW1\x00\x00garbage", b"\xff\xff\xff\xff\x10\x00"])
def test_unreadable_arrow_is_422(client, data):
    for ctype in (STREAM, FILE):
        r = _upload(client, data, ctype)
        assert r.status_code == 422, r.text
        assert r.json()["errors"][0]["field"] == "body" and "Arrow" in r.json()["detail"]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_corrupted_arrow_bytes_never_5xx(client, data):
    """Cut or flip bytes of a valid stream or file: always 201 or 422, never a server error."""
    rng = np.random.default_rng(0)
    good = ipc(tensor_table(rng.random((5, 2, 3))), data.draw(st.sampled_from(["stream", "file"])))
    b = bytearray(good[: data.draw(st.integers(0, len(good)))])
    for _ in range(data.draw(st.integers(0, 4))):
        if b:
            b[data.draw(st.integers(0, len(b) - 1))] = data.draw(st.integers(0, 255))
    r = _upload(client, bytes(b), STREAM)
    assert r.status_code in (201, 422), (r.status_code, r.text[:300])
