"""Request bodies and the views of competitions: the one place that decides what a caller sees.

Rules (the leak-proof design):

* hidden labels and the split seed are never in any view;
* private scores appear only when the competition is closed (deadline passed) or the caller is the
  organiser (who owns the labels and needs Table 2.3 in the aggregation lab);
* a participant sees only their own submissions; other people appear only as leaderboard rows
  (name, best public score, number of entries, time of the last one);
* aggregation results (whose rows and credit hold private scores) follow the same rule as private
  scores; before the deadline others see only the public columns of the aggregate rows.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from app.models import aware
from app.schemas import ArrayIn, Body

from .models import AggregationRun, Competition, Invitation, Participant, Submission

SplitKind = Literal["random", "stratified", "grouped"]
SPLIT_HELP = (
    "how the server draws the public part: 'random', 'stratified' (each label keeps its share within one "
    "item) or 'grouped' (whole groups on one side; needs 'groups')"
)
GROUPS_HELP = "one group value per test item (integers or strings, e.g. the image of a pixel) for split 'grouped'"


class CompetitionCreate(Body):
    title: str = Field(..., min_length=1, max_length=200)
    description: str = Field("", max_length=5000)
    n_classes: int = Field(..., ge=2, le=1000, description="K, the number of classes")
    labels: ArrayIn = Field(..., description="hidden labels of the test items (integers in 0..K-1); never shown")
    item_ids: ArrayIn | None = Field(None, description="integer ids of the test items (default 0..n-1)")
    public_fraction: float = Field(
        0.5, gt=0.0, lt=1.0, description="share of items scored publicly; the split is drawn by the server"
    )
    daily_cap: int = Field(5, ge=1, le=1000, description="submissions per participant per UTC day")
    n_select: int = Field(2, ge=1, le=100, description="submissions a participant may select for the final ranking")
    deadline: datetime = Field(..., description="ISO 8601; naive times are UTC")
    join_policy: Literal["open", "invite"] = Field(
        "open", description="'invite': only holders of an organiser-issued invitation code may join"
    )
    score_mechanism: Literal["exact", "round", "ladder"] = Field(
        "exact",
        description="what the public leaderboard shows: the exact public perplexity, rounded to score_step, or "
        "the Ladder (Blum & Hardt 2015: a participant's shown score changes only when a submission beats "
        "their best shown score by more than score_step, rounded to score_step)",
    )
    score_step: float | None = Field(
        None, description="rounding step / Ladder margin in perplexity units (required unless 'exact')"
    )
    split: SplitKind = Field("random", description=SPLIT_HELP)
    groups: ArrayIn | None = Field(None, description=GROUPS_HELP)


class SplitRequest(Body):
    split: SplitKind = Field(..., description=SPLIT_HELP)
    public_fraction: float | None = Field(None, gt=0.0, lt=1.0, description="a new public share (default: unchanged)")
    groups: ArrayIn | None = Field(None, description=GROUPS_HELP)


class CompetitionEdit(Body):
    title: str | None = Field(None, min_length=1, max_length=200)
    description: str | None = Field(None, max_length=5000)
    deadline: datetime | None = Field(None, description="ISO 8601, in the future; naive times are UTC")
    daily_cap: int | None = Field(None, ge=1, le=1000)


class JoinRequest(Body):
    name: str = Field(..., min_length=1, max_length=100)
    invitation: str | None = Field(
        None, max_length=100, description="an unused invitation code (required when join_policy is 'invite')"
    )


class InviteRequest(Body):
    n: int = Field(1, ge=1, le=1000, description="how many single-use codes to issue")
    note: str = Field("", max_length=200, description="a note kept with the codes (e.g. who they are for)")


class ExcludeRequest(Body):
    excluded: bool = True
    reason: str = Field("", max_length=200, description="shown to the participant")


class PinRequest(Body):
    aggregation_id: str | None = Field(..., description="the run to pin; null unpins (latest successful run)")


class SelectRequest(Body):
    selected: bool


class AggregationCreate(Body):
    etas: list[float] | None = Field(
        None, min_length=1, max_length=20, description="η = 1/γ of the Rényi sweep (each ≥ 1)"
    )
    market_max_epochs: int | None = Field(
        None, ge=1, le=5000, description="the market's epoch cap (default 30); the run reports epochs and convergence"
    )
    methods: list[Literal["average", "topk", "power_bma", "linear", "log", "renyi", "market"]] | None = None


def iso(dt: datetime | None) -> str | None:
    dt = aware(dt)
    return dt.isoformat() if dt is not None else None


def competition_view(
    comp: Competition, *, closed: bool, role: str, n_participants: int, n_submissions: int
) -> dict[str, Any]:
    return {
        "id": comp.id,
        "title": comp.title,
        "description": comp.description,
        "n_classes": comp.n_classes,
        "n_items": comp.n_items,
        "n_public": comp.n_public if comp.n_public is not None else int(round(comp.public_fraction * comp.n_items)),
        "split": comp.split_kind or "random",
        "public_fraction": comp.public_fraction,
        "daily_cap": comp.daily_cap,
        "n_select": comp.n_select,
        "join_policy": comp.join_policy,
        "pinned_aggregation_id": comp.pinned_aggregation_id,
        "score_mechanism": comp.score_mechanism,
        "score_step": comp.score_step or None,
        "deadline": iso(comp.deadline),
        "closed": closed,
        "role": role,
        "n_participants": n_participants,
        "n_submissions": n_submissions,
        "extra": {k: v for k, v in (comp.extra or {}).items() if k in ("demo", "task", "files", "notes")},
        "created_at": iso(comp.created_at),
        "links": {
            "self": f"/v1/competitions/{comp.id}",
            "leaderboard": f"/v1/competitions/{comp.id}/leaderboard",
            "items": f"/v1/competitions/{comp.id}/items",
            "submissions": f"/v1/competitions/{comp.id}/submissions",
        },
    }


def submission_view(
    sub: Submission, *, reveal_private: bool, participant_name: str | None = None, exact_public: bool = False
) -> dict[str, Any]:
    """``exact_public`` (the organiser) adds the exact public score when the shown one is rounded or
    laddered; everyone else sees only the shown score (and its log as the log loss)."""
    shown = sub.public_perplexity if sub.shown_public_perplexity is None else sub.shown_public_perplexity
    d = {
        "id": sub.id,
        "participant_id": sub.participant_id,
        "description": sub.description,
        "filename": sub.filename,
        "public_perplexity": shown,
        "public_log_loss": sub.public_log_loss if shown == sub.public_perplexity else math.log(shown),
        "selected": bool(sub.selected),
        "status": sub.status or "active",
        "status_reason": sub.status_reason or "",
        "warnings": sub.warnings or [],
        "created_at": iso(sub.created_at),
    }
    if participant_name is not None:
        d["participant"] = participant_name
    if exact_public:
        d["exact_public_perplexity"] = sub.public_perplexity
        d["exact_public_log_loss"] = sub.public_log_loss
    if reveal_private:
        d["private_perplexity"] = sub.private_perplexity
        d["private_log_loss"] = sub.private_log_loss
    return d


def participant_view(p: Participant, token: str | None = None) -> dict[str, Any]:
    """A participant; ``token`` only in the answer to its join (it is stored hashed)."""
    return {
        "participant_id": p.id,
        "name": p.name,
        "competition_id": p.competition_id,
        "token": token,
        "note": "keep this token: it is shown once and identifies you in this competition"
        if token
        else "the token was shown once, in the answer to the join; it cannot be shown again",
    }


def invitation_view(inv: Invitation, code: str | None = None, participant: str | None = None) -> dict[str, Any]:
    """An invitation; ``code`` only at issue (it is stored hashed); ``participant``: the name of
    who redeemed it."""
    d: dict[str, Any] = {
        "id": inv.id,
        "note": inv.note,
        "used": inv.participant_id is not None,
        "participant_id": inv.participant_id,
        "participant": participant,
        "created_at": iso(inv.created_at),
        "used_at": iso(inv.used_at),
    }
    if code is not None:
        d["code"] = code
    return d


PUBLIC_ROW_KEYS = ("method", "label", "params", "public_perplexity", "error", "seconds")


def aggregation_rows(
    run: AggregationRun | None, *, reveal_private: bool, shown: dict[str, float] | None = None
) -> list[dict[str, Any]]:
    """The aggregate rows of a leaderboard. Unrevealed, the best single entry's public score is
    the one its submission shows (``shown``: submission id -> shown score), never the exact one,
    so a rounded or laddered competition does not leak it here."""
    if run is None or not run.result:
        return []
    out = []
    for r in run.result.get("rows", []):
        if r.get("error"):
            continue
        row = dict(r) if reveal_private else {k: r[k] for k in PUBLIC_ROW_KEYS if k in r}
        if not reveal_private and r["method"] == "best_single":
            row["params"] = {k: v for k, v in r["params"].items() if k in ("submission_id", "participant")}
            row["public_perplexity"] = (shown or {}).get(row["params"].get("submission_id", ""))
        out.append(row)
    return out


def aggregation_view(
    run: AggregationRun, *, reveal_private: bool, job_view: dict | None = None, shown: dict[str, float] | None = None
) -> dict[str, Any]:
    d = {
        "id": run.id,
        "competition_id": run.competition_id,
        "state": run.state,
        "stage": run.stage or "",
        "job_id": run.job_id,
        "params": run.params,
        "n_submissions": len(run.submission_ids or []),
        "error": run.error,
        "created_at": iso(run.created_at),
        "finished_at": iso(run.finished_at),
        "links": {"job": f"/v1/jobs/{run.job_id}" if run.job_id else None},
        "private_revealed": reveal_private,
    }
    if job_view is not None:
        d["progress"] = job_view.get("progress")
        d["eta_seconds"] = job_view.get("eta_seconds")
        if run.state in ("queued", "running") and job_view.get("state") in ("failed", "cancelled"):
            d["state"] = job_view["state"]  # a job cancelled while queued never reached the run's hook
    if run.result and reveal_private:
        d["result"] = run.result
    elif run.result:
        d["result"] = {"rows": aggregation_rows(run, reveal_private=False, shown=shown)}
    return d
