"""Property-based tests over the OpenAPI schema (schemathesis): no generated request, valid or not,
gets a 5xx. Bounded: a few examples per operation, so it stays fast."""

from __future__ import annotations

import atexit
import shutil
import tempfile

import schemathesis
from hypothesis import HealthCheck, settings

from app.main import create_app

from .conftest import ADMIN, assert_no_server_error, make_settings


def _app(tmp):
    app = create_app(make_settings(f"sqlite:///{tmp}/schemathesis.db", max_array_elements=20_000, job_threshold=10**9))
    app.state.db.migrate()
    return app


_TMP = tempfile.mkdtemp(prefix="agora-st-")
atexit.register(shutil.rmtree, _TMP, True)
schema = schemathesis.openapi.from_asgi("/openapi.json", _app(_TMP))
# competitions belong to their own tests; the dashboard's routes are not in the schema
schema = schema.exclude(path_regex="^/v1/competitions")


@schema.parametrize()
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_no_server_errors(case):
    case.headers = {**(case.headers or {}), "Authorization": f"Bearer {ADMIN}"}
    # generous timeout: the first fit of a pool may compile its numba kernels
    response = case.call(timeout=120)
    assert_no_server_error(case, response)
