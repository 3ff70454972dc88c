"""Request and response bodies (pydantic), separate from the tables in :mod:`app.models`.

Arrays (:data:`ArrayIn`) are JSON nested lists, ``{"npy": base64}`` or ``{"array_id": "arr_..."}``
(see :mod:`app.arrays`). Responses carry arrays as nested lists by default, or as ``{"npy": ...}``
when the request says ``"format": "npy"``; JSON cannot hold ``-inf``, so a zero probability's log
appears as ``null``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat


class Body(BaseModel):
    """A request body: a field it does not declare is refused (422), never ignored."""

    model_config = ConfigDict(extra="forbid")


def examples(*bodies: dict[str, Any]) -> ConfigDict:
    """The ``model_config`` of a :class:`Body` showing ``bodies`` as the examples of its schema."""
    return ConfigDict(json_schema_extra={"examples": list(bodies)})


class NpyArray(Body):
    """An array as base64-encoded ``.npy`` bytes."""

    npy: str = Field(..., description="base64 of the bytes written by numpy.save (no pickles)")


class ArrayRef(Body):
    """An array uploaded earlier with ``POST /v1/arrays``."""

    array_id: str = Field(..., max_length=40)


ArrayIn = list[Any] | NpyArray | ArrayRef
Kind = Literal["probs", "log_probs"]
Format = Literal["json", "npy"]
PoolMethod = Literal["average", "topk", "bma", "power_bma", "linear", "log", "renyi"]
SampleWeight = Annotated[
    list[float] | None,
    Field(
        description="optional non-negative weight per item (scikit-learn's sample_weight: an integer weight counts "
        "the item that many times)"
    ),
]


class Predictions(Body):
    """``predictions`` ``(n_items, n_agents, n_classes)``: every agent's forecast of every item."""

    kind: Kind = Field("log_probs", description="what `predictions` holds")
    predictions: ArrayIn


class Pooling(Predictions):
    """Predictions to combine into one forecast per item, returned as ``output`` in ``format``."""

    output: Kind | None = Field(None, description="kind of the returned aggregate (default: the input kind)")
    format: Format = "json"


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    errors: list[dict[str, Any]] | None = None


class Health(BaseModel):
    status: Literal["ok"]
    version: str
    database: str
    pool_methods: list[str]
    solvers: list[str]
    markets: bool


# -- aggregate ---------------------------------------------------------------------------------------
class AggregateRequest(Pooling):
    """Stateless pooling: ``predictions`` ``(n_items, n_agents, n_classes)`` pooled by ``method``."""

    model_config = examples({"method": "log", "kind": "probs", "predictions": [[[0.7, 0.2, 0.1], [0.5, 0.3, 0.2]]]})
    method: PoolMethod = "average"
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="weights, gamma, lam, floor, k, alpha, agents, ranking, log_evidence (see docs/api.md)",
    )


class AggregateResponse(BaseModel):
    method: str
    kind: Kind
    aggregate: Any = Field(..., description="(n_items, n_classes)")
    info: dict[str, Any]


# -- pools -------------------------------------------------------------------------------------------
class PosteriorOptions(Body):
    """A posterior over the weights of a log, linear or Rényi pool (at its fitted γ and λ): a
    Dirichlet(``alpha``) prior on the simplex, sampled on softmax coordinates
    (``samplers.pool_weights``, ``evaluation.renyi_posterior``) from the fitted weights."""

    samples: int = Field(2000, ge=100, le=100_000, description="draws kept after a burn-in of a tenth")
    alpha: PositiveFloat | list[PositiveFloat] = Field(
        1.0, description="Dirichlet concentration (> 0): one for all agents or one each"
    )
    level: float = Field(0.95, gt=0, lt=1, description="credible level of the equal-tailed intervals")
    method: Literal["hmc", "mala", "mh", "sgld", "sghmc", "sgnht", "ccadl"] = "hmc"
    step: float | None = Field(None, gt=0, description="sampler step (default 0.5/sqrt(n_items))")
    seed: int = 0
    options: dict[str, Any] = Field(
        default_factory=dict, description="the sampler's own options (n_leapfrog, batch, friction...)"
    )


class PoolCreate(Predictions):
    """Fit a pool on validation predictions and labels."""

    model_config = examples(
        {
            "method": "log",
            "kind": "probs",
            "predictions": [[[0.7, 0.3], [0.6, 0.4]], [[0.2, 0.8], [0.4, 0.6]]],
            "labels": [0, 1],
        }
    )
    method: PoolMethod
    name: str = Field("", max_length=200)
    labels: ArrayIn
    sample_weight: SampleWeight = None
    gamma: float | list[float] | str | None = Field(
        None,
        description="Rényi γ: a number (fixed), a list of values to sweep (the best is kept, the curve is returned), or 'grid' / 'learn' / 'learn_per_agent'; a fixed γ per agent goes in params.gamma",
    )
    solver: str | None = Field(None, description="solver name for the weight fit ('auto' by default)")
    params: dict[str, Any] = Field(default_factory=dict, description="other estimator hyper-parameters")
    background: bool | None = Field(
        None, description="force (true) or forbid (false) a background job; default: by size"
    )
    posterior: PosteriorOptions | None = Field(
        None,
        description="log, linear and renyi pools (renyi: at its fitted gamma): also sample the posterior over the "
        "weights (always a background job)",
    )


class PoolView(BaseModel):
    id: str
    name: str
    method: str
    status: Literal["pending", "ready", "failed"]
    params: dict[str, Any]
    kind: Kind
    n_items: int
    n_agents: int
    n_classes: int
    weights: list[float] | None = None
    gamma: Any = None
    validation_curve: Any = None
    fit: dict[str, Any] = Field(
        default_factory=dict, description="solver result: method, fun, n_iter, converged, message, seconds, trace"
    )
    metrics: dict[str, Any] = Field(default_factory=dict)
    state: dict[str, Any] = Field(default_factory=dict, description="other learnt scalars")
    posterior: dict[str, Any] | None = Field(
        None,
        description="the weight posterior: mean and credible interval of every weight and of the mean log loss",
    )
    job_id: str | None = None
    error: dict[str, Any] | None = None
    created_at: datetime
    links: dict[str, str]


class PoolSummary(BaseModel):
    id: str
    name: str
    method: str
    status: str
    n_agents: int
    n_classes: int
    created_at: datetime
    links: dict[str, str]


class PoolList(BaseModel):
    items: list[PoolSummary]
    next_cursor: str | None


class PredictRequest(Pooling):
    """Pool new predictions with a stored pool."""

    labels: ArrayIn | None = Field(None, description="optional: also report metrics on these labels")
    posterior_predictive: bool = Field(
        False, description="pool with the posterior-predictive aggregate (a pool fitted with `posterior`)"
    )


class PredictResponse(BaseModel):
    kind: Kind
    aggregate: Any
    n_floored: int = 0
    metrics: dict[str, Any] | None = None


# -- markets -----------------------------------------------------------------------------------------
UtilitySpec = str | float
Utilities = UtilitySpec | list[UtilitySpec]
UTIL_DOC = "'log', 'exp' (exponential, may short-sell), or a number eta > 0 (isoelastic, γ = 1/eta); one for all agents or a list, one per agent"


class EquilibriumRequest(Pooling):
    """Clear a market of agents with these beliefs, utilities and wealth: its prices are the aggregate."""

    model_config = examples(
        {"kind": "probs", "predictions": [[[0.7, 0.2, 0.1], [0.5, 0.3, 0.2]]], "utilities": 2.0, "wealth": [0.6, 0.4]}
    )
    utilities: Utilities = Field("log", description=UTIL_DOC)
    wealth: list[float] | None = Field(None, description="positive, one per agent (normalised); default equal")
    method: Literal["auto", "newton", "newton_cg", "anderson", "gram", "fixed_point", "tatonnement"] = "auto"
    tol: float = Field(1e-10, gt=0, le=0.1)
    floor: float | None = 1e-9


class MarketCreate(Body):
    model_config = examples({"n_agents": 2, "utilities": "log", "name": "m"})
    name: str = Field("", max_length=200)
    n_agents: int = Field(..., ge=2, le=100_000)
    utilities: Utilities = Field("log", description=UTIL_DOC)
    wealth: list[float] | None = None
    mode: Literal["batch", "online"] = "batch"
    batch_size: int | None = Field(None, ge=1)
    max_epochs: int = Field(100, ge=1, le=100_000)
    wealth_tol: float = Field(1e-10, gt=0)
    tol: float = Field(1e-10, gt=0, le=0.1)
    method: Literal["auto", "newton", "newton_cg", "anderson", "gram", "fixed_point"] = "newton"
    floor: float | None = 1e-9


class TrainRequest(Predictions):
    """Train a stored market on labelled predictions, from its current wealth."""

    labels: ArrayIn
    sample_weight: SampleWeight = None
    mode: Literal["batch", "online"] | None = None
    batch_size: int | None = Field(None, ge=1)
    max_epochs: int | None = Field(None, ge=1, le=100_000)
    background: bool | None = None


class MarketPredict(Pooling):
    """A stored market's prices on new predictions."""


class MarketView(BaseModel):
    id: str
    name: str
    status: str
    n_agents: int
    n_classes: int
    utilities: Any
    options: dict[str, Any]
    wealth: list[float] | None
    n_trained: int
    trainings: list[dict[str, Any]]
    job_id: str | None
    created_at: Any
    updated_at: Any
    links: dict[str, str]


class MarketList(BaseModel):
    items: list[MarketView]
    next_cursor: str | None


class PricesResponse(BaseModel):
    kind: Kind
    prices: Any = Field(..., description="(n_items, n_classes) equilibrium prices")
    summary: dict[str, Any]


class WealthHistory(BaseModel):
    market_id: str
    history: Any = Field(
        ..., description="(n_rows, n_agents): the initial wealth, then the wealth after each epoch of each training"
    )
    trainings: list[dict[str, Any]]


# -- jobs --------------------------------------------------------------------------------------------
class JobView(BaseModel):
    id: str
    kind: str
    state: Literal["queued", "running", "succeeded", "failed", "cancelled"]
    progress: float = Field(..., description="fraction done, 0..1")
    percent: float
    eta_seconds: float | None
    cancel_requested: bool
    resource_type: str | None
    resource_id: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    worker: str | None = Field(None, description="host:pid of the job worker process that ran (or runs) it")
    links: dict[str, str]


class JobList(BaseModel):
    items: list[JobView]
    next_cursor: str | None


# -- arrays ------------------------------------------------------------------------------------------
class ArrayInfo(BaseModel):
    id: str
    dtype: str
    shape: list[int]
    nbytes: int
    links: dict[str, str]


# -- solve -------------------------------------------------------------------------------------------
class SolveRequest(Body):
    """Run solver ``method`` on problem ``problem`` built from ``data``."""

    model_config = examples(
        {
            "problem": "ConditionalLogLinear.from_log_probs",
            "method": "auto",
            "data": {"log_probs": [[[-0.1, -2.4], [-0.5, -0.9]], [[-1.6, -0.2], [-0.9, -0.5]]], "labels": [0, 1]},
        }
    )
    problem: str = Field(..., max_length=100, description="a name from GET /v1/solve/problems")
    data: dict[str, Any] = Field(
        default_factory=dict, description="the problem's constructor arguments (arrays as lists, npy or array_id)"
    )
    method: str = Field("auto", max_length=100, description="a name from GET /v1/solvers, or 'auto'")
    x0: ArrayIn | None = None
    tol: float | None = Field(None, gt=0)
    max_iter: int | None = Field(None, ge=1, le=1_000_000)
    options: dict[str, Any] = Field(default_factory=dict, description="solver-specific options")
    background: bool | None = None


class SolveResponse(BaseModel):
    problem: str
    method: str
    x: list[float]
    fun: float
    n_iter: int
    n_passes: float
    converged: bool
    message: str
    seconds: float
    trace: dict[str, Any]
    available: list[str]


class SolverInfoView(BaseModel):
    name: str
    needs: list[str]
    constraints: list[str]
    summary: str


class ProblemInfoView(BaseModel):
    name: str
    module: str
    summary: str
    parameters: list[dict[str, Any]]


# -- keys --------------------------------------------------------------------------------------------
class KeyCreate(Body):
    name: str = Field("", max_length=200)
    scopes: list[Literal["stateless", "read", "write", "admin"]] = Field(..., min_length=1)


class KeyView(BaseModel):
    id: str
    name: str
    scopes: list[str]
    created_at: datetime
    revoked: bool
    key: str | None = Field(None, description="the secret, shown only in the creation response")
    organisation_id: str | None = Field(None, description="its organisation (PUT /v1/organisations/{id}/keys/{key})")


class OrganisationCreate(Body):
    name: str = Field("", max_length=200)


class OrganisationView(BaseModel):
    id: str
    name: str
    created_at: datetime
    keys: list[str] = Field(..., description="ids of its API keys: each sees what any of them owns")
