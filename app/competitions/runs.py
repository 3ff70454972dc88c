"""Aggregation runs: fit every pool on a competition's submissions as a background job, follow its
stage, store Table 2.3, the credit, the pooled forecasts and the fitted pools (as ``/v1/pools``
resources)."""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from app import estimator_store as store
from app.arrays import load_blob, load_blob_of_each, save_blob
from app.errors import ProblemError
from app.jobs import JobContext, handler, on_end
from app.models import PoolRow, aware, new_id, utcnow
from app.settings import get_settings
from evaluation import aggregation
from evaluation.run_clock import RunClock
from evaluation.submission_map import submission_map as evaluation_submission_map
from solvers.progress import report, scaled

from .lifecycle import hidden_part
from .membership import participants
from .models import AggregationRun, Competition, Submission
from .submissions import list_submissions

log = logging.getLogger("agora.competitions")

JOB_KIND = "competition_aggregate"
MAX_AGENTS = 100
"""At most this many submissions (the best on the public part) enter an aggregation run."""


# -- aggregation -----------------------------------------------------------------------------------
def latest_aggregation(session: Session, comp: Competition, *, succeeded: bool = False) -> AggregationRun | None:
    q = select(AggregationRun).where(AggregationRun.competition_id == comp.id)
    if succeeded:
        q = q.where(AggregationRun.state == "succeeded")
    return session.scalars(q.order_by(AggregationRun.created_at.desc(), AggregationRun.id.desc())).first()


def leaderboard_aggregation(session: Session, comp: Competition) -> AggregationRun | None:
    """The run whose aggregate rows the leaderboard shows: the pinned one, else the latest successful."""
    if comp.pinned_aggregation_id:
        run = session.get(AggregationRun, comp.pinned_aggregation_id)
        if run is not None and run.state == "succeeded":
            return run
    return latest_aggregation(session, comp, succeeded=True)


def pin_aggregation(session: Session, comp: Competition, agg_id: str | None) -> AggregationRun | None:
    """Pin a succeeded run as the leaderboard's (``None`` unpins: the latest successful run again)."""
    run = None
    if agg_id is not None:
        run = get_aggregation(session, comp, agg_id)
        if run.state != "succeeded":
            raise ProblemError(
                409,
                f"only a succeeded run can be pinned; this one is {run.state}",
                field="aggregation_id",
                reason=run.state,
                code="not-succeeded",
            )
    comp.pinned_aggregation_id = agg_id
    session.commit()
    return run


def aggregation_predictions(session: Session, run: AggregationRun, method: str) -> np.ndarray:
    """A run's aggregate of ``method`` on every test item (normalised log-probabilities)."""
    if method not in ((run.result or {}).get("predictions") or []):
        raise ProblemError(
            404, f"no aggregate {method!r} in this run", field="method", reason="not found", code="not-found"
        )
    return load_blob(session, "aggregation", run.id, method)


def get_aggregation(session: Session, comp: Competition, agg_id: str) -> AggregationRun:
    run = session.get(AggregationRun, agg_id)
    if run is None or run.competition_id != comp.id:
        raise ProblemError(
            404, f"no aggregation {agg_id!r} in this competition", field="aggregation_id", reason="not found"
        )
    return run


def new_aggregation(session: Session, comp: Competition, params: dict | None = None) -> AggregationRun:
    run = AggregationRun(
        id=new_id("agg"),
        competition_id=comp.id,
        state="queued",
        params=params or {},
        submission_ids=[],
        created_at=utcnow(),
    )
    session.add(run)
    session.commit()
    return run


def beats_uniform(n_classes: int) -> float:
    """The public perplexity a submission must stay below to enter a run: a uniform guess scores
    ``n_classes`` up to rounding, so the bar sits a relative 1e-9 below it."""
    return n_classes * (1.0 - 1e-9)


def choose_submissions(subs: list[Submission], n_classes: int) -> tuple[list[Submission], list[tuple[Submission, str]]]:
    """The submissions a run uses (better than a uniform guess on the public part, at most
    ``MAX_AGENTS``, best public score first) and the ones it leaves out, each with the reason."""
    ranked = sorted(subs, key=lambda x: (x.public_perplexity, aware(x.created_at)))
    used, left_out = [], []
    for x in ranked:
        if x.status != "active":
            left_out.append((x, x.status_reason or x.status))
        elif not x.public_perplexity < beats_uniform(n_classes):
            left_out.append((x, f"public perplexity not below {n_classes} (a uniform guess)"))
        elif len(used) >= MAX_AGENTS:
            left_out.append((x, f"not among the {MAX_AGENTS} best by public perplexity"))
        else:
            used.append(x)
    return used, left_out


def usable_submissions(
    session: Session, comp: Competition, *, status: int, minimum: int = 2, what: str = "aggregation"
) -> tuple[list[Submission], list[tuple[Submission, str]]]:
    """:func:`choose_submissions` over the submissions of ``comp``; a ``status`` problem when fewer
    than ``minimum`` are usable."""
    subs, left_out = choose_submissions(list_submissions(session, comp), comp.n_classes)
    if len(subs) < minimum:
        raise ProblemError(
            status,
            f"{what} needs at least {minimum} submissions better than a uniform prediction",
            field="submissions",
            reason="too few",
            code="too-few-submissions",
        )
    return subs, left_out


def submission_map(session: Session, comp: Competition) -> dict[str, Any]:
    """The map of the usable submissions on the public part (:mod:`evaluation.submission_map`):
    ``nodes`` (submission id, participant), ``edges`` (node-index pair, partial correlation) and
    ``families`` (lists of node indices); a 409 problem when fewer than 3 are usable."""
    y, public = hidden_part(session, comp)
    people = participants(session, comp)
    subs, _ = usable_submissions(session, comp, status=409, minimum=3, what="the submission map")
    data = load_blob_of_each(session, "submission", [x.id for x in subs], "data")
    lp = np.stack([data[x.id][public].astype(np.float64) for x in subs], axis=1)
    nodes = [{"submission_id": x.id, "participant": people[x.participant_id].name} for x in subs]
    return {"nodes": nodes, **evaluation_submission_map(lp, y[public])}


def run_aggregation(db, agg_id: str, progress=None, eta=None) -> dict:
    """Fit every pool on the competition's submissions and store Table 2.3 and the credit.

    ``db`` is an :class:`app.db.Database`; ``eta``, if given, receives the seconds left as
    :class:`evaluation.run_clock.RunClock` estimates them. The returned dict (the job result) holds only ids: the
    private scores stay in the run's row, served by the routes to whoever may see them.
    """
    with db.sessions() as s:
        run = s.get(AggregationRun, agg_id)
        comp = s.get(Competition, run.competition_id)
        run.state = "running"
        s.commit()
        y, public = hidden_part(s, comp)
        people = participants(s, comp)
        subs, left_out = usable_submissions(s, comp, status=422)
        data = load_blob_of_each(s, "submission", [x.id for x in subs], "data")
        lp = np.stack([data[x.id].astype(np.float64) for x in subs], axis=1)  # (n_items, A, K)
        meta = [
            dict(
                submission_id=x.id,
                participant=people[x.participant_id].name,
                participant_id=x.participant_id,
                description=x.description,
            )
            for x in subs
        ]
        params = dict(run.params or {})
        seed, comp_id, comp_k, owner = comp.split_seed, comp.id, comp.n_classes, comp.owner_key_id
    etas = params.get("etas") or aggregation.DEFAULT_ETAS
    methods = params.get("methods") or aggregation.METHODS
    max_epochs = int(params.get("market_max_epochs") or aggregation.MARKET_MAX_EPOCHS)
    n_val, n_agents = int(public.sum()), lp.shape[1]
    loo_refit = n_val * n_agents * comp_k * n_agents <= aggregation.LOO_REFIT_BUDGET
    plan = aggregation.progress_plan(
        methods,
        len(etas),
        n_agents,
        loo_refit=loo_refit,
        bands=True,  # subsampled to the budget above it (evaluation.weight_posterior.credit_bands)
        market_epochs=max_epochs,
    )
    # the pooled forecasts on every item and the stored pools come last: weight 3, about the measured
    # cost of a 200-epoch market (benchmarks/results/aggregation-eta.md)
    plan.append(("store", 3.0))
    clock = RunClock(plan, alike={"loo": ("log", n_agents)} if loo_refit else None)
    progress = _staged(db, agg_id, plan, progress, n_etas=len(etas), max_epochs=max_epochs, n_agents=n_agents)
    if eta is not None:
        progress = _timed(clock, progress, eta)
    whole = sum(w for _, w in plan)
    result = aggregation.aggregate_submissions(
        lp[public],
        y[public],
        lp[~public],
        y[~public],
        seed=seed,
        etas=etas,
        methods=methods,
        progress=scaled(progress, 0.0, 1.0 - 3.0 / whole),
        predict_lp=lp,
        market_max_epochs=max_epochs,
        client=get_settings().dask_scheduler,
    )
    predictions = result.pop("predictions")
    models = result.pop("models")
    result["predictions"] = sorted(predictions)  # the methods whose aggregate can be downloaded
    result["used"] = [{"submission_id": m["submission_id"], "participant": m["participant"]} for m in meta]
    result["left_out"] = [
        {"submission_id": x.id, "participant": people[x.participant_id].name, "reason": why} for x, why in left_out
    ]
    for c in result["credit"]:
        c.update(meta[c["index"]])
    for row in result["rows"]:
        if row["method"] == "best_single":
            row["params"].update(meta[row["params"]["submission_index"]])
    with db.sessions() as s:
        run = s.get(AggregationRun, agg_id)
        run.state, run.result, run.finished_at, run.stage = "succeeded", result, utcnow(), "done"
        run.submission_ids = [m["submission_id"] for m in meta]
        for method, arr in predictions.items():
            save_blob(s, "aggregation", agg_id, method, arr)
        run.result = {**result, "pools": _export_pools(s, agg_id, models, lp.shape[0], owner)}
        s.commit()
    report(progress, 1.0)
    return {"aggregation_id": agg_id, "competition_id": comp_id}


def _stage_label(name: str, g: float, *, n_etas: int, max_epochs: int, n_agents: int) -> str:
    """What a run is doing, from its step ``name`` and the fraction ``g`` of that step done: the
    Rényi fit of the sweep, the market epoch, the leave-one-out refit, else the step's percent."""
    if name == "renyi":
        return f"renyi: fit {min(n_etas, int(g * n_etas) + 1)}/{n_etas}"
    if name == "market":
        return f"market: epoch {min(max_epochs, int(g * max_epochs))}/{max_epochs}"
    if name == "store":
        return "done" if g >= 1.0 else "storing the pooled forecasts and pools"
    if name == "bands":
        return f"credible bands: {min(100, int(100 * g))}%"
    if name == "loo":
        return f"leave-one-out: {min(n_agents, int(g * n_agents))}/{n_agents}"
    return f"{name}: {min(100, int(100 * g))}%"


def _timed(clock: RunClock, progress, eta):
    """``progress``, first handing ``clock``'s estimate of the seconds left to ``eta``."""

    def cb(f: float) -> None:
        eta(clock.observe(f))
        progress(f)

    return cb


def _staged(db, agg_id: str, plan, progress, *, n_etas: int, max_epochs: int, n_agents: int):
    """The job's progress callback, which also keeps the run's ``stage`` (method, Rényi fit, market
    epoch, credible bands, leave-one-out submission) up to date."""
    last = {"label": "", "t": 0.0}

    def cb(f: float) -> None:
        if progress is not None:
            progress(f)
        name, g = aggregation.stage_at(plan, f)
        label = _stage_label(name, g, n_etas=n_etas, max_epochs=max_epochs, n_agents=n_agents)
        now = time.monotonic()
        # a new Rényi fit or refit is always written (n_etas, n_agents writes at most); epochs and
        # percents at most four times a second
        counted = name in ("renyi", "loo") or not label.startswith(last["label"].split(":")[0])
        if label != last["label"] and (now - last["t"] >= 0.25 or counted):
            last["label"], last["t"] = label, now
            with db.sessions() as s:
                run = s.get(AggregationRun, agg_id)
                if run is not None:
                    run.stage = label
                    s.commit()

    return cb


def _export_pools(session: Session, agg_id: str, models: dict[str, Any], n_items: int, owner: str) -> dict[str, str]:
    """Every fitted pool of a run, the market included, as a ``/v1/pools`` resource owned by the
    organiser's key (ready to predict on new items); returns ``{method: pool id}``. A pool whose
    state cannot be stored is skipped (and logged)."""
    out = {}
    for method, pool in models.items():
        try:
            state, arrays = store.dump(pool)
            params = store.public(store.jsonable(pool.get_params()))
        except Exception:  # noqa: BLE001 - one pool that cannot be stored must not sink the run
            log.warning("run %s: the %s pool could not be stored as a resource", agg_id, method, exc_info=True)
            continue
        row = PoolRow(
            id=new_id("pool"),
            name=f"competition run {agg_id}: {method}",
            method=method,
            params=params,
            kind="log_probs",
            status="ready",
            n_items=n_items,
            n_agents=int(pool.n_agents_),
            n_classes=int(pool.n_classes_),
            state=state,
            metrics={},
            fit={},
            owner=owner,
            created_at=utcnow(),
        )
        session.add(row)
        for name, arr in arrays.items():
            save_blob(session, "pool", row.id, name, arr)
        out[method] = row.id
    return out


@handler(JOB_KIND)
def _run_aggregation_job(ctx: JobContext) -> dict:
    return run_aggregation(ctx.db, ctx.spec["aggregation_id"], ctx.progress, ctx.eta)


@on_end(JOB_KIND)
def _aggregation_job_ended(s: Session, jid: str, spec: dict, state: str, error: dict | None) -> None:
    run = s.get(AggregationRun, spec["aggregation_id"])
    if run is not None:
        run.state, run.error, run.finished_at = state, error, utcnow()


def start_aggregation(session: Session, comp: Competition, runner, params: dict | None = None):
    """Queue an aggregation run as a background job; returns ``(run, job)`` (409 when fewer than
    two submissions are usable)."""
    usable_submissions(session, comp, status=409)
    run = new_aggregation(session, comp, params)
    job = runner.submit(
        session, JOB_KIND, {"aggregation_id": run.id}, {}, resource_type="competition", resource_id=comp.id
    )
    run.job_id = job.id
    session.commit()
    return run, job
