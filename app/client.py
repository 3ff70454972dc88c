"""A typed Python client for the Agora REST service (httpx, synchronous).

    from app.client import AgoraClient
    with AgoraClient("http://127.0.0.1:8000", api_key="agora_...") as c:
        agg = c.aggregate(log_probs, method="log")                 # (n_items, n_classes) ndarray
        pool = c.create_pool("renyi", lp_val, y_val, gamma=[0.01, 0.1, 1.0])
        out = c.predict(pool["id"], lp_test)

Arrays go out as ``.npy`` (base64 inside JSON, or uploaded once with :meth:`upload_array` and
referenced by id) and come back as NumPy arrays. Errors raise :class:`AgoraError` carrying the
problem+json body. Creating calls send an ``Idempotency-Key`` (a fresh UUID unless given) and
retry on connection errors and 5xx with the same key, so a retry never creates twice. Calls that
may become background jobs wait for the job by default (``wait=True``).
"""

from __future__ import annotations

import base64
import io
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, Literal, TypedDict, Unpack

import httpx
import numpy as np

Kind = Literal["probs", "log_probs"]


class AgoraError(Exception):
    """An error answer from the service: ``status`` and the RFC 9457 ``problem`` body."""

    def __init__(self, status: int, problem: dict[str, Any]) -> None:
        self.status = status
        self.problem = problem
        self.errors: list[dict[str, Any]] = problem.get("errors") or []
        super().__init__(f"{status}: {problem.get('detail', problem)}")


class JobFailed(AgoraError):
    """A background job ended ``failed`` or ``cancelled``."""


class Job(TypedDict, total=False):
    id: str
    kind: str
    state: str
    progress: float
    percent: float
    eta_seconds: float | None
    result: dict[str, Any] | None
    error: dict[str, Any] | None


class JobOptions(TypedDict, total=False):
    """How a call the server may run as a background job runs: ``background`` (``None``: the server
    decides by size), ``wait`` for the job (default ``True``), an ``idempotency_key`` for retries."""

    background: bool | None
    wait: bool
    idempotency_key: str | None


def npy_b64(arr: Any) -> dict[str, str]:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(np.asarray(arr)), allow_pickle=False)
    return {"npy": base64.b64encode(buf.getvalue()).decode("ascii")}


def _array_out(value: Any) -> np.ndarray:
    if isinstance(value, dict) and "npy" in value:
        return np.load(io.BytesIO(base64.b64decode(value["npy"])), allow_pickle=False)
    try:
        return np.asarray(value, dtype=np.float64)
    except TypeError:  # nulls stand for -inf log-probabilities
        arr = np.asarray(value, dtype=object)
        arr[np.equal(arr, None)] = -np.inf
        return arr.astype(np.float64)


def _array_in(value: Any) -> Any:
    if isinstance(value, str) and value.startswith("arr_"):
        return {"array_id": value}
    if isinstance(value, dict):
        return value
    return npy_b64(value)


def _plain(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


class AgoraClient:
    """Synchronous client. ``api_key`` defaults to none (anonymous scopes only)."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        api_key: str | None = None,
        timeout: float = 120.0,
        retries: int = 3,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, transport=transport)
        self.retries = retries

    # -- plumbing ---------------------------------------------------------------------------------------
    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> AgoraClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
        idempotent: bool = False,
    ) -> httpx.Response:
        headers = dict(headers or {})
        if method == "POST" and idempotent:
            headers.setdefault("Idempotency-Key", str(uuid.uuid4()))
        attempts = self.retries if (method in ("GET", "DELETE") or "Idempotency-Key" in headers) else 1
        last: Exception | None = None
        for i in range(max(1, attempts)):
            try:
                r = self._http.request(method, path, json=json, params=params, content=content, headers=headers)
            except httpx.TransportError as exc:
                last = exc
                time.sleep(0.2 * 2**i)
                continue
            if (r.status_code >= 500 or r.status_code == 409 and "Idempotency-Key" in headers) and i + 1 < attempts:
                time.sleep(0.2 * 2**i)
                continue
            if r.status_code >= 400:
                try:
                    body = r.json()
                except ValueError:
                    body = {"detail": r.text}
                raise AgoraError(r.status_code, body)
            return r
        raise last if last is not None else RuntimeError("unreachable")

    # -- service ----------------------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        return self._request("GET", "/health").json()

    def upload_array(self, arr: Any) -> str:
        """Upload an array once (``.npy``); returns its id, usable wherever an array is expected."""
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(np.asarray(arr)), allow_pickle=False)
        r = self._request(
            "POST", "/v1/arrays", content=buf.getvalue(), headers={"Content-Type": "application/x-npy"}, idempotent=True
        )
        return r.json()["id"]

    def download_array(self, array_id: str) -> np.ndarray:
        return np.load(io.BytesIO(self._request("GET", f"/v1/arrays/{array_id}/data").content), allow_pickle=False)

    def aggregate(
        self,
        predictions: Any,
        *,
        method: str = "average",
        kind: Kind = "log_probs",
        output: Kind | None = None,
        info: bool = False,
        **params: Any,
    ) -> np.ndarray | tuple[np.ndarray, dict[str, Any]]:
        """Stateless pooling; returns the ``(n_items, n_classes)`` aggregate (and ``info`` if asked)."""
        params = {k: (np.asarray(v).tolist() if isinstance(v, np.ndarray) else v) for k, v in params.items()}
        body = {
            "method": method,
            "kind": kind,
            "predictions": _array_in(predictions),
            "params": params,
            "format": "npy",
        }
        if output:
            body["output"] = output
        d = self._request("POST", "/v1/aggregate", json=body).json()
        agg = _array_out(d["aggregate"])
        return (agg, d["info"]) if info else agg

    # -- jobs -------------------------------------------------------------------------------------------
    def get_job(self, job_id: str) -> Job:
        return self._request("GET", f"/v1/jobs/{job_id}").json()

    def cancel_job(self, job_id: str) -> Job:
        return self._request("POST", f"/v1/jobs/{job_id}/cancel").json()

    def wait_job(
        self,
        job_id: str,
        *,
        timeout: float = 3600.0,
        poll: float = 0.2,
        on_progress: Callable[[Job], None] | None = None,
    ) -> Job:
        """Poll until the job ends; returns it (whatever its final state)."""
        t0 = time.monotonic()
        while True:
            job = self.get_job(job_id)
            if on_progress is not None:
                on_progress(job)
            if job["state"] in ("succeeded", "failed", "cancelled"):
                return job
            if time.monotonic() - t0 > timeout:
                raise TimeoutError(f"job {job_id} still {job['state']} after {timeout} s")
            time.sleep(poll)

    def _finish(self, r: httpx.Response, wait: bool, fetch: Callable[[dict[str, Any]], Any]) -> Any:
        d = r.json()
        if r.status_code != 202:
            return d
        if not wait:
            return d
        job = self.wait_job(d["id"])
        if job["state"] != "succeeded":
            raise JobFailed(
                422 if job["state"] == "failed" else 409,
                {"detail": f"job {job['id']} {job['state']}", **(job.get("error") or {}), "job": job},
            )
        return fetch(job)

    def _start(self, path: str, body: dict[str, Any], job: JobOptions, fetch: Callable[[Job], Any]) -> Any:
        """POST ``body`` (its ``None`` values left out) to ``path``, which may answer 202 with a job;
        returns ``fetch(job)`` once the job has succeeded (or the 202 body with ``wait=False``)."""
        key = job.get("idempotency_key")
        body = {k: v for k, v in {**body, "background": job.get("background")}.items() if v is not None}
        hdr = {"Idempotency-Key": key} if key else None
        r = self._request("POST", path, json=body, headers=hdr, idempotent=True)
        return self._finish(r, job.get("wait", True), fetch)

    def _pages(self, path: str, page_size: int) -> Iterator[dict[str, Any]]:
        """Every item of the list at ``path``, page after page."""
        cursor = None
        while True:
            params: dict[str, Any] = {"limit": page_size, **({"cursor": cursor} if cursor else {})}
            d = self._request("GET", path, params=params).json()
            yield from d["items"]
            cursor = d["next_cursor"]
            if not cursor:
                return

    # -- pools ------------------------------------------------------------------------------------------
    def create_pool(
        self,
        method: str,
        predictions: Any,
        labels: Any,
        *,
        kind: Kind = "log_probs",
        gamma: Any = None,
        solver: str | None = None,
        name: str = "",
        params: dict[str, Any] | None = None,
        posterior: dict[str, Any] | None = None,
        **job: Unpack[JobOptions],
    ) -> dict[str, Any]:
        """Fit a pool; returns the pool (waiting for its job if the server ran it in the background).
        ``posterior``: also sample the posterior over the weights of a log, linear or Rényi pool
        (the options of ``PosteriorOptions``: ``samples``, ``alpha``, ``level``, ``method``, ``step``,
        ``seed``, ``options``; ``{}`` for the defaults), always a background job; read it with
        :meth:`weight_posterior`."""
        body: dict[str, Any] = {
            "method": method,
            "kind": kind,
            "name": name,
            "predictions": _array_in(predictions),
            "labels": _array_in(np.asarray(labels) if not isinstance(labels, str) else labels),
            "params": params or {},
            "gamma": np.asarray(gamma).tolist() if isinstance(gamma, np.ndarray) else gamma,
            "solver": solver,
            "posterior": posterior,
        }
        return self._start("/v1/pools", body, job, lambda done: self.get_pool(done["result"]["pool_id"]))

    def get_pool(self, pool_id: str) -> dict[str, Any]:
        return self._request("GET", f"/v1/pools/{pool_id}").json()

    def weight_posterior(self, pool: str | dict[str, Any]) -> dict[str, Any]:
        """The weight posterior of a pool fitted with ``posterior`` (its id or its view): ``mean``
        ``(n_agents,)`` and ``intervals`` ``(n_agents, 2)`` (equal-tailed, at ``level``) of the weights,
        ``log_loss_interval`` ``(2,)`` of the aggregate's mean log loss, as arrays; the other entries
        (``level``, ``n_draws``, ``ess``, ``method``, ...) as the server gives them."""
        view = self.get_pool(pool) if isinstance(pool, str) else pool
        post = view.get("posterior")
        if not post:
            raise ValueError(f"pool {view['id']} was fitted without a posterior")
        arrays = ("mean", "intervals", "log_loss_interval")
        return post | {k: np.asarray(post[k], dtype=float) for k in arrays}

    def list_pools(self, *, page_size: int = 100) -> Iterator[dict[str, Any]]:
        """Every pool, newest first (follows the cursors)."""
        return self._pages("/v1/pools", page_size)

    def predict(
        self,
        pool_id: str,
        predictions: Any,
        *,
        kind: Kind = "log_probs",
        output: Kind = "log_probs",
        labels: Any = None,
        posterior_predictive: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, dict[str, Any]]:
        """Pool new predictions with a stored pool; with ``labels`` also returns the metrics;
        ``posterior_predictive``: with the posterior-predictive aggregate of a pool fitted with
        ``posterior``."""
        body: dict[str, Any] = {"kind": kind, "predictions": _array_in(predictions), "output": output, "format": "npy"}
        if posterior_predictive:
            body["posterior_predictive"] = True
        if labels is not None:
            body["labels"] = _array_in(np.asarray(labels))
        d = self._request("POST", f"/v1/pools/{pool_id}/predict", json=body).json()
        agg = _array_out(d["aggregate"])
        return (agg, d["metrics"]) if labels is not None else agg

    def delete_pool(self, pool_id: str) -> None:
        self._request("DELETE", f"/v1/pools/{pool_id}")

    # -- markets ----------------------------------------------------------------------------------------
    def equilibrium(
        self,
        predictions: Any,
        *,
        kind: Kind = "log_probs",
        utilities: Any = "log",
        wealth: Any = None,
        method: str = "auto",
        output: Kind = "log_probs",
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Stateless market clearing: returns the ``(n_items, n_classes)`` prices and the checks."""
        body: dict[str, Any] = {
            "kind": kind,
            "predictions": _array_in(predictions),
            "utilities": _plain(utilities),
            "method": method,
            "output": output,
            "format": "npy",
        }
        if wealth is not None:
            body["wealth"] = np.asarray(wealth, dtype=float).tolist()
        d = self._request("POST", "/v1/markets/equilibrium", json=body).json()
        return _array_out(d["prices"]), d["summary"]

    def create_market(
        self,
        n_agents: int,
        *,
        utilities: Any = "log",
        wealth: Any = None,
        name: str = "",
        idempotency_key: str | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """A market of ``n_agents`` agents; ``options``: mode, batch_size, max_epochs, wealth_tol, tol, method, floor."""
        body: dict[str, Any] = {"n_agents": n_agents, "utilities": _plain(utilities), "name": name, **options}
        if wealth is not None:
            body["wealth"] = np.asarray(wealth, dtype=float).tolist()
        hdr = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._request("POST", "/v1/markets", json=body, headers=hdr, idempotent=True).json()

    def get_market(self, market_id: str) -> dict[str, Any]:
        return self._request("GET", f"/v1/markets/{market_id}").json()

    def train_market(
        self,
        market_id: str,
        predictions: Any,
        labels: Any,
        *,
        kind: Kind = "log_probs",
        mode: str | None = None,
        batch_size: int | None = None,
        max_epochs: int | None = None,
        **job: Unpack[JobOptions],
    ) -> dict[str, Any]:
        """Train from the current wealth; returns the market (after its job, if one was needed)."""
        body = {"kind": kind, "predictions": _array_in(predictions), "labels": _array_in(np.asarray(labels))}
        body |= {"mode": mode, "batch_size": batch_size, "max_epochs": max_epochs}
        return self._start(f"/v1/markets/{market_id}/train", body, job, lambda done: self.get_market(market_id))

    def market_predict(
        self, market_id: str, predictions: Any, *, kind: Kind = "log_probs", output: Kind = "log_probs"
    ) -> np.ndarray:
        body = {"kind": kind, "predictions": _array_in(predictions), "output": output, "format": "npy"}
        return _array_out(self._request("POST", f"/v1/markets/{market_id}/predict", json=body).json()["prices"])

    def wealth_history(self, market_id: str) -> np.ndarray:
        """``(n_rows, n_agents)``: the initial wealth, then the wealth after every training epoch."""
        d = self._request("GET", f"/v1/markets/{market_id}/wealth", params={"format": "npy"}).json()
        return _array_out(d["history"])

    def list_markets(self, *, page_size: int = 100) -> Iterator[dict[str, Any]]:
        """Every market, newest first (follows the cursors)."""
        return self._pages("/v1/markets", page_size)

    def delete_market(self, market_id: str) -> None:
        self._request("DELETE", f"/v1/markets/{market_id}")

    # -- solve ------------------------------------------------------------------------------------------
    def solvers(self) -> list[dict[str, Any]]:
        return self._request("GET", "/v1/solvers").json()

    def problems(self) -> list[dict[str, Any]]:
        return self._request("GET", "/v1/solve/problems").json()

    def solve(
        self,
        problem: str,
        data: dict[str, Any],
        *,
        method: str = "auto",
        x0: Any = None,
        tol: float | None = None,
        max_iter: int | None = None,
        background: bool | None = None,
        wait: bool = True,
        **options: Any,
    ) -> dict[str, Any]:
        """Run ``method`` on ``problem`` built from ``data``; returns the result with its trace."""
        body: dict[str, Any] = {
            "problem": problem,
            "method": method,
            "options": options,
            "data": {k: (_array_in(v) if isinstance(v, np.ndarray) else v) for k, v in data.items()},
        }
        if x0 is not None:
            body["x0"] = np.asarray(x0, dtype=float).tolist()
        if tol is not None:
            body["tol"] = tol
        if max_iter is not None:
            body["max_iter"] = max_iter
        if background is not None:
            body["background"] = background
        r = self._request("POST", "/v1/solve", json=body, idempotent=background is True)
        out = self._finish(r, wait, lambda job: job["result"])
        if isinstance(out, dict) and "x" in out:
            out["x"] = np.asarray(out["x"], dtype=float)
        return out

    # -- competitions -----------------------------------------------------------------------------------
    def create_competition(
        self,
        title: str,
        n_classes: int,
        labels: Any,
        deadline: str,
        *,
        item_ids: Any = None,
        idempotency_key: str | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """Create a competition (organiser key). ``labels`` stay hidden; ``item_ids`` are exact
        64-bit integers (default ``0..n-1``); ``options``: ``description``, ``public_fraction``,
        ``daily_cap``, ``n_select``, ``join_policy``, ``score_mechanism``, ``score_step``, ``split``
        (``random``, ``stratified``, ``grouped``) and ``groups`` (one value per item, for ``grouped``)."""
        if options.get("groups") is not None:
            options["groups"] = np.asarray(options["groups"]).tolist()
        body: dict[str, Any] = {
            "title": title,
            "n_classes": n_classes,
            "labels": np.asarray(labels).astype(int).tolist(),
            "deadline": deadline,
            **options,
        }
        if item_ids is not None:
            body["item_ids"] = [int(i) for i in np.asarray(item_ids).tolist()]
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._request("POST", "/v1/competitions", json=body, headers=headers, idempotent=True).json()

    def get_competition(self, competition_id: str) -> dict[str, Any]:
        return self._request("GET", f"/v1/competitions/{competition_id}").json()

    def competition_items(self, competition_id: str) -> np.ndarray:
        """The test item ids to predict (exact int64)."""
        ids = self._request("GET", f"/v1/competitions/{competition_id}/items").json()["item_ids"]
        return np.array(ids, dtype=np.int64)

    def invite(self, competition_id: str, n: int = 1, note: str = "") -> list[str]:
        """``n`` single-use invitation codes (organiser); each is shown only here."""
        r = self._request("POST", f"/v1/competitions/{competition_id}/invitations", json={"n": n, "note": note})
        return [x["code"] for x in r.json()["items"]]

    def invitations(self, competition_id: str) -> list[dict[str, Any]]:
        """The invitations issued (organiser): note, whether used and by whom; never the codes."""
        return self._request("GET", f"/v1/competitions/{competition_id}/invitations").json()["items"]

    def revoke_invitation(self, competition_id: str, invitation_id: str) -> None:
        """Revoke an unused invitation (organiser); 409 once it was used."""
        self._request("DELETE", f"/v1/competitions/{competition_id}/invitations/{invitation_id}")

    def competition_split(self, competition_id: str) -> dict[str, Any]:
        """The public/private split (organiser): ``split`` (its kind), ``public_item_ids``, ``n_public``."""
        return self._request("GET", f"/v1/competitions/{competition_id}/split").json()

    def define_split(
        self, competition_id: str, split: str, *, public_fraction: float | None = None, groups: Any = None
    ) -> dict[str, Any]:
        """Draw the split again before the first submission (organiser): ``random``, ``stratified`` by
        label or ``grouped`` by ``groups`` (one value per item)."""
        body: dict[str, Any] = {"split": split}
        if public_fraction is not None:
            body["public_fraction"] = public_fraction
        if groups is not None:
            body["groups"] = np.asarray(groups).tolist()
        return self._request("PUT", f"/v1/competitions/{competition_id}/split", json=body).json()

    def join(self, competition_id: str, name: str, invitation: str | None = None) -> dict[str, Any]:
        """Join; the answer's ``token`` (shown once) is the participant's credential: use it as
        ``AgoraClient(url, api_key=token)``."""
        body: dict[str, Any] = {"name": name}
        if invitation is not None:
            body["invitation"] = invitation
        return self._request("POST", f"/v1/competitions/{competition_id}/participants", json=body).json()

    def submit(
        self,
        competition_id: str,
        item_ids: Any,
        predictions: Any,
        *,
        kind: Kind = "log_probs",
        description: str = "",
    ) -> dict[str, Any]:
        """Upload one row of ``predictions`` (``(n_items, n_classes)``) per item id (participant
        token), as ``.npz`` with exact int64 ids; returns the submission with its shown public score
        and the validation report. A rejected file raises :class:`AgoraError` whose ``problem``
        holds the report."""
        buf = io.BytesIO()
        np.savez(buf, ids=np.asarray(item_ids, dtype=np.int64), log_probs=np.asarray(predictions, dtype=np.float64))
        return self._request(
            "POST",
            f"/v1/competitions/{competition_id}/submissions",
            params={"kind": kind, "description": description},
            content=buf.getvalue(),
            headers={"Content-Type": "application/octet-stream"},
        ).json()

    def competition_submissions(self, competition_id: str) -> list[dict[str, Any]]:
        """Your submissions (participant) or all of them (organiser)."""
        return self._request("GET", f"/v1/competitions/{competition_id}/submissions").json()["items"]

    def select_submission(self, competition_id: str, submission_id: str, selected: bool = True) -> dict[str, Any]:
        path = f"/v1/competitions/{competition_id}/submissions/{submission_id}/selection"
        return self._request("POST", path, json={"selected": selected}).json()

    def withdraw_submission(self, competition_id: str, submission_id: str) -> dict[str, Any]:
        path = f"/v1/competitions/{competition_id}/submissions/{submission_id}/withdrawal"
        return self._request("POST", path).json()

    def exclude_submission(
        self, competition_id: str, submission_id: str, reason: str = "", *, excluded: bool = True
    ) -> dict[str, Any]:
        path = f"/v1/competitions/{competition_id}/submissions/{submission_id}/exclusion"
        return self._request("POST", path, json={"excluded": excluded, "reason": reason}).json()

    def leaderboard(self, competition_id: str, which: Literal["auto", "public", "private"] = "auto") -> dict[str, Any]:
        return self._request("GET", f"/v1/competitions/{competition_id}/leaderboard", params={"which": which}).json()

    def aggregate_competition(
        self,
        competition_id: str,
        *,
        methods: list[str] | None = None,
        etas: list[float] | None = None,
        market_max_epochs: int | None = None,
        wait: bool = True,
        timeout: float = 3600.0,
    ) -> dict[str, Any]:
        """Fit every pool on the submissions (organiser): a background job; with ``wait`` the
        finished run (Table 2.3 rows, γ sweep, credit, used and left-out submissions)."""
        given = {"methods": methods, "etas": etas, "market_max_epochs": market_max_epochs}
        body: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
        run = self._request("POST", f"/v1/competitions/{competition_id}/aggregations", json=body).json()
        if not wait:
            return run
        job = self.wait_job(run["job_id"], timeout=timeout)
        if job["state"] != "succeeded":
            raise JobFailed(409, {"detail": f"aggregation job {job['id']} {job['state']}", "job": job})
        return self.get_competition_aggregation(competition_id, run["id"])

    def get_competition_aggregation(self, competition_id: str, aggregation_id: str = "latest") -> dict[str, Any]:
        return self._request("GET", f"/v1/competitions/{competition_id}/aggregations/{aggregation_id}").json()

    def pin_aggregation(self, competition_id: str, aggregation_id: str | None) -> dict[str, Any]:
        """Pin the final run whose aggregate rows the leaderboard shows (``None`` unpins)."""
        path = f"/v1/competitions/{competition_id}/pinned-aggregation"
        return self._request("PUT", path, json={"aggregation_id": aggregation_id}).json()
