"""Body size limit as a plain ASGI middleware: 413 problem+json above ``Settings.max_body_bytes``.

A declared ``Content-Length`` above the limit is refused before anything is read; a chunked body is
counted as it arrives and refused as soon as it passes the limit.
"""

from __future__ import annotations

import json

from .errors import PROBLEM, problem_body


async def send_problem(send, scope, status: int, detail: str, code: str, errors=None, extra_headers=()) -> None:
    """A problem+json answer from a middleware (``instance`` is the request's path)."""
    body = json.dumps(problem_body(status, detail, code=code, errors=errors, instance=scope.get("path"))).encode()
    headers = [(b"content-type", PROBLEM.encode()), (b"content-length", str(len(body)).encode()), *extra_headers]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def replay_body(body: bytes, receive):
    """An ASGI ``receive`` that hands the already-read ``body`` over once, then defers to ``receive``."""
    sent = False

    async def replay():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class BodyLimitMiddleware:
    def __init__(self, app, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
            return await self.app(scope, receive, send)
        length = None
        chunked = False
        for k, v in scope["headers"]:
            if k == b"content-length":
                try:
                    length = int(v)
                except ValueError:
                    return await send_problem(send, scope, 400, "invalid Content-Length", "bad-request")
            elif k == b"transfer-encoding" and b"chunked" in v.lower():
                chunked = True
        too_big = f"request body exceeds the limit of {self.max_bytes} bytes"
        errors = [{"field": "body", "reason": f"larger than {self.max_bytes} bytes"}]
        if length is not None and length > self.max_bytes:
            return await send_problem(send, scope, 413, too_big, "too-large", errors, [(b"connection", b"close")])
        if length is None and chunked:
            chunks = []
            total = 0
            more = True
            while more:
                msg = await receive()
                if msg["type"] == "http.disconnect":
                    return
                chunk = msg.get("body", b"")
                total += len(chunk)
                if total > self.max_bytes:
                    return await send_problem(
                        send, scope, 413, too_big, "too-large", errors, [(b"connection", b"close")]
                    )
                chunks.append(chunk)
                more = msg.get("more_body", False)
            return await self.app(scope, replay_body(b"".join(chunks), receive), send)
        return await self.app(scope, receive, send)
