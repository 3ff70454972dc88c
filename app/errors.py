"""Errors as RFC 9457 problem details (``application/problem+json``).

Every 4xx names the field and the reason: ``{"type", "title", "status", "detail", "errors": [{"field",
"reason", ...}]}``. The library's one input error, :class:`solvers.errors.InputError` (raised by the
validator, the estimators, the markets and the solvers, and by the service on bad input), becomes a
422 whose ``errors`` is its :meth:`~solvers.errors.InputError.to_dict`; a plain ``ValueError`` or
``TypeError`` from the library goes through :func:`library_error`. Malformed JSON is 400, oversize
bodies 413. Anything unexpected is logged with its traceback and answered with a 500 problem body
that leaks nothing.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from solvers.errors import InputError

log = logging.getLogger("agora.api")

PROBLEM = "application/problem+json"
TYPE_BASE = "https://agora.invalid/problems/"

_TITLES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    422: "Unprocessable Content",
    500: "Internal Server Error",
}


class ProblemError(Exception):
    """Raise anywhere in a route to answer with a problem body."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        field: str | None = None,
        reason: str | None = None,
        code: str | None = None,
        errors: list[dict[str, Any]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.code = code or _TITLES.get(status, "error").lower().replace(" ", "-")
        self.errors = (
            errors if errors is not None else ([{"field": field, "reason": reason or detail}] if field else [])
        )
        self.headers = headers or {}

    def response(self, instance: str | None = None) -> JSONResponse:
        """This problem as an ``application/problem+json`` response about ``instance`` (a path)."""
        body = problem_body(self.status, self.detail, code=self.code, errors=self.errors, instance=instance)
        return JSONResponse(body, status_code=self.status, media_type=PROBLEM, headers=self.headers)


def unauthenticated(detail: str, reason: str, *, code: str = "unauthenticated") -> ProblemError:
    """401 on the ``authorization`` header: present a (valid) Bearer credential."""
    headers = {"WWW-Authenticate": "Bearer"}
    return ProblemError(401, detail, field="authorization", reason=reason, code=code, headers=headers)


def forbidden(detail: str, reason: str) -> ProblemError:
    """403 on the ``authorization`` header: the credential is valid but does not allow this."""
    return ProblemError(403, detail, field="authorization", reason=reason, code="forbidden")


_NUMPY_REPR = re.compile(r"np\.(?:float|int|uint|bool|complex|str)_?\d*\(([^()]*)\)")


def plain(text: str) -> str:
    """``text`` without NumPy scalar reprs: ``np.float64(-1.0)`` reads ``-1.0``."""
    return _NUMPY_REPR.sub(r"\1", text) if "np." in text else text


def _plain_errors(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: (plain(v) if isinstance(v, str) else v) for k, v in e.items()} for e in errors]


def problem_body(
    status: int,
    detail: str,
    *,
    code: str | None = None,
    errors: list[dict[str, Any]] | None = None,
    instance: str | None = None,
) -> dict[str, Any]:
    title = _TITLES.get(status, "Error")
    body: dict[str, Any] = {
        "type": TYPE_BASE + (code or title.lower().replace(" ", "-")),
        "title": title,
        "status": status,
        "detail": plain(detail),
    }
    if instance:
        body["instance"] = instance
    if errors:
        body["errors"] = _plain_errors(errors)
    return body


def input_problem(exc: InputError) -> ProblemError:
    """An :class:`~solvers.errors.InputError` as a 422 problem naming its field and location."""
    return ProblemError(422, str(exc), errors=[exc.to_dict()], code=exc.code)


def library_error(exc: Exception, field: str = "params") -> ProblemError:
    """A library error raised on a request's values, as a 422 problem.

    The library raises :class:`~solvers.errors.InputError`, which names its own field and location.
    Any other ``ValueError``/``TypeError`` (a wrong keyword argument, an option of the wrong type
    caught by Python itself) is reported under ``field``, the request part the caller passed them in;
    the message text is never parsed.
    """
    if isinstance(exc, InputError):
        return input_problem(exc)
    msg = str(exc) or exc.__class__.__name__
    return ProblemError(422, msg, errors=[{"field": field, "reason": msg}], code="invalid-parameters")


def _loc_to_field(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    return ".".join(parts) or (str(loc[0]) if loc else "body")


def install(app: FastAPI) -> None:
    """Register the problem+json handlers on ``app``."""

    @app.exception_handler(ProblemError)
    async def _problem(request: Request, exc: ProblemError):
        return exc.response(request.url.path)

    @app.exception_handler(InputError)
    async def _input(request: Request, exc: InputError):
        return input_problem(exc).response(request.url.path)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError):
        errors = []
        status = 422
        for e in exc.errors():
            if e.get("type") == "json_invalid":  # loc is ("body", <character offset>)
                status = 400
                loc = tuple(e.get("loc", ()))
                pos = loc[1] if len(loc) > 1 and isinstance(loc[1], int) else None
                why = (e.get("ctx") or {}).get("error") or "not valid JSON"
                errors.append(
                    {"field": "body", "reason": f"malformed JSON: {why}", "code": "json_invalid", "position": pos}
                )
                continue
            errors.append(
                {
                    "field": _loc_to_field(tuple(e.get("loc", ()))),
                    "reason": e.get("msg", "invalid"),
                    "code": e.get("type", "invalid"),
                }
            )
        detail = (
            "malformed JSON body" if status == 400 else "; ".join(f"{x['field']}: {x['reason']}" for x in errors[:5])
        )
        code = "malformed-json" if status == 400 else "validation-error"
        return ProblemError(status, detail, code=code, errors=errors).response(request.url.path)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException):
        detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        return ProblemError(exc.status_code, detail, headers=getattr(exc, "headers", None)).response(request.url.path)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception):
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return ProblemError(500, "internal error; it has been logged", code="internal").response(request.url.path)
