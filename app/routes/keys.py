"""/v1/keys: API key management (scope ``admin``). Secrets are shown once and stored hashed."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from sqlalchemy import select

from ..auth import create_key, revoke_key
from ..deps import Admin, DbSession
from ..fastjson import FastRoute
from ..models import ApiKey, aware
from ..schemas import KeyCreate, KeyView
from .common import not_found, problem_responses

router = APIRouter(prefix="/v1/keys", tags=["keys"], route_class=FastRoute)
P = problem_responses(401, 403, 404, 422)


def _view(row: ApiKey, secret: str | None = None) -> dict[str, Any]:
    return {
        "id": row.id,
        "name": row.name,
        "scopes": [s for s in row.scopes.split(",") if s],
        "created_at": aware(row.created_at),
        "revoked": row.revoked,
        "key": secret,
        "organisation_id": row.org_id,
    }


@router.post("", status_code=201, response_model=KeyView, responses=P, summary="Create an API key")
def create(body: KeyCreate, session: DbSession, _: Admin) -> Any:
    row, secret = create_key(session, body.name, list(body.scopes))
    return _view(row, secret)


@router.get("", response_model=list[KeyView], responses=P, summary="List API keys (without secrets)")
def list_keys(session: DbSession, _: Admin) -> Any:
    return [_view(r) for r in session.scalars(select(ApiKey).order_by(ApiKey.created_at)).all()]


@router.get("/{key_id}", response_model=KeyView, responses=P, summary="An API key (without its secret)")
def get_key(key_id: str, session: DbSession, _: Admin) -> Any:
    row = session.get(ApiKey, key_id)
    if row is None:
        raise not_found("key", key_id)
    return _view(row)


@router.delete("/{key_id}", status_code=204, responses=P, summary="Revoke an API key")
def revoke(key_id: str, session: DbSession, _: Admin) -> Response:
    if not revoke_key(session, key_id):
        raise not_found("key", key_id)
    return Response(status_code=204)
