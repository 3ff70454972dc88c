"""A competition's life: create (with its hidden labels and the public/private split), edit, publish
data files, delete; reading its item ids and, for scoring only, its hidden part.

Errors are :class:`app.errors.ProblemError` or :class:`solvers.errors.InputError` (problem+json in
the API); their messages never quote hidden values.
"""

from __future__ import annotations

import logging
import re
import secrets
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from aggregators.validation import as_labels
from app.arrays import load_blob, save_blob
from app.errors import ProblemError
from app.models import Blob, aware, new_id, utcnow
from evaluation import ladder
from evaluation.split import SPLIT_KINDS, split_mask
from solvers.errors import InputError

from .models import AggregationRun, Competition, Invitation, Participant, Submission
from .parsing import exact_ids

log = logging.getLogger("agora.competitions")

MAX_ITEMS = 200_000
MAX_CLASSES = 1000
JOIN_POLICIES = ("open", "invite")


# -- competitions ----------------------------------------------------------------------------------
def is_closed(comp: Competition, now: datetime | None = None) -> bool:
    """True once the deadline has passed: private scores become visible, uploads stop."""
    return (now or utcnow()) >= aware(comp.deadline)


def check_open(comp: Competition, settled: str, field: str, now: datetime | None = None) -> None:
    """409 ``closed`` naming ``field`` once the deadline of ``comp`` has passed and ``settled`` is final."""
    if is_closed(comp, now):
        raise ProblemError(409, f"the deadline has passed; {settled}", field=field, reason="closed", code="closed")


def create_competition(
    session: Session,
    *,
    owner_key_id: str,
    title: str,
    n_classes: int,
    labels: Any,
    item_ids: Any | None = None,
    public_fraction: float = 0.5,
    daily_cap: int = 5,
    n_select: int = 2,
    deadline: datetime,
    description: str = "",
    extra: dict | None = None,
    split_seed: int | None = None,
    join_policy: str = "open",
    score_mechanism: str = "exact",
    score_step: float | None = None,
    split: str = "random",
    groups: Any | None = None,
) -> Competition:
    """Store a competition. The split seed is drawn by the server (never returned).

    ``join_policy="invite"`` lets only holders of an organiser-issued invitation join;
    ``score_mechanism``/``score_step`` choose what the public leaderboard shows
    (:mod:`evaluation.ladder`); ``split`` how the public part is drawn (:mod:`evaluation.split`:
    ``random``, ``stratified`` by label, or ``grouped`` by ``groups``, one value per item).
    """
    if join_policy not in JOIN_POLICIES:
        raise InputError("join_policy", f"must be one of {', '.join(JOIN_POLICIES)}; got {join_policy!r}")
    step = ladder.check_display(score_mechanism, score_step)
    if not isinstance(n_classes, int) or not 2 <= n_classes <= MAX_CLASSES:
        raise ProblemError(
            422, f"n_classes must be an integer in 2..{MAX_CLASSES}", field="n_classes", reason="out of range"
        )
    try:
        y_arr = np.asarray(labels)
    except (ValueError, TypeError):
        y_arr = np.asarray(None)  # not an array at all: rejected below
    if y_arr.ndim != 1 or y_arr.dtype.kind not in "iuf" or y_arr.dtype == bool:
        raise ProblemError(
            422,
            "labels must be a 1-D list of integer classes",
            field="labels",
            reason="not a 1-D integer array",
            code="bad-labels",
        )
    try:
        y = as_labels(y_arr, int(y_arr.shape[0]), n_classes, field="labels")
    except InputError as exc:
        # the message names the rule and the position, never echoes a label value
        where = f" (first at position {exc.item})" if exc.item is not None else ""
        reason = {"unknown_class": f"labels must be integers in 0..{n_classes - 1}"}.get(exc.code, exc.reason) + where
        raise ProblemError(422, f"labels: {reason}", field="labels", reason=reason, code="bad-labels") from None
    n = len(y)
    if not 2 <= n <= MAX_ITEMS:
        raise ProblemError(
            422,
            f"a competition needs 2..{MAX_ITEMS} test items; got {n}",
            field="labels",
            reason="wrong number of items",
        )
    if item_ids is None:
        ids = np.arange(n, dtype=np.int64)
    else:
        try:
            ids = exact_ids(item_ids)
        except (TypeError, ValueError) as exc:
            raise ProblemError(
                422, f"item_ids must be exact 64-bit integers: {exc}", field="item_ids", reason=str(exc)
            ) from None
        if ids.shape != (n,):
            raise ProblemError(
                422, f"item_ids must be {n} integers, one per label", field="item_ids", reason="wrong shape"
            )
        if len(np.unique(ids)) != n:
            raise ProblemError(422, "item_ids must be distinct", field="item_ids", reason="duplicates")
    if not 0.0 < float(public_fraction) < 1.0:
        raise ProblemError(422, "public_fraction must lie in (0, 1)", field="public_fraction", reason="out of range")
    if daily_cap < 1 or n_select < 1:
        raise ProblemError(
            422,
            "daily_cap and n_select must be at least 1",
            field="daily_cap" if daily_cap < 1 else "n_select",
            reason="must be >= 1",
        )
    comp = Competition(
        id=new_id("cmp"),
        title=title.strip()[:200] or "untitled",
        description=description[:5000],
        n_classes=n_classes,
        n_items=n,
        public_fraction=float(public_fraction),
        split_seed=int(split_seed if split_seed is not None else secrets.randbelow(2**31 - 1)),
        daily_cap=int(daily_cap),
        n_select=int(n_select),
        deadline=aware(deadline),
        join_policy=join_policy,
        score_mechanism=score_mechanism,
        score_step=step,
        owner_key_id=owner_key_id,
        extra=extra or {},
        created_at=utcnow(),
    )
    codes = _draw_split(comp, split, y, groups)
    session.add(comp)
    save_blob(session, "competition", comp.id, "item_ids", ids)
    save_blob(session, "competition", comp.id, "labels", y.astype(np.int16))
    if codes is not None:
        save_blob(session, "competition", comp.id, "groups", codes)
    session.commit()
    log.info("competition %s created (%d items, %d classes)", comp.id, n, n_classes)
    return comp


def _draw_split(comp: Competition, kind: str, y: np.ndarray, groups: Any | None) -> np.ndarray | None:
    """Check and set the split of ``comp`` (kind and public size); returns the group codes to store
    (``None`` unless grouped). Bad input raises :class:`InputError` naming ``split`` or ``groups``."""
    if kind not in SPLIT_KINDS:
        raise InputError("split", f"must be one of {', '.join(SPLIT_KINDS)}; got {kind!r}", code="unknown_split")
    codes = None
    if kind == "grouped":
        if groups is None:
            raise InputError("groups", "a grouped split needs one group value per test item", code="missing")
        try:
            arr = np.asarray(groups)
        except (ValueError, TypeError):  # ragged or mixed nesting
            raise InputError("groups", "needs one group value per test item (a flat list)") from None
        if arr.ndim != 1 or arr.shape[0] != comp.n_items:
            raise InputError("groups", f"needs one value per test item ({comp.n_items}); got shape {arr.shape}")
        if arr.dtype.kind not in "iuU" and not (arr.dtype.kind == "f" and np.all(np.isfinite(arr))):
            raise InputError("groups", "group values must be integers or strings")
        codes = np.unique(arr, return_inverse=True)[1].ravel().astype(np.int64)
    mask = split_mask(kind, comp.n_items, comp.public_fraction, comp.split_seed, labels=y, groups=codes)
    comp.split_kind, comp.n_public = kind, int(mask.sum())
    return codes


def redefine_split(
    session: Session, comp: Competition, kind: str, *, public_fraction: float | None = None, groups: Any | None = None
) -> np.ndarray:
    """The organiser changes the split before the first submission (409 after it: scores already
    given would no longer match); returns the new public mask."""
    n_subs = session.scalar(select(func.count()).select_from(Submission).where(Submission.competition_id == comp.id))
    if n_subs:
        raise ProblemError(
            409,
            "the split is fixed once a submission has been scored",
            field="split",
            reason="submissions exist",
            code="split-fixed",
        )
    if public_fraction is not None:
        if not 0.0 < float(public_fraction) < 1.0:
            raise InputError("public_fraction", f"must lie in (0, 1); got {public_fraction!r}")
        comp.public_fraction = float(public_fraction)
    y = load_blob(session, "competition", comp.id, "labels").astype(np.int64)
    codes = _draw_split(comp, kind, y, groups)
    session.execute(
        delete(Blob).where(Blob.owner_type == "competition", Blob.owner_id == comp.id, Blob.name == "groups")
    )
    if codes is not None:
        save_blob(session, "competition", comp.id, "groups", codes)
    session.commit()
    return hidden_part(session, comp)[1]


def edit_competition(session: Session, comp: Competition, changes: dict[str, Any]) -> Competition:
    """Change the title, description, deadline (only to a future time) or daily cap."""
    if "deadline" in changes:
        deadline = aware(changes["deadline"])
        if deadline <= utcnow():
            raise ProblemError(422, "the deadline must be in the future", field="deadline", reason="in the past")
        comp.deadline = deadline
    for key in ("title", "description", "daily_cap"):
        if key in changes:
            setattr(comp, key, changes[key])
    session.commit()
    return comp


def delete_competition(session: Session, comp: Competition) -> None:
    """Delete a competition with its participants, submissions, runs and every array they own."""
    runs = session.execute(
        select(AggregationRun.id, AggregationRun.state)
        .where(AggregationRun.competition_id == comp.id)
        .order_by(AggregationRun.created_at.desc(), AggregationRun.id.desc())
    ).all()
    if runs and runs[0].state in ("queued", "running"):  # the latest run
        raise ProblemError(
            409,
            "an aggregation run is in progress; cancel its job first",
            field="competition_id",
            reason="run in progress",
            code="busy",
        )
    sub_ids = list(session.scalars(select(Submission.id).where(Submission.competition_id == comp.id)))
    run_ids = [r.id for r in runs]
    for owner_type, owners in (
        ("competition", [comp.id]),
        ("cmp_file", [comp.id]),
        ("submission", sub_ids),
        ("aggregation", run_ids),
    ):
        if owners:
            session.execute(delete(Blob).where(Blob.owner_type == owner_type, Blob.owner_id.in_(owners)))
    for model in (Submission, AggregationRun, Invitation, Participant):
        session.execute(delete(model).where(model.competition_id == comp.id))
    session.delete(comp)
    session.commit()


FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def put_file(session: Session, comp: Competition, name: str, data: bytes) -> dict[str, Any]:
    """Publish a data file (training data, test features...) under ``name``, replacing one of that name."""
    if not FILE_NAME.match(name):
        raise ProblemError(
            422, "a file name is 1..100 letters, digits, '.', '_' or '-'", field="name", reason="bad file name"
        )
    if not data:
        raise ProblemError(422, "the file is empty", field="file", reason="empty")
    session.execute(delete(Blob).where(Blob.owner_type == "cmp_file", Blob.owner_id == comp.id, Blob.name == name))
    session.add(Blob(owner_type="cmp_file", owner_id=comp.id, name=name, dtype="bytes", shape=[len(data)], data=data))
    files = list((comp.extra or {}).get("files", []))
    comp.extra = {**(comp.extra or {}), "files": sorted(set(files) | {name})}
    session.commit()
    return {"name": name, "bytes": len(data)}


def list_files(session: Session, comp: Competition) -> list[dict[str, Any]]:
    rows = session.scalars(select(Blob).where(Blob.owner_type == "cmp_file", Blob.owner_id == comp.id))
    return sorted(({"name": b.name, "bytes": int(b.shape[0])} for b in rows), key=lambda f: f["name"])


def public_items(session: Session, comp: Competition) -> np.ndarray:
    """Which item ids are public (organiser only: the split itself)."""
    _, public = hidden_part(session, comp)
    return item_ids(session, comp)[public]


def get_competition(session: Session, comp_id: str) -> Competition:
    comp = session.get(Competition, comp_id)
    if comp is None:
        raise ProblemError(404, f"no competition {comp_id!r}", field="competition_id", reason="not found")
    return comp


def list_competitions(session: Session) -> list[Competition]:
    return list(session.scalars(select(Competition).order_by(Competition.created_at.desc(), Competition.id)))


def item_ids(session: Session, comp: Competition) -> np.ndarray:
    return load_blob(session, "competition", comp.id, "item_ids")


def hidden_part(session: Session, comp: Competition) -> tuple[np.ndarray, np.ndarray]:
    """(labels, public mask): the hidden part, for scoring only."""
    y = load_blob(session, "competition", comp.id, "labels").astype(np.int64)
    kind = comp.split_kind or "random"
    groups = load_blob(session, "competition", comp.id, "groups") if kind == "grouped" else None
    return y, split_mask(kind, comp.n_items, comp.public_fraction, comp.split_seed, labels=y, groups=groups)
