"""Every bad input is a 4xx naming its field, and nothing is stored by a refused request: the cases an
outside probe found (a numba TypingError and an IndexError answered 500, strings and booleans inside
predictions accepted, out-of-range or ill-typed parameters and solver options accepted or reported
under the wrong field, malformed JSON named by a character offset)."""

from __future__ import annotations

import numpy as np
import pytest

PROBLEM = "application/problem+json"

_rng = np.random.default_rng(0)
LP = np.log(_rng.dirichlet(np.ones(3), size=(20, 3))).tolist()
Y = _rng.integers(0, 3, 20).tolist()
SOLVE = {"problem": "MixtureLikelihood.from_log_probs", "data": {"log_probs": LP, "labels": Y}}
POOL = {"method": "renyi", "predictions": LP, "labels": Y}

CASES = [
    ("/v1/solve", {**SOLVE, "method": "gd", "options": {"step": "huge"}}, "options.step"),
    ("/v1/solve", {**SOLVE, "method": "lbfgs", "options": {"memory": "lots"}}, "options.memory"),
    ("/v1/solve", {**SOLVE, "method": "lbfgs", "options": {"memory": 0}}, "options.memory"),
    ("/v1/solve", {**SOLVE, "options": {"tol": "tiny"}}, "options.tol"),
    ("/v1/solve", {**SOLVE, "method": "newton", "options": {"step": 1.0}}, "options.step"),
    ("/v1/solve", {**SOLVE, "method": "no_such_solver"}, "method"),
    ("/v1/solve", {**SOLVE, "x0": [0.5, 0.5]}, "x0"),
    ("/v1/solve", {**SOLVE, "method": "em", "data": {"log_probs": LP, "labels": [5] * 20}}, "labels"),
    ("/v1/solve", {**SOLVE, "method": "em", "data": {"log_probs": LP, "labels": [5]}}, "labels"),
    ("/v1/aggregate", {"method": "average", "kind": "probs", "predictions": [[["0.7", 0.3]]]}, "predictions"),
    ("/v1/aggregate", {"method": "average", "kind": "probs", "predictions": [[[True, False]]]}, "predictions"),
    ("/v1/aggregate", {"method": "average", "kind": "probs", "predictions": [[[0.7, True]]]}, "predictions"),
    ("/v1/pools", {**POOL, "predictions": [[["0.7", 0.3]]] * 2, "labels": [0, 1], "kind": "probs"}, "predictions"),
    ("/v1/pools", {**POOL, "params": {"max_iter": -1}}, "params.max_iter"),
    ("/v1/pools", {**POOL, "params": {"tol": -1}}, "params.tol"),
    ("/v1/pools", {**POOL, "params": {"tol": "tiny"}}, "params.tol"),
    ("/v1/pools", {**POOL, "params": {"max_iter": True}}, "params.max_iter"),
    ("/v1/pools", {**POOL, "gamma": "grid", "params": {"cv": 0}}, "params.cv"),
    ("/v1/pools", {**POOL, "params": {"no_such": 1}}, "params.no_such"),
    ("/v1/pools", {**POOL, "solver": "no_such_solver"}, "solver"),
    ("/v1/pools", {**POOL, "method": "bma", "solver": "em"}, "solver"),
    (
        "/v1/pools",
        {**POOL, "method": "log", "params": {"solver": "newton", "solver_options": {"alpha": "x"}}},
        "params.solver_options.alpha",
    ),
]


@pytest.mark.parametrize("path,body,field", CASES, ids=[f"{p}:{f}" for p, _, f in CASES])
def test_bad_input_is_422_naming_its_field_and_stores_nothing(client, path, body, field):
    before = len(client.get("/v1/pools").json()["items"])
    r = client.post(path, json=body)
    assert r.status_code == 422, r.text
    assert r.headers["content-type"] == PROBLEM
    d = r.json()
    assert d["errors"][0]["field"] == field, d
    assert d["instance"] == path
    assert "np." not in r.text and "Traceback" not in r.text
    assert len(client.get("/v1/pools").json()["items"]) == before


def test_the_connection_survives_a_refused_request(client):
    for _ in range(3):
        assert client.post("/v1/solve", json={**SOLVE, "method": "gd", "options": {"step": "huge"}}).status_code == 422
    assert client.post("/v1/solve", json={**SOLVE, "method": "gd", "options": {"step": 0.1}}).status_code == 200


def test_malformed_json_is_named_body_with_its_position(client):
    r = client.post(
        "/v1/aggregate",
        content=b'{"method": "average", "predictions": [1,',
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 400 and r.headers["content-type"] == PROBLEM
    err = r.json()["errors"][0]
    assert err["field"] == "body" and err["position"] == 40 and err["reason"].startswith("malformed JSON")
    assert r.json()["instance"] == "/v1/aggregate"


def test_numpy_reprs_never_reach_an_error_body():
    from app.errors import problem_body

    body = problem_body(422, "x: got np.float64(-1.0)", errors=[{"field": "x", "reason": "got np.int64(3)"}])
    assert body["detail"] == "x: got -1.0" and body["errors"][0]["reason"] == "got 3"


def test_valid_typed_options_still_run(client):
    r = client.post("/v1/solve", json={**SOLVE, "method": "lbfgs", "options": {"memory": 5, "tol": 1e-9}})
    assert r.status_code == 200, r.text
    r = client.post("/v1/pools", json={**POOL, "gamma": [0.1, 1.0], "params": {"cv": 3, "max_iter": 50}})
    assert r.status_code == 201, r.text
