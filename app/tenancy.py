"""Who owns what: every stored pool, market, uploaded array and job records the key that created it.

A caller lists and reads what it owns and what the other keys of its organisation own
(:attr:`app.auth.Principal.owners`; organisations of keys: :mod:`app.routes.organisations`); an
``admin`` key sees and acts on everything. Touching
another key's resource answers 403 with a message saying whose it is not (ids are random, so this
reveals nothing guessable). Rows from before ownership existed (``owner`` NULL) are the admins'.
A competition's aggregation job belongs to the competition's organiser.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request
from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from .auth import Principal
from .errors import ProblemError
from .models import JobRow


def caller(request: Request) -> Principal:
    """The principal the ``require`` dependency stored on this request."""
    return request.state.principal


def owned_by(principal: Principal, model: Any) -> list[Any]:
    """The ``where`` clauses restricting a list of ``model`` to what ``principal`` sees."""
    return [] if principal.admin else [model.owner.in_(principal.owners)]


def jobs_seen_by(principal: Principal) -> list[Any]:
    """The ``where`` clauses restricting a list of jobs to what ``principal`` sees: its own and the
    aggregation jobs of the competitions it organises."""
    if principal.admin:
        return []
    from .competitions.models import Competition

    theirs = select(Competition.id).where(Competition.owner_key_id.in_(principal.owners))
    return [
        or_(
            JobRow.owner.in_(principal.owners),
            and_(JobRow.owner.is_(None), JobRow.resource_type == "competition", JobRow.resource_id.in_(theirs)),
        )
    ]


def check_owner(principal: Principal, owner: str | None, what: str, rid: str) -> None:
    """403 unless ``principal`` (or a key of its organisation) owns the resource, or is an admin."""
    if principal.admin or owner in principal.owners:
        return
    raise ProblemError(
        403,
        f"{what} {rid!r} belongs to another API key; only its owner, its owner's organisation or an admin "
        "key may use it",
        field=f"{what}_id",
        reason="owned by another API key",
        code="not-owner",
    )


def job_owner(session: Session, job: JobRow) -> str | None:
    """A job's owner: the key that started it, or the organiser of the competition it aggregates."""
    if job.owner is None and job.resource_type == "competition" and job.resource_id:
        from .competitions.models import Competition

        comp = session.get(Competition, job.resource_id)
        return None if comp is None else comp.owner_key_id
    return job.owner
