"""POST /v1/aggregate: stateless pooling with given parameters (nothing is stored)."""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np
from fastapi import APIRouter, Request
from fastapi.responses import Response

from aggregators import registry
from solvers.errors import InputError

from ..arrays import encode, resolve
from ..deps import require
from ..errors import library_error
from ..fastjson import FastRoute, json_response
from ..schemas import AggregateRequest, AggregateResponse, ArrayRef
from .common import array_in, problem_responses

router = APIRouter(prefix="/v1", tags=["aggregate"], route_class=FastRoute)

PROBLEMS = problem_responses(400, 401, 413, 422)


def approx_size(x: list[Any]) -> int:
    """n_items x n_agents x n_classes read from the first entries of a nested list."""
    n = 1
    while isinstance(x, list) and x:
        n *= len(x)
        x = x[0]
    return n


def _run(body: AggregateRequest, preds: Any) -> dict[str, Any]:
    try:
        agg, info = registry.aggregate(body.method, preds, kind=body.kind, **body.params)
    except InputError:
        raise
    except TypeError as exc:  # an unknown or ill-typed keyword in params
        raise InputError("params", str(exc), code="invalid-parameters") from None
    except (ValueError, ArithmeticError) as exc:
        raise library_error(exc) from None
    out = body.output or body.kind
    arr = np.exp(agg) if out == "probs" else agg
    return {"method": body.method, "kind": out, "aggregate": encode(arr, body.format, native=True), "info": info}


@router.post(
    "/aggregate",
    response_model=AggregateResponse,
    responses=PROBLEMS,
    summary="Pool posted predictions (stateless)",
    dependencies=[require("stateless")],
)
async def aggregate(body: AggregateRequest, request: Request) -> Response:
    """Pool ``predictions`` ``(n_items, n_agents, n_classes)`` with ``method`` and the given ``params``.

    Nothing is learnt or stored: weights, γ... are given (uniform weights by default). The answer is
    the ``(n_items, n_classes)`` aggregate in ``output`` kind (default: the input kind)."""
    settings = request.app.state.settings
    preds = body.predictions
    if isinstance(preds, list):
        preds = resolve(preds, "predictions", limit=settings.max_array_elements)
        small = approx_size(preds) <= settings.sync_offload_elements
    else:
        small = False
    if small:
        return json_response(_run(body, preds))

    def work():
        p = preds
        if isinstance(p, ArrayRef):
            with request.app.state.db.sessions() as s:
                p = array_in(request, s, p, "predictions")
        elif not isinstance(p, list):
            p = resolve(p.model_dump(), "predictions", limit=settings.max_array_elements)
        return _run(body, p)

    return json_response(await anyio.to_thread.run_sync(work))
