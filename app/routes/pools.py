"""/v1/pools: pools fitted on validation data, stored, listed, used to predict, deleted."""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np
from fastapi import APIRouter, Request, Response
from sqlalchemy.orm import Session

from aggregators.registry import make_pool
from evaluation.weight_posterior import predict_posterior

from .. import pool_service as svc
from ..arrays import encode
from ..auth import Principal
from ..deps import DbSession, Reader, Writer
from ..errors import library_error
from ..fastjson import FastRoute, json_response
from ..models import PoolRow, aware, new_id
from ..pagination import Paging, page
from ..schemas import JobView, PoolCreate, PoolList, PoolView, PredictRequest, PredictResponse
from ..tenancy import check_owner, owned_by
from .common import (
    labels_in,
    not_found,
    predictions_in,
    problem_responses,
    run_in_background,
    start_job,
    training_inputs,
)

router = APIRouter(prefix="/v1/pools", tags=["pools"], route_class=FastRoute)
P = problem_responses(401, 403, 404, 409, 413, 422)


@router.post(
    "",
    status_code=201,
    response_model=PoolView,
    summary="Fit a pool on validation data",
    responses={**P, 202: {"model": JobView, "description": "fit running as a background job (Location: the job)"}},
)
def create_pool(body: PoolCreate, request: Request, response: Response, session: DbSession, me: Writer) -> Any:
    """Fit ``method`` on ``predictions`` and ``labels``. Small fits answer 201 with the pool; large
    ones (or ``background: true``) answer 202 with the job, whose result names the pool."""
    svc.check_params(body.method, body.solver, body.params)
    svc.check_posterior(body.method, body.posterior, body.sample_weight, body.background)
    params = svc.build_params(body.method, body.gamma, body.solver, body.params)
    try:
        make_pool(body.method, **params)  # rejects unknown parameters before any work
    except (ValueError, TypeError) as exc:
        raise library_error(exc) from None
    lp = predictions_in(request, session, body.predictions, body.kind)
    inputs = training_inputs(request, session, lp, body.labels, body.sample_weight)
    pid = new_id("pool")
    spec = {"pool_id": pid, "method": body.method, "params": params, "kind": "log_probs"}
    if body.posterior is not None:
        spec["posterior"] = body.posterior.model_dump()
    row = PoolRow(
        id=pid,
        name=body.name,
        method=body.method,
        params=params,
        kind=body.kind,
        status="pending",
        n_items=lp.shape[0],
        n_agents=lp.shape[1],
        n_classes=lp.shape[2],
        owner=me.owner,
    )
    if body.posterior is not None or run_in_background(request, body.background, svc.work_size(*lp.shape, params)):
        session.add(row)
        session.flush()
        return start_job(request, session, "pool_fit", spec, inputs, row=row, resource_type="pool", me=me)
    # inline: fit first, then the ready pool (and its Idempotency-Key record) in one transaction
    try:
        pool, values, arrays = svc.fit(spec, lp, inputs["labels"], sample_weight=inputs.get("sample_weight"))
    except (ValueError, TypeError, ArithmeticError, np.linalg.LinAlgError) as exc:
        raise library_error(exc) from None
    session.add(row)
    svc.store_fit(session, row, values, arrays)
    session.commit()
    svc.fitted(pid, pool)
    response.headers["Location"] = f"/v1/pools/{pid}"
    return svc.pool_view(session, row)


@router.get("", response_model=PoolList, responses=P, summary="List pools (newest first)")
def list_pools(paging: Paging, session: DbSession, me: Reader) -> Any:
    rows, nxt = page(session, PoolRow, paging, *owned_by(me, PoolRow))
    items = [
        {
            "id": r.id,
            "name": r.name,
            "method": r.method,
            "status": r.status,
            "n_agents": r.n_agents,
            "n_classes": r.n_classes,
            "created_at": aware(r.created_at),
            "links": {"self": f"/v1/pools/{r.id}"},
        }
        for r in rows
    ]
    return {"items": items, "next_cursor": nxt}


def _pool(session: Session, pool_id: str, me: Principal) -> PoolRow:
    """The pool ``pool_id`` if ``me`` may see it (404 when there is none, 403 when it is another key's)."""
    row = session.get(PoolRow, pool_id)
    if row is None:
        raise not_found("pool", pool_id)
    check_owner(me, row.owner, "pool", pool_id)
    return row


@router.get(
    "/{pool_id}",
    response_model=PoolView,
    responses=P,
    summary="Read a pool: weights, γ, validation curve, solver trace, metrics",
)
def get_pool(pool_id: str, session: DbSession, me: Reader) -> Any:
    row = _pool(session, pool_id, me)
    return svc.pool_view(session, row)


@router.delete("/{pool_id}", status_code=204, responses=P, summary="Delete a pool")
def delete_pool(pool_id: str, session: DbSession, me: Writer) -> Response:
    row = _pool(session, pool_id, me)
    svc.delete_pool(session, row)
    return Response(status_code=204)


@router.post(
    "/{pool_id}/predict", response_model=PredictResponse, responses=P, summary="Pool new predictions with a fitted pool"
)
async def predict(pool_id: str, body: PredictRequest, request: Request, me: Reader) -> Any:
    def work():
        with request.app.state.db.sessions() as session:
            row = session.get(PoolRow, pool_id)
            if row is not None:
                check_owner(me, row.owner, "pool", pool_id)
            row = svc.require_ready(row, pool_id)
            pool = svc.restore_pool(session, row)
            lp = predictions_in(request, session, body.predictions, body.kind)
            try:
                if body.posterior_predictive:
                    agg, n_floored = predict_posterior(pool, lp)
                else:
                    agg, info = pool.predict_with_info(lp, kind="log_probs")
                    n_floored = info.n_floored
            except (ValueError, TypeError, ArithmeticError) as exc:
                raise library_error(exc) from None
            metrics = None
            if body.labels is not None:
                y = labels_in(request, session, body.labels, agg.shape[0], agg.shape[1])
                metrics = svc.metrics_of(agg, y)  # inf/NaN are written as null by orjson
        out = body.output or body.kind
        arr = np.exp(agg) if out == "probs" else agg
        return {
            "kind": out,
            "aggregate": encode(arr, body.format, native=True),
            "n_floored": n_floored,
            "metrics": metrics,
        }

    return json_response(await anyio.to_thread.run_sync(work))
