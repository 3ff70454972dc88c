"""/v1/arrays: upload a large array once (``.npy`` or Arrow IPC) and refer to it as ``{"array_id": ...}``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from sqlalchemy.orm import Session

from ..arrays import check_size, delete_blobs, from_arrow, from_npy, is_arrow, save_blob
from ..auth import Principal
from ..deps import DbSession, Reader, Writer
from ..errors import ProblemError
from ..fastjson import FastRoute
from ..models import Blob, new_id
from ..schemas import ArrayInfo
from ..tenancy import check_owner
from .common import problem_responses

router = APIRouter(prefix="/v1/arrays", tags=["arrays"], route_class=FastRoute)
P = problem_responses(400, 401, 403, 404, 413, 415, 422)

NPY_TYPES = ("application/x-npy", "application/octet-stream", "application/npy")
ARROW_STREAM = "application/vnd.apache.arrow.stream"
ARROW_FILE = "application/vnd.apache.arrow.file"
NPY_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/x-npy": {"schema": {"type": "string", "format": "binary"}},
            "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
            ARROW_STREAM: {"schema": {"type": "string", "format": "binary"}},
            ARROW_FILE: {"schema": {"type": "string", "format": "binary"}},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {"file": {"type": "string", "format": "binary"}},
                    "required": ["file"],
                }
            },
        },
    }
}


def _info(b: Blob) -> dict[str, Any]:
    n = 1
    for s in b.shape:
        n *= s
    return {
        "id": b.owner_id,
        "dtype": b.dtype,
        "shape": b.shape,
        "nbytes": len(b.data),
        "links": {"self": f"/v1/arrays/{b.owner_id}", "data": f"/v1/arrays/{b.owner_id}/data"},
    }


@router.post(
    "",
    status_code=201,
    response_model=ArrayInfo,
    responses=P,
    openapi_extra=NPY_BODY,
    summary="Upload an array (.npy or Arrow IPC)",
)
async def upload(request: Request, me: Writer) -> Any:
    """The body is the ``.npy`` file (``application/x-npy`` or ``application/octet-stream``), an Arrow
    IPC stream or file with one column (``application/vnd.apache.arrow.stream`` or ``.file``), or a
    multipart form with a ``file`` part holding either (told apart by their magic bytes). Object
    arrays are refused (no pickles); the same checks and errors apply to both formats."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype in NPY_TYPES or ctype in (ARROW_STREAM, ARROW_FILE):
        data = await request.body()
    elif ctype == "multipart/form-data":
        form = await request.form()
        f = form.get("file")
        if f is None or isinstance(f, str):
            raise ProblemError(
                422, "file: a multipart 'file' part with the .npy bytes is required", field="file", reason="missing"
            )
        data = await f.read()
    else:
        raise ProblemError(
            415,
            f"send the .npy bytes as application/x-npy, application/octet-stream or multipart/form-data, or "
            f"Arrow IPC as {ARROW_STREAM} or {ARROW_FILE}; got {ctype or 'nothing'}",
            field="content-type",
            reason="unsupported media type",
            code="unsupported-media-type",
        )
    arrow = ctype in (ARROW_STREAM, ARROW_FILE) or (ctype == "multipart/form-data" and is_arrow(data))
    arr = from_arrow(data, "body") if arrow else from_npy(data, "body")
    check_size(arr.size, request.app.state.settings.max_array_elements, "body")
    aid = new_id("arr")

    def store():
        with request.app.state.db.sessions() as s:
            save_blob(s, "upload", aid, "data", arr, owner=me.owner)
            s.commit()
            return s.query(Blob).filter_by(owner_type="upload", owner_id=aid).one()

    import anyio

    b = await anyio.to_thread.run_sync(store)
    return Response(
        content=__import__("json").dumps(_info(b)),
        status_code=201,
        media_type="application/json",
        headers={"Location": f"/v1/arrays/{aid}"},
    )


def _get(session: Session, aid: str, me: Principal) -> Blob:
    b = session.query(Blob).filter_by(owner_type="upload", owner_id=aid).first()
    if b is None:
        raise ProblemError(404, f"no array {aid!r}", field="array_id", reason="not found", code="not-found")
    check_owner(me, b.owner, "array", aid)
    return b


@router.get("/{array_id}", response_model=ArrayInfo, responses=P, summary="An uploaded array's dtype and shape")
def info(array_id: str, session: DbSession, me: Reader) -> Any:
    return _info(_get(session, array_id, me))


@router.get(
    "/{array_id}/data",
    responses={200: {"content": {"application/x-npy": {}}}, **P},
    summary="An uploaded array's .npy bytes",
)
def data(array_id: str, session: DbSession, me: Reader) -> Response:
    return Response(_get(session, array_id, me).data, media_type="application/x-npy")


@router.delete("/{array_id}", status_code=204, responses=P, summary="Delete an uploaded array")
def delete(array_id: str, session: DbSession, me: Writer) -> Response:
    _get(session, array_id, me)
    delete_blobs(session, "upload", array_id)
    session.commit()
    return Response(status_code=204)
