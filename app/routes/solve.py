"""/v1/solve: run any registered solver on any problem of the core with posted data."""

from __future__ import annotations

from typing import Any

import numpy as np
from fastapi import APIRouter, Request
from pydantic import BaseModel

from solvers.errors import InputError

from .. import solve_service as svc
from ..deps import Stateless
from ..errors import ProblemError, library_error
from ..fastjson import FastRoute, json_response
from ..jobs import run_inline
from ..models import new_id
from ..schemas import JobView, ProblemInfoView, SolveRequest, SolveResponse, SolverInfoView
from .common import accepted, array_in, problem_responses, run_in_background

router = APIRouter(prefix="/v1", tags=["solve"], route_class=FastRoute)
P = problem_responses(401, 403, 413, 422)


@router.get("/solvers", response_model=list[SolverInfoView], summary="Registered solvers")
def solvers(_: Stateless) -> Any:
    return svc.solvers_view()


@router.get("/solve/problems", response_model=list[ProblemInfoView], summary="Problems /v1/solve can build")
def problems(_: Stateless) -> Any:
    return svc.problems_view()


@router.post(
    "/solve",
    response_model=SolveResponse,
    responses={**P, 202: {"model": JobView, "description": "running as a background job"}},
    summary="Run a solver on a problem built from posted data",
)
def solve(body: SolveRequest, request: Request, p: Stateless) -> Any:
    """Build ``problem`` from ``data`` (its constructor's arguments), run ``method`` (``auto`` picks
    one) and return the result with its trace (objective, passes over the data, seconds). Large
    problems (or ``background: true``) run as a job, which needs scope ``write``."""
    arrays: dict[str, np.ndarray] = {}
    scalars: dict[str, Any] = {}
    with request.app.state.db.sessions() as s:
        for k, v in body.data.items():
            v = array_in(request, s, v, f"data.{k}") if isinstance(v, (list, dict, BaseModel)) else v
            if isinstance(v, list):
                v = svc.numeric_array(v, f"data.{k}")
            (arrays if isinstance(v, np.ndarray) else scalars)[k] = v
        x0 = None
        if body.x0 is not None:
            try:
                x0 = np.asarray(array_in(request, s, body.x0, "x0"), dtype=np.float64)
            except (ValueError, TypeError):
                raise InputError("x0", "must be a list of numbers") from None
    spec = {
        "problem": body.problem,
        "method": body.method,
        "tol": body.tol,
        "max_iter": body.max_iter,
        "options": body.options,
        "scalars": scalars,
    }
    inputs = {f"data.{k}": v for k, v in arrays.items()}
    if x0 is not None:
        inputs["x0"] = x0
    if run_in_background(request, body.background, sum(a.size for a in arrays.values())):
        if not p.allows("write"):
            raise ProblemError(
                403 if not p.anonymous else 401,
                "background solves are stored as jobs and need scope 'write'",
                field="authorization",
                reason="missing scope 'write'",
            )
        # validate now so that bad input is a 422 here, not a failed job
        _check(body.problem, scalars, arrays, body.method, body.options)
        with request.app.state.db.sessions() as s:
            return accepted(request.app.state.jobs.submit(s, "solve", spec, inputs, job_id=new_id("job")))
    try:
        return json_response(run_inline("solve", spec, inputs, request.app.state.db))
    except (ValueError, TypeError, ArithmeticError, np.linalg.LinAlgError) as exc:
        raise library_error(exc) from None


def _check(
    name: str, scalars: dict[str, Any], arrays: dict[str, np.ndarray], method: str, options: dict[str, Any]
) -> None:
    try:
        problem = svc.build_problem(name, {**scalars, **arrays})
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise library_error(exc, "data") from None
    svc.check_options(problem, method, options)
