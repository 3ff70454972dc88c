"""Schemathesis over the competitions' part of the OpenAPI schema: no generated request, valid or
not, gets a 5xx, and every 4xx is problem+json. Runs as the admin (organiser of everything) and
with a real competition id in the paths, so the generated bodies reach the handlers."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from datetime import UTC, datetime, timedelta

import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings

from app.main import create_app
from app.settings import Settings

from .conftest import assert_no_server_error

ADMIN = "schema-admin-key"
_TMP = tempfile.mkdtemp(prefix="agora-cst-")
atexit.register(shutil.rmtree, _TMP, True)
_app = create_app(Settings(database_url=f"sqlite:///{_TMP}/c.db", admin_key=ADMIN, job_workers=1))
_app.state.db.migrate()
with TestClient(_app) as _c:
    _CID = _c.post(
        "/v1/competitions",
        json={
            "title": "s",
            "n_classes": 3,
            "labels": [0, 1, 2, 1, 0, 2],
            "deadline": (datetime.now(UTC) + timedelta(days=9)).isoformat(),
        },
        headers={"Authorization": f"Bearer {ADMIN}"},
    ).json()["id"]

schema = schemathesis.openapi.from_asgi("/openapi.json", _app).include(path_regex="^/v1/competitions")


@schema.parametrize()
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_competition_routes_never_5xx(case):
    if case.path_parameters and "competition_id" in case.path_parameters:
        case.path_parameters["competition_id"] = _CID
    case.headers = {**(case.headers or {}), "Authorization": f"Bearer {ADMIN}"}
    response = case.call()
    assert_no_server_error(case, response)
