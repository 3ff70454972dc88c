"""Property-based tests over the OpenAPI schema (schemathesis): no generated request, valid or not
(the negative-data mode violates the schema on purpose), gets a 5xx, and every problem+json has an
``instance`` and no NumPy repr. Bounded: a few examples per operation in ``make test``; the slow run
(``make reproduce``) generates at least 2,000 requests."""

from __future__ import annotations

import atexit
import shutil
import tempfile

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode

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


# -- negative data: requests that violate the schema (wrong types, missing fields, extra values) ------
def _negative_schema():
    s = schemathesis.openapi.from_asgi("/openapi.json", _app(tempfile.mkdtemp(prefix="agora-st-neg-", dir=_TMP)))
    s.config.generation.update(modes=[GenerationMode.NEGATIVE, GenerationMode.POSITIVE])
    return s.exclude(path_regex="^/v1/competitions")


negative = _negative_schema()
CASES = {"n": 0}


def _check_case(case) -> None:
    case.headers = {**(case.headers or {}), "Authorization": f"Bearer {ADMIN}"}
    response = case.call(timeout=120)
    CASES["n"] += 1
    assert_no_server_error(case, response)
    if response.status_code >= 400 and response.text.startswith("{"):
        body = response.json()
        assert body.get("instance"), response.text[:300]
        assert "np.float" not in response.text and "np.int" not in response.text, response.text[:300]


@negative.parametrize()
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_no_server_errors_on_negative_data(case):
    _check_case(case)


@pytest.fixture(scope="module")
def counted():
    start = CASES["n"]
    yield
    # the long run's promise: at least 2,000 generated requests, none answered 5xx
    print(f"\nschemathesis negative+positive: {CASES['n'] - start} requests, 0 answered 5xx")
    assert CASES["n"] - start >= 2000, CASES["n"] - start


@pytest.mark.slow
@negative.parametrize()
@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_no_server_errors_on_negative_data_long(case, counted):
    _check_case(case)
