"""Markets as stored resources: agents (utilities) and wealth, training (inline or as a job),
equilibrium predictions, wealth history. The numerical work is :mod:`markets`'."""

from __future__ import annotations

from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from markets import make_agents, train_market

from .arrays import delete_blobs, load_blob, save_blob
from .auth import Principal
from .errors import ProblemError
from .jobs import JobContext, handler, on_end
from .models import JobRow, MarketRow, aware, utcnow
from .tenancy import check_owner

TRAIN_OPTIONS = ("mode", "batch_size", "max_epochs", "wealth_tol", "tol", "method", "floor")


def market_view(session: Session, row: MarketRow, *, with_history: bool = False) -> dict[str, Any]:
    wealth = load_blob(session, "market", row.id, "wealth")
    return {
        "id": row.id,
        "name": row.name,
        "status": row.status,
        "n_agents": row.n_agents,
        "n_classes": row.n_classes,
        "utilities": row.spec.get("utilities"),
        "options": row.spec.get("options", {}),
        "wealth": None if wealth is None else wealth.tolist(),
        "n_trained": row.n_trained,
        "trainings": (row.state or {}).get("trainings", []),
        "job_id": row.job_id,
        "created_at": aware(row.created_at),
        "updated_at": aware(row.updated_at),
        "links": row.links("markets", "train", "predict", "wealth"),
    }


def check_agents(utilities: Any, wealth: Any, n_agents: int) -> np.ndarray:
    """Validate the agents with the library; returns the normalised initial wealth."""
    agents = make_agents(utilities, wealth, n_agents)
    return agents.wealth


def agents_of(utilities: Any, wealth: np.ndarray) -> Any:
    """The library's agents with a stored wealth (trained exponential agents may hold <= 0)."""
    return make_agents(utilities, None, int(wealth.shape[0])).with_wealth(wealth)


@handler("market_train")
def train(ctx: JobContext) -> dict[str, Any]:
    """Train the stored market ``spec['market_id']`` on ``ctx.inputs`` from its current wealth."""
    spec = ctx.spec
    mid = spec["market_id"]
    with ctx.db.sessions() as s:
        row = s.get(MarketRow, mid)
        if row is None:
            return {"market_id": mid, "deleted": True}
        wealth = load_blob(s, "market", mid, "wealth")
        history = load_blob(s, "market", mid, "history")
        utilities = row.spec["utilities"]
        opts = {**row.spec.get("options", {}), **spec.get("options", {})}
    res = train_market(
        ctx.inputs["predictions"],
        ctx.inputs["labels"],
        agents_of(utilities, wealth),
        kind="log_probs",
        progress=ctx.progress,
        sample_weight=ctx.inputs.get("sample_weight"),
        **{k: v for k, v in opts.items() if k in TRAIN_OPTIONS},
    )
    n = int(ctx.inputs["labels"].shape[0])
    info = {
        "n_items": n,
        "mode": res.mode,
        "n_epochs": int(res.n_epochs),
        "converged": bool(res.converged),
        "conservation_error": float(res.conservation_error),
        "n_equilibrium_iter": int(res.n_equilibrium_iter),
        "all_equilibria_converged": bool(res.all_equilibria_converged),
        "seconds": float(res.seconds),
        "n_floored": int(getattr(res, "n_floored", 0) or 0),
        "at": utcnow().isoformat(),
        "job_id": ctx.job_id,
    }
    new_hist = res.wealth_history[1:] if res.wealth_history.shape[0] > 1 else res.wealth_history[:0]
    history = new_hist if history is None else np.vstack([history, new_hist])
    with ctx.db.sessions() as s:
        row = s.get(MarketRow, mid)
        if row is None:
            return {"market_id": mid, "deleted": True}
        save_blob(s, "market", mid, "wealth", res.wealth)
        save_blob(s, "market", mid, "history", history)
        st = dict(row.state or {})
        st["trainings"] = [
            *st.get("trainings", []),
            {**info, "history_rows": [int(history.shape[0] - new_hist.shape[0]), int(history.shape[0])]},
        ]
        row.state = st
        row.n_trained = row.n_trained + n
        row.status = "ready"
        row.updated_at = utcnow()
        s.commit()
    return {"market_id": mid, "training": info}


@on_end("market_train")
def _ended(s: Session, jid: str, spec: dict[str, Any], state: str, error: dict[str, Any] | None) -> None:
    row = s.get(MarketRow, spec["market_id"])
    if row is not None and row.job_id == jid:
        row.status = "ready"  # the wealth is unchanged: a failed or cancelled training commits nothing
        st = dict(row.state or {})
        st["last_error"] = error or {"detail": f"training {state}"}
        row.state = st


def require_market(row: MarketRow | None, mid: str, me: Principal, *, idle: bool = False) -> MarketRow:
    """``row`` if it exists, belongs to ``me`` (or ``me`` is an admin) and, with ``idle``, is not training."""
    if row is None:
        raise ProblemError(404, f"no market {mid!r}", field="market_id", reason="not found", code="not-found")
    check_owner(me, row.owner, "market", mid)
    if idle and row.status == "training":
        raise ProblemError(
            409,
            f"market {mid!r} is training (job {row.job_id}); wait for it",
            field="market_id",
            reason="training in progress",
            code="busy",
        )
    return row


def delete_market(session: Session, row: MarketRow) -> None:
    delete_blobs(session, "market", row.id)
    if row.job_id:
        job = session.get(JobRow, row.job_id)
        if job is not None and job.state in ("queued", "running"):
            job.cancel_requested = True
    session.delete(row)
    session.commit()
