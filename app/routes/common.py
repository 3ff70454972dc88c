"""Helpers shared by the routers: reading posted arrays, deciding between inline work and a job."""

from __future__ import annotations

from typing import Any

import numpy as np
from fastapi import Request
from pydantic import BaseModel
from sqlalchemy.orm import Session

from aggregators.validation import as_labels, as_log_probs, check_sample_weight

from ..arrays import resolve
from ..auth import Principal
from ..errors import ProblemError
from ..fastjson import json_response
from ..jobs import job_view
from ..models import JobRow, StoredResource, new_id
from ..schemas import Problem


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses`` of a router: each status answered with a :class:`Problem` body."""
    return {status: {"model": Problem} for status in statuses}


def array_in(request: Request, session: Session | None, value: Any, field: str) -> Any:
    if isinstance(value, BaseModel):
        value = value.model_dump()
    me = getattr(request.state, "principal", None)
    owners = None if me is None or me.admin else me.owners
    return resolve(value, field, session=session, limit=request.app.state.settings.max_array_elements, owners=owners)


def predictions_in(
    request: Request, session: Session | None, value: Any, kind: str, field: str = "predictions"
) -> np.ndarray:
    """Posted predictions, validated by the one validator, as normalised log-probabilities (an
    invalid array raises the validator's :class:`~solvers.errors.InputError`: a 422 naming it)."""
    raw = array_in(request, session, value, field)
    return as_log_probs(raw, kind=kind, field=field).log_probs


def labels_in(
    request: Request, session: Session | None, value: Any, n_items: int, n_classes: int, field: str = "labels"
) -> np.ndarray:
    raw = array_in(request, session, value, field)
    return as_labels(raw, n_items, n_classes, field=field)


def training_inputs(
    request: Request, session: Session, lp: np.ndarray, labels: Any, sample_weight: Any
) -> dict[str, np.ndarray]:
    """What a fit or a training reads: the predictions, their labels and the sample weights if any."""
    inputs = {"predictions": lp, "labels": labels_in(request, session, labels, lp.shape[0], lp.shape[2])}
    sw = check_sample_weight(sample_weight, lp.shape[0])
    return inputs if sw is None else inputs | {"sample_weight": sw}


def start_job(
    request: Request,
    session: Session,
    kind: str,
    spec: dict[str, Any],
    inputs: dict[str, np.ndarray],
    *,
    row: StoredResource,
    resource_type: str,
    me: Principal,
) -> Any:
    """Queue job ``kind`` working on ``row`` (a stored pool or market) for ``me``; the answer is
    202 with the job (``Location``: the job)."""
    row.job_id = new_id("job")
    job = request.app.state.jobs.submit(
        session, kind, spec, inputs, resource_type=resource_type, resource_id=row.id, job_id=row.job_id, owner=me.owner
    )
    return accepted(job)


def accepted(job: JobRow) -> Any:
    """202 with the view of ``job`` (``Location``: the job)."""
    view = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in job_view(job).items()}
    return json_response(view, 202, {"Location": f"/v1/jobs/{job.id}"})


def run_in_background(request: Request, background: bool | None, size: int) -> bool:
    if background is not None:
        return background
    return size > request.app.state.settings.job_threshold


def not_found(what: str, rid: str) -> ProblemError:
    return ProblemError(404, f"no {what} {rid!r}", field=f"{what}_id", reason="not found", code="not-found")
