"""/v1/organisations: organisations of API keys (scope ``admin``).

Every key of an organisation sees, uses and deletes what any key of it owns (pools, markets, uploaded
arrays, jobs; :mod:`app.tenancy`); a key belongs to at most one organisation. Attaching or detaching a
key takes effect at once in the process that served it and within :data:`app.auth.CACHE_SECONDS` in
the others.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from ..auth import forget_keys
from ..deps import Admin, DbSession
from ..fastjson import FastRoute
from ..models import ApiKey, Organisation, aware, new_id
from ..schemas import OrganisationCreate, OrganisationView
from .common import not_found, problem_responses

router = APIRouter(prefix="/v1/organisations", tags=["organisations"], route_class=FastRoute)
P = problem_responses(401, 403, 404, 422)


def _view(session: Session, org: Organisation) -> dict[str, Any]:
    keys = session.scalars(select(ApiKey.id).where(ApiKey.org_id == org.id).order_by(ApiKey.created_at)).all()
    return {"id": org.id, "name": org.name, "created_at": aware(org.created_at), "keys": list(keys)}


def _get(session: Session, org_id: str) -> Organisation:
    org = session.get(Organisation, org_id)
    if org is None:
        raise not_found("organisation", org_id)
    return org


def _key(session: Session, key_id: str) -> ApiKey:
    row = session.get(ApiKey, key_id)
    if row is None:
        raise not_found("key", key_id)
    return row


@router.post("", status_code=201, response_model=OrganisationView, responses=P, summary="Create an organisation")
def create(body: OrganisationCreate, session: DbSession, _: Admin) -> Any:
    org = Organisation(id=new_id("org"), name=body.name)
    session.add(org)
    session.commit()
    return _view(session, org)


@router.get("", response_model=list[OrganisationView], responses=P, summary="List organisations")
def list_organisations(session: DbSession, _: Admin) -> Any:
    return [_view(session, o) for o in session.scalars(select(Organisation).order_by(Organisation.created_at))]


@router.get("/{org_id}", response_model=OrganisationView, responses=P, summary="An organisation and its keys")
def get(org_id: str, session: DbSession, _: Admin) -> Any:
    return _view(session, _get(session, org_id))


@router.put(
    "/{org_id}/keys/{key_id}",
    response_model=OrganisationView,
    responses=P,
    summary="Attach an API key (moving it from its former organisation)",
)
def attach(org_id: str, key_id: str, session: DbSession, _: Admin) -> Any:
    org, row = _get(session, org_id), _key(session, key_id)
    row.org_id = org.id
    session.commit()
    forget_keys()
    return _view(session, org)


@router.delete("/{org_id}/keys/{key_id}", status_code=204, responses=P, summary="Detach an API key")
def detach(org_id: str, key_id: str, session: DbSession, _: Admin) -> Response:
    _get(session, org_id)
    row = _key(session, key_id)
    if row.org_id != org_id:
        raise not_found("key", key_id)
    row.org_id = None
    session.commit()
    forget_keys()
    return Response(status_code=204)
