"""``Idempotency-Key`` on POST: a retried request gets the first answer again, not a second resource.

A plain ASGI middleware (no cost for requests without the header). For a POST carrying
``Idempotency-Key``:

* first time: a ``pending`` record is stored under ``(caller, key)`` (the caller being the hash of the
  presented API key, or "anonymous") with a lease of ``Settings.idempotency_lease_seconds``, renewed
  while the request runs; the request runs; its answer (status, headers, body) is stored and the record
  marked ``done`` *before* the answer is sent, so an acknowledged write always replays;
* the resource a request creates (pool, market, upload, job, API key, organisation; a competition,
  a batch of invitations, a participant, a submission, an aggregation run) or trains (a market's
  inline training) is named on its record by the same transaction that writes it (a flush hook,
  :func:`install`, with the URLs of :data:`CREATED`): after a crash between that commit and the
  answer, the retry finds the resource and answers with it (its current representation by an
  internal GET, the first status) instead of creating or training again; when the crash came before
  the commit, nothing was written and the retry runs afresh. Secrets shown once are not in such a
  replay: an API key's secret, invitation codes, a participant's token (revoke the key or the
  unused invitations; a participant so replayed joins again under another name). Keyed requests that
  store nothing (aggregate, equilibrium, inline solve, predict) are safe to run again;
* the same key again with the same method, path and body: the stored answer is replayed with
  ``Idempotent-Replayed: true`` (so a retried create returns the same pool id, the same job);
* the same key with a different request: 422; while the first request still holds its lease: 409
  (``Retry-After``); once the lease has ended (its server died or was restarted) the retry takes the
  key over.

Answers with status 5xx, 401, 403 or 409 are not stored (the retry runs afresh). Records expire after
``Settings.idempotency_ttl_hours``.
"""

from __future__ import annotations

import hashlib
import random
from contextvars import ContextVar
from datetime import timedelta
from typing import Any

import anyio
from sqlalchemy import delete, event, inspect, or_, select, update
from sqlalchemy.exc import IntegrityError

from .competitions.models import AggregationRun, Competition, Invitation, Participant, Submission
from .db import Database
from .limits import replay_body, send_problem
from .models import ApiKey, Blob, IdempotencyRecord, JobRow, MarketRow, Organisation, PoolRow, aware, utcnow

NOT_STORED = {401, 403, 409, 429}

#: the record of the request running in this context (read by the flush hook)
_RECORD: ContextVar[int | None] = ContextVar("agora_idempotency_record", default=None)


#: for each kind of row a request may create: the URL of what it answers with (a template on the row
#: ``o``), the status and a priority (the highest among the rows of one request names the record)
CREATED: dict[type, tuple[str, int, int]] = {
    AggregationRun: ("/v1/competitions/{o.competition_id}/aggregations/{o.id}", 202, 5),
    JobRow: ("/v1/jobs/{o.id}", 202, 4),
    PoolRow: ("/v1/pools/{o.id}", 201, 3),
    MarketRow: ("/v1/markets/{o.id}", 201, 3),
    ApiKey: ("/v1/keys/{o.id}", 201, 3),
    Organisation: ("/v1/organisations/{o.id}", 201, 3),
    Competition: ("/v1/competitions/{o.id}", 201, 3),
    Participant: ("/v1/competitions/{o.competition_id}/participants/{o.id}", 201, 3),
    Submission: ("/v1/competitions/{o.competition_id}/submissions/{o.id}", 201, 3),
    Invitation: ("/v1/competitions/{o.competition_id}/invitations?batch={o.batch}", 201, 3),
}


def _created(new: Any, dirty: Any = ()) -> tuple[int, str, int] | None:
    """(priority, URL, status) of what a request writes, among the rows of one flush: a competition's
    aggregation run (202), else a job (202), else a created pool, market, API key, organisation,
    competition, participant, submission or batch of invitations (201), else an upload (201), else a
    market whose training was stored (``n_trained`` changed: an inline training, 200)."""
    best = None
    for o in new:
        if type(o) in CREATED:
            url, status, priority = CREATED[type(o)]
            cand = (priority, url.format(o=o), status)
        elif isinstance(o, Blob) and o.owner_type == "upload":
            cand = (2, f"/v1/arrays/{o.owner_id}", 201)
        else:
            continue
        if best is None or cand[0] > best[0]:
            best = cand
    if best is None:
        for o in dirty:
            if isinstance(o, MarketRow) and inspect(o).attrs.n_trained.history.has_changes():
                return (1, f"/v1/markets/{o.id}", 200)
    return best


def install(db: Database) -> None:
    """Name the created resource on the running request's record, inside the writing transaction."""

    @event.listens_for(db.sessions, "after_flush")
    def _mark(session, _ctx) -> None:
        rid = _RECORD.get()
        if rid is None:
            return
        found = _created(session.new, session.dirty)
        if found is None or found[0] <= session.info.get("idem_priority", 0):
            return
        session.info["idem_priority"] = found[0]
        session.connection().execute(
            update(IdempotencyRecord).where(IdempotencyRecord.id == rid).values(resource=found[1], status_code=found[2])
        )


def _owner(headers: dict[bytes, bytes]) -> str:
    auth = headers.get(b"authorization") or headers.get(b"x-api-key") or b""
    if auth.lower().startswith(b"bearer "):
        auth = auth[7:].strip()
    return hashlib.sha256(auth.strip()).hexdigest() if auth.strip() else "anonymous"


class IdempotencyMiddleware:
    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        key_b = headers.get(b"idempotency-key")
        if key_b is None:
            return await self.app(scope, receive, send)
        key = key_b.decode("latin-1").strip()
        if not key or len(key) > 255:
            return await send_problem(
                send,
                scope,
                400,
                "Idempotency-Key must be 1..255 characters",
                "bad-idempotency-key",
                [{"field": "Idempotency-Key", "reason": "must be 1..255 characters"}],
            )
        # read the whole body (its size was already bounded by the body limit middleware)
        chunks = []
        more = True
        while more:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return
            chunks.append(msg.get("body", b""))
            more = msg.get("more_body", False)
        body = b"".join(chunks)
        owner = _owner(headers)
        path = scope["path"] + ("?" + scope["query_string"].decode("latin-1") if scope.get("query_string") else "")
        h = hashlib.sha256(b"POST\n" + path.encode() + b"\n" + body).hexdigest()
        db = scope["app"].state.db
        ttl = timedelta(hours=scope["app"].state.settings.idempotency_ttl_hours)
        lease = timedelta(seconds=scope["app"].state.settings.idempotency_lease_seconds)

        def claim():
            with db.sessions() as s:
                if random.random() < 0.01:
                    s.execute(delete(IdempotencyRecord).where(IdempotencyRecord.created_at < utcnow() - ttl))
                    s.commit()
                rec = IdempotencyRecord(
                    owner=owner,
                    key=key,
                    method="POST",
                    path=path,
                    request_hash=h,
                    state="pending",
                    lease_until=utcnow() + lease,
                )
                s.add(rec)
                try:
                    s.commit()
                    return "new", rec.id, None
                except IntegrityError:
                    s.rollback()
                old = s.scalars(
                    select(IdempotencyRecord).where(IdempotencyRecord.owner == owner, IdempotencyRecord.key == key)
                ).first()
                if old is None:  # expired and deleted meanwhile
                    return "retry", None, None
                if old.created_at is not None and aware(old.created_at) < utcnow() - ttl:
                    s.delete(old)
                    s.commit()
                    return "retry", None, None
                if old.request_hash != h:
                    return "mismatch", old.id, None
                if old.state != "done":
                    # a lease that has ended means its server died: take the key over (one winner)
                    now = utcnow()
                    took = s.execute(
                        update(IdempotencyRecord)
                        .where(
                            IdempotencyRecord.id == old.id,
                            IdempotencyRecord.state == "pending",
                            or_(IdempotencyRecord.lease_until.is_(None), IdempotencyRecord.lease_until < now),
                        )
                        .values(lease_until=now + lease)
                        .execution_options(synchronize_session=False)
                    ).rowcount
                    s.commit()
                    if took != 1:
                        return "pending", old.id, None
                    return "takeover", old.id, (old.status_code, old.resource)
                return "done", old.id, (old.status_code, old.headers, old.body)

        for _ in range(3):
            status, rec_id, stored = await anyio.to_thread.run_sync(claim)
            if status != "retry":
                break
        if status == "mismatch":
            return await send_problem(
                send,
                scope,
                422,
                "this Idempotency-Key was used with a different request",
                "idempotency-mismatch",
                [{"field": "Idempotency-Key", "reason": "already used with a different method, path or body"}],
            )
        if status == "pending":
            return await send_problem(
                send,
                scope,
                409,
                "a request with this Idempotency-Key is still being processed; retry later",
                "idempotency-in-progress",
                [{"field": "Idempotency-Key", "reason": "request in progress"}],
                [(b"retry-after", b"1")],
            )
        if status == "takeover":
            code, resource = stored
            if resource:  # the write committed before the crash: answer with what it created
                got = await self._get(scope, headers, resource)
                if got is not None:
                    hdrs = [*got[0], ("location", resource)]
                    await anyio.to_thread.run_sync(self._store, db, rec_id, code, hdrs, got[1])
                    status, stored = "done", (code, hdrs, got[1])
        if status == "done":
            code, hdrs, payload = stored
            raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in (hdrs or [])]
            raw.append((b"idempotent-replayed", b"true"))
            await send({"type": "http.response.start", "status": code, "headers": raw})
            await send({"type": "http.response.body", "body": payload or b""})
            return

        captured: dict[str, Any] = {"status": 500, "headers": [], "body": []}

        async def capture(message):
            # held back until the record is stored: an answer the client sees always replays
            if message["type"] == "http.response.start":
                captured["status"] = message["status"]
                captured["headers"] = [
                    (k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", [])
                ]
            elif message["type"] == "http.response.body":
                captured["body"].append(message.get("body", b""))

        def finish(keep: bool):
            with db.sessions() as s:
                rec = s.get(IdempotencyRecord, rec_id)
                if rec is None:
                    return
                if keep:
                    rec.state = "done"
                    rec.status_code = captured["status"]
                    rec.headers = [list(x) for x in captured["headers"]]
                    rec.body = b"".join(captured["body"])
                    rec.lease_until = None
                else:
                    s.delete(rec)
                s.commit()

        def renew():
            with db.sessions() as s:
                s.execute(
                    update(IdempotencyRecord)
                    .where(IdempotencyRecord.id == rec_id, IdempotencyRecord.state == "pending")
                    .values(lease_until=utcnow() + lease)
                    .execution_options(synchronize_session=False)
                )
                s.commit()

        async def keep_lease():
            while True:
                await anyio.sleep(lease.total_seconds() / 3)
                await anyio.to_thread.run_sync(renew)

        token = _RECORD.set(rec_id)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(keep_lease)
                try:
                    await self.app(scope, replay_body(body, receive), capture)
                finally:
                    tg.cancel_scope.cancel()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(finish, False)
            raise
        finally:
            _RECORD.reset(token)
        keep = captured["status"] < 500 and captured["status"] not in NOT_STORED
        await anyio.to_thread.run_sync(finish, keep)
        raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in captured["headers"]]
        await send({"type": "http.response.start", "status": captured["status"], "headers": raw})
        await send({"type": "http.response.body", "body": b"".join(captured["body"])})

    async def _get(self, scope, headers: dict[bytes, bytes], url: str) -> tuple[list[tuple[str, str]], bytes] | None:
        """The current representation of ``url`` (a GET as the same caller), or None if it is gone."""
        keep = {b"authorization", b"x-api-key", b"host", b"accept"}
        path, _, query = url.partition("?")
        sub = {
            **scope,
            "method": "GET",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "headers": [(k, v) for k, v in headers.items() if k in keep],
        }
        out: dict[str, Any] = {"status": 500, "headers": [], "body": []}

        async def recv():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def snd(message):
            if message["type"] == "http.response.start":
                out["status"] = message["status"]
                out["headers"] = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", [])]
            elif message["type"] == "http.response.body":
                out["body"].append(message.get("body", b""))

        await self.app(sub, recv, snd)
        return (out["headers"], b"".join(out["body"])) if out["status"] == 200 else None

    @staticmethod
    def _store(db: Database, rec_id: int, code: int, hdrs: list[tuple[str, str]], body: bytes) -> None:
        with db.sessions() as s:
            rec = s.get(IdempotencyRecord, rec_id)
            if rec is not None:
                rec.state, rec.status_code, rec.body, rec.lease_until = "done", code, body, None
                rec.headers = [list(x) for x in hdrs]
                s.commit()
