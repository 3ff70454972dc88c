"""/v1/markets: machine-learning markets. Stateless equilibrium; stored markets (agents, utilities,
wealth) trained on labelled data, used to predict, with their wealth history."""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np
from fastapi import APIRouter, Request, Response

import markets
from solvers.errors import InputError

from .. import market_service as svc
from ..arrays import encode, load_blob
from ..deps import DbSession, Reader, Stateless, Writer
from ..errors import library_error
from ..fastjson import FastRoute, json_response
from ..jobs import run_inline
from ..models import MarketRow, new_id
from ..pagination import Paging, page
from ..schemas import (
    EquilibriumRequest,
    Format,
    JobView,
    MarketCreate,
    MarketList,
    MarketPredict,
    MarketView,
    Pooling,
    PricesResponse,
    TrainRequest,
    WealthHistory,
)
from ..tenancy import owned_by
from .common import predictions_in, problem_responses, run_in_background, start_job, training_inputs

router = APIRouter(prefix="/v1/markets", tags=["markets"], route_class=FastRoute)
P = problem_responses(401, 403, 404, 409, 413, 422)


def _prices(body: Pooling, lp: np.ndarray, *agents: Any, **options: Any) -> dict[str, Any]:
    """The equilibrium prices of ``agents`` on ``lp``, of the kind and in the format ``body`` asks
    for (a library error is a 422)."""
    try:
        res = markets.equilibrium(lp, *agents, **options)
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise library_error(exc) from None
    kind = body.output or body.kind
    arr = res.prices if kind == "probs" else res.log_prices
    return {"kind": kind, "prices": encode(arr, body.format, native=True), "summary": res.summary()}


@router.post(
    "/equilibrium", response_model=PricesResponse, responses=P, summary="Equilibrium prices of a market (stateless)"
)
async def equilibrium(body: EquilibriumRequest, request: Request, _: Stateless) -> Any:
    """Clear the market of agents with these beliefs, utilities and wealth for each item; the prices
    are the aggregate (log agents: the linear pool; isoelastic: a Rényi pool, Eq. 2.36)."""

    def work():
        with request.app.state.db.sessions() as s:
            lp = predictions_in(request, s, body.predictions, body.kind)
        return _prices(body, lp, body.utilities, body.wealth, method=body.method, tol=body.tol, floor=body.floor)

    return json_response(await anyio.to_thread.run_sync(work))


@router.post(
    "", status_code=201, response_model=MarketView, responses=P, summary="Create a market (agents, utilities, wealth)"
)
def create_market(body: MarketCreate, response: Response, session: DbSession, me: Writer) -> Any:
    try:
        w = svc.check_agents(body.utilities, body.wealth, body.n_agents)
    except (ValueError, TypeError) as exc:
        raise library_error(exc) from None
    mid = new_id("mkt")
    opts = body.model_dump(include=set(svc.TRAIN_OPTIONS))
    row = MarketRow(
        id=mid,
        name=body.name,
        spec={"utilities": body.utilities, "options": opts},
        state={"trainings": []},
        status="ready",
        n_agents=body.n_agents,
        n_classes=0,
        owner=me.owner,
    )
    session.add(row)
    svc.save_blob(session, "market", mid, "wealth", w)
    svc.save_blob(session, "market", mid, "history", w[None, :])
    session.commit()
    response.headers["Location"] = f"/v1/markets/{mid}"
    return svc.market_view(session, row)


@router.get("", response_model=MarketList, responses=P, summary="List markets (newest first)")
def list_markets(paging: Paging, session: DbSession, me: Reader) -> Any:
    rows, nxt = page(session, MarketRow, paging, *owned_by(me, MarketRow))
    return {"items": [svc.market_view(session, r) for r in rows], "next_cursor": nxt}


@router.get("/{market_id}", response_model=MarketView, responses=P, summary="A market: agents, wealth, trainings")
def get_market(market_id: str, session: DbSession, me: Reader) -> Any:
    return svc.market_view(session, svc.require_market(session.get(MarketRow, market_id), market_id, me))


@router.delete("/{market_id}", status_code=204, responses=P, summary="Delete a market")
def delete_market(market_id: str, session: DbSession, me: Writer) -> Response:
    svc.delete_market(session, svc.require_market(session.get(MarketRow, market_id), market_id, me))
    return Response(status_code=204)


@router.post(
    "/{market_id}/train",
    response_model=MarketView,
    responses={**P, 202: {"model": JobView, "description": "training as a background job"}},
    summary="Train the market on labelled data (Algorithm 2.4)",
)
def train(market_id: str, body: TrainRequest, request: Request, session: DbSession, me: Writer) -> Any:
    """Trade on each labelled item and pay the agents out, from the current wealth. The new wealth
    and the per-epoch wealth history are stored. Large trainings answer 202 with the job."""
    row = svc.require_market(session.get(MarketRow, market_id), market_id, me, idle=True)
    lp = predictions_in(request, session, body.predictions, body.kind)
    if lp.shape[1] != row.n_agents:
        raise InputError(
            "predictions", f"the market has {row.n_agents} agents; got {lp.shape[1]}", code="shape_mismatch"
        )
    if row.n_classes and lp.shape[2] != row.n_classes:
        raise InputError(
            "predictions", f"the market trades {row.n_classes} classes; got {lp.shape[2]}", code="shape_mismatch"
        )
    inputs = training_inputs(request, session, lp, body.labels, body.sample_weight)
    opts = {k: v for k, v in body.model_dump(include={"mode", "batch_size", "max_epochs"}).items() if v is not None}
    spec = {"market_id": market_id, "options": opts}
    epochs = opts.get("max_epochs", row.spec.get("options", {}).get("max_epochs", 100))
    if not row.n_classes:
        row.n_classes = int(lp.shape[2])
    if run_in_background(request, body.background, int(lp.size) * int(epochs)):
        row.status = "training"
        return start_job(request, session, "market_train", spec, inputs, row=row, resource_type="market", me=me)
    session.commit()
    try:
        run_inline("market_train", spec, inputs, request.app.state.db)
    except (ValueError, TypeError, ArithmeticError, np.linalg.LinAlgError) as exc:
        raise library_error(exc) from None
    session.expire_all()
    return svc.market_view(session, session.get(MarketRow, market_id))


@router.post(
    "/{market_id}/predict",
    response_model=PricesResponse,
    responses=P,
    summary="Equilibrium prices under the trained wealth",
)
async def predict(market_id: str, body: MarketPredict, request: Request, me: Reader) -> Any:
    def work():
        with request.app.state.db.sessions() as s:
            row = svc.require_market(s.get(MarketRow, market_id), market_id, me)
            wealth = load_blob(s, "market", market_id, "wealth")
            lp = predictions_in(request, s, body.predictions, body.kind)
            utilities, opts = row.spec["utilities"], row.spec.get("options", {})
        if lp.shape[1] != row.n_agents:
            raise InputError(
                "predictions", f"the market has {row.n_agents} agents; got {lp.shape[1]}", code="shape_mismatch"
            )
        method = "auto" if opts.get("method", "newton") == "newton" else opts["method"]
        agents = svc.agents_of(utilities, wealth)
        return _prices(body, lp, agents, method=method, tol=opts.get("tol", 1e-10), floor=opts.get("floor", 1e-9))

    return json_response(await anyio.to_thread.run_sync(work))


@router.get("/{market_id}/wealth", response_model=WealthHistory, responses=P, summary="The market's wealth history")
def wealth(market_id: str, session: DbSession, me: Reader, format: Format = "json") -> Any:
    row = svc.require_market(session.get(MarketRow, market_id), market_id, me)
    hist = load_blob(session, "market", market_id, "history")
    return {
        "market_id": market_id,
        "history": encode(hist, format),
        "trainings": (row.state or {}).get("trainings", []),
    }
