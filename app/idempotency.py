"""``Idempotency-Key`` on POST: a retried request gets the first answer again, not a second resource.

A plain ASGI middleware (no cost for requests without the header). For a POST carrying
``Idempotency-Key``:

* first time: the request runs and its answer (status, headers, body) is stored under
  ``(caller, key)``, the caller being the hash of the presented API key (or "anonymous");
* the same key again with the same method, path and body: the stored answer is replayed with
  ``Idempotent-Replayed: true`` (so a retried create returns the same pool id, the same job);
* the same key with a different request: 422; while the first request is still running: 409.

Answers with status 5xx, 401, 403 or 409 are not stored (the retry runs afresh). Records expire after
``Settings.idempotency_ttl_hours``.
"""

from __future__ import annotations

import hashlib
import random
from datetime import timedelta

import anyio
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError

from .limits import replay_body, send_problem
from .models import IdempotencyRecord, aware, utcnow

NOT_STORED = {401, 403, 409, 429}


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

        def claim():
            with db.sessions() as s:
                if random.random() < 0.01:
                    s.execute(delete(IdempotencyRecord).where(IdempotencyRecord.created_at < utcnow() - ttl))
                    s.commit()
                rec = IdempotencyRecord(owner=owner, key=key, method="POST", path=path, request_hash=h, state="pending")
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
                    return "pending", old.id, None
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
        if status == "done":
            code, hdrs, payload = stored
            raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in (hdrs or [])]
            raw.append((b"idempotent-replayed", b"true"))
            await send({"type": "http.response.start", "status": code, "headers": raw})
            await send({"type": "http.response.body", "body": payload or b""})
            return

        captured = {"status": 500, "headers": [], "body": []}

        async def capture(message):
            if message["type"] == "http.response.start":
                captured["status"] = message["status"]
                captured["headers"] = [
                    (k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", [])
                ]
            elif message["type"] == "http.response.body":
                captured["body"].append(message.get("body", b""))
            await send(message)

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
                else:
                    s.delete(rec)
                s.commit()

        try:
            await self.app(scope, replay_body(body, receive), capture)
        except BaseException:
            await anyio.to_thread.run_sync(finish, False)
            raise
        keep = captured["status"] < 500 and captured["status"] not in NOT_STORED
        await anyio.to_thread.run_sync(finish, keep)
