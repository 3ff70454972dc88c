"""The stochastic-gradient samplers of seed 000 section 4.3: SGLD (Eq. 4.31), SGHMC (Alg. 4.2),
SGNHT (Alg. 4.3) and CCAdL (Alg. 4.4). Each step touches one mini-batch of ``batch`` items drawn
with replacement; ``grad U~`` is Eq. (4.27) (:func:`samplers.models.base.minibatch_grad`).

A sampler is an optimiser plus noise, and the code says so:

* SGLD is :func:`solvers.methods.sgd.sgd_step` (state :class:`~solvers.methods.sgd.SGDState`)
  with the polynomial step ``h_t = a (b + t)^(-decay)`` (l.2046), followed by ``+ N(0, 2 h_t I)``.
* SGHMC is :func:`solvers.methods.momentum.heavy_ball_step` (state
  :class:`~solvers.methods.momentum.HeavyBallState`) on mini-batch gradients: with the velocity
  ``v = x - x_prev = h p``, Alg. 4.2's ``theta += h p; p += -h grad U~(theta) - h A p + n`` is the
  heavy-ball step ``x+ = x - h^2 grad U~(x) + (1 - hA)(x - x_prev)`` plus ``h n``, with
  ``n ~ N(0, 2h(A I - h Sigma^/2))``. The noise is added to the velocity before the step
  (``x_prev -= h n/(1 - hA)``, so ``hA < 1`` is required); ``p = (x - x_prev)/h``.
* SGNHT and CCAdL are momentum SGD (``p -= h grad U~ + h xi p``) plus noise ``sqrt(2Ah) N(0, I)``
  and the Nosé-Hoover thermostat ``xi += h (p^T p/D - 1)`` (:func:`thermostat_step`, shared).
  SGNHT updates p then theta; CCAdL moves theta first (Euler splitting, l.2232), estimates the
  covariance of the per-example likelihood gradients of the same mini-batch (Eq. 4.45-4.46,
  ``kappa_t = 1/t``) and adds the friction ``(h^2/2)(N^2/n) Gamma^ p`` (note the **h^2**: the
  covariance term of Alg. 4.4 carries ``h`` twice because ``Sigma^ = N^2 Gamma^/n``, Eq. 4.44).

Covariances: SGHMC's ``sigma_hat`` is given by the caller (a constant ``(D, D)`` matrix or ``(D,)``
diagonal) and must be PSD with ``A I - h sigma_hat/2`` PSD (the seed's condition), else an
``InputError``. CCAdL's ``Gamma^`` is a running mean of sample covariances, PSD by construction;
it is used only as a friction matrix (no square root is taken), so rounding cannot break a step.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from solvers.errors import InputError
from solvers.methods.momentum import HeavyBallState, heavy_ball_step
from solvers.methods.sgd import SGDState, sgd_step

from .compiled import sghmc_loop, sgld_loop, sgnht_loop
from .kernel import Kernel, positive, psd_sqrt
from .models.base import Model, minibatch_grad

_IDENTITY = lambda x, t: x


def _batch(model: Model, batch: Any) -> int:
    b = min(model.n_data, 100) if batch is None else batch
    if not (isinstance(b, int | np.integer) and 1 <= b <= model.n_data):
        raise InputError("batch", f"must be an integer in 1..{model.n_data}; got {batch!r}")
    return int(b)


def _draw(model: Model, rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, model.n_data, n)


# SGLD
def sgld_configure(model: Model, step: float, batch: int | None = None, offset: float = 1.0, decay: float = 0.0):
    """``h_t = step * (offset + t)^(-decay) / offset^(-decay)`` (so ``h_0 = step``); ``decay`` 0 is a
    constant step, the seed's range for convergence is ``decay`` in (0.5, 1]."""
    if not (np.isfinite(decay) and 0 <= decay <= 1):
        raise InputError("decay", f"must be in [0, 1]; got {decay!r}")
    return {
        "h": positive("step", step),
        "b": positive("offset", offset),
        "decay": float(decay),
        "n": _batch(model, batch),
    }


def sgld_init(model: Model, theta0: np.ndarray, rng: np.random.Generator, cfg: dict[str, Any]) -> SGDState:
    return SGDState(theta0, 0, np.zeros(0))


def sgld_step(model: Model, state: SGDState, rng: np.random.Generator, cfg: dict[str, Any]) -> SGDState:
    """Eq. (4.31): an SGD step on ``grad U~`` with step ``h_t``, then ``+ sqrt(2 h_t) N(0, I)``."""
    h = cfg["h"] * ((cfg["b"] + state.k) / cfg["b"]) ** (-cfg["decay"])
    g, _ = minibatch_grad(model, state.x, _draw(model, rng, cfg["n"]))
    s = sgd_step(state, g, _IDENTITY, step=h, schedule=0, mu=0.0, avg_from=0)
    return s._replace(x=s.x + np.sqrt(2.0 * h) * rng.standard_normal(model.dim))


def sgld_steps(model: Model, state: SGDState, rng: np.random.Generator, cfg: dict[str, Any], K: int, terms):
    """``K`` steps of :func:`sgld_step` in one compiled call (:func:`samplers.compiled.sgld_loop`)."""
    idx = rng.integers(0, model.n_data, (K, cfg["n"]))
    noise = rng.standard_normal((K, model.dim))
    x, X = state.x.copy(), np.empty((K, model.dim))
    sgld_loop(terms[0], terms[1], x, state.k, cfg["h"], cfg["b"], cfg["decay"], idx, noise, X)
    return SGDState(x, state.k + K, state.xavg), X, None, {}


# SGHMC
class _MinibatchPotential:
    """The "problem" heavy_ball_step evaluates: each call draws a fresh mini-batch. The value is not
    computed (the sampler never reads it) and is NaN."""

    def __init__(self, model: Model, rng: np.random.Generator, n: int) -> None:
        self.model, self.rng, self.n = model, rng, n

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        return float("nan"), minibatch_grad(self.model, x, _draw(self.model, self.rng, self.n))[0]


def sghmc_configure(
    model: Model,
    step: float,
    friction: float = 1.0,
    batch: int | None = None,
    sigma_hat: Any = None,
    resample_every: int | None = None,
    reuse_batch: bool = False,
) -> dict[str, Any]:
    """Step ``h``, friction ``A``, gradient-noise estimate ``sigma_hat`` (None: 0), and the outer
    loop of Alg. 4.2: resample ``p ~ N(0, I)`` every ``resample_every`` inner steps (None: never).
    ``reuse_batch``: one mini-batch per outer iteration, reused by its ``resample_every`` inner steps
    (Alg. 4.2 writes the inner loop's gradient ``grad U~(theta^(tau))`` with one ``U~`` and no index
    tau; BlackJAX's SGHMC reads it so); False draws a fresh mini-batch for every inner step."""
    h, A, D = positive("step", step), positive("friction", friction), model.dim
    if h * A >= 1:
        raise InputError("friction", f"step * friction must be < 1 (the momentum 1 - hA is > 0); got {h * A:.3g}")
    C = A * np.eye(D)
    if sigma_hat is not None:
        S = np.asarray(sigma_hat, dtype=float)
        S = np.diag(S) if S.ndim == 1 else S
        if S.shape != (D, D) or not np.isfinite(S).all():
            raise InputError("sigma_hat", f"must be a finite ({D}, {D}) matrix or ({D},) diagonal; got {S.shape}")
        if not np.allclose(S, S.T, rtol=1e-10, atol=1e-12):
            raise InputError("sigma_hat", "must be symmetric")
        psd_sqrt("sigma_hat", S, "must be positive semi-definite")
        C = C - 0.5 * h * S
    noise = psd_sqrt(
        "sigma_hat", 2.0 * h * C, "A I - h sigma_hat/2 must be PSD (Alg. 4.2); raise friction or lower step"
    )
    if resample_every is not None and not (isinstance(resample_every, int | np.integer) and resample_every >= 1):
        raise InputError("resample_every", f"must be an integer >= 1 or None; got {resample_every!r}")
    if reuse_batch not in (True, False):
        raise InputError("reuse_batch", f"must be True or False; got {reuse_batch!r}")
    if reuse_batch and resample_every is None:
        raise InputError("reuse_batch", "needs resample_every (the inner loop's length, the batch's lifetime)")
    return {"h": h, "A": A, "noise": noise, "n": _batch(model, batch), "resample": resample_every, "reuse": reuse_batch}


class _FixedBatchPotential:
    """The potential of one mini-batch ``idx`` (the outer iteration's ``U~`` with ``reuse_batch``)."""

    def __init__(self, model: Model, idx: np.ndarray) -> None:
        self.model, self.idx = model, idx

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        return float("nan"), minibatch_grad(self.model, x, self.idx)[0]


class SGHMCState(NamedTuple):
    """The heavy-ball state (position, previous position, gradient at the position), the step count
    (for the outer loop's momentum refresh) and, with ``reuse_batch``, the outer iteration's
    mini-batch (else empty)."""

    hb: HeavyBallState
    k: int
    batch: np.ndarray


def _potential(model: Model, rng: np.random.Generator, cfg: dict[str, Any], k: int, batch: np.ndarray):
    """The potential whose gradient at the position reached by step ``k`` the next step uses, and the
    batch kept: a fresh draw per step, or with ``reuse_batch`` a new one as each outer iteration starts."""
    if not cfg["reuse"]:
        return _MinibatchPotential(model, rng, cfg["n"]), batch
    if k % cfg["resample"] == 0:
        batch = _draw(model, rng, cfg["n"])
    return _FixedBatchPotential(model, batch), batch


def sghmc_init(model: Model, theta0: np.ndarray, rng: np.random.Generator, cfg: dict[str, Any]) -> SGHMCState:
    p = rng.standard_normal(model.dim)
    pot, batch = _potential(model, rng, cfg, 0, np.zeros(0, dtype=np.int64))
    return SGHMCState(HeavyBallState(theta0, theta0 - cfg["h"] * p, pot.value_and_grad(theta0)), 0, batch)


def sghmc_step(model: Model, state: SGHMCState, rng: np.random.Generator, cfg: dict[str, Any]) -> SGHMCState:
    """One inner step of Alg. 4.2 as a noisy heavy-ball step; every ``resample_every`` steps the
    momentum is first redrawn ``p ~ N(0, I)`` (the outer loop)."""
    h, b, hb = cfg["h"], 1.0 - cfg["h"] * cfg["A"], state.hb
    if cfg["resample"] is not None and state.k % cfg["resample"] == 0 and state.k > 0:
        hb = hb._replace(x_prev=hb.x - h * rng.standard_normal(model.dim))
    n = cfg["noise"] @ rng.standard_normal(model.dim)
    noisy = hb._replace(x_prev=hb.x_prev - h * n / b)
    pot, batch = _potential(model, rng, cfg, state.k + 1, state.batch)
    return SGHMCState(heavy_ball_step(pot, noisy, _IDENTITY, h * h, b), state.k + 1, batch)


def sghmc_steps(model: Model, state: SGHMCState, rng: np.random.Generator, cfg: dict[str, Any], K: int, terms):
    """``K`` steps of :func:`sghmc_step` in one compiled call (:func:`samplers.compiled.sghmc_loop`);
    the normals are taken in the per-step order (a momentum refresh before that step's noise)."""
    D, every, ks = model.dim, cfg["resample"] or 0, state.k + np.arange(K)
    refresh = (ks % every == 0) & (ks > 0) if every else np.zeros(K, dtype=bool)
    Z = rng.standard_normal((K + int(refresh.sum()), D))
    row = np.arange(K) + np.cumsum(refresh)  # the noise row of each step, after its refresh row
    resample = np.zeros((K, D))
    resample[refresh] = Z[row[refresh] - 1]
    rows, which, batch = _block_batches(model, rng, cfg, ks + 1, state.batch)
    hb = state.hb
    x, xp, g = hb.x.copy(), hb.x_prev.copy(), hb.value_grad[1].copy()
    X, P = np.empty((K, D)), np.empty((K, D))
    b = 1.0 - cfg["h"] * cfg["A"]
    noise = Z[row] @ cfg["noise"].T  # the velocity noise C n_t of every step, one BLAS product per block
    sghmc_loop(
        terms[0], terms[1], x, xp, g, state.k, cfg["h"], b, every, resample, noise, rows, which, cfg["reuse"], X, P
    )
    return SGHMCState(HeavyBallState(x, xp, (float("nan"), g)), state.k + K, batch), X, P, {}


def _block_batches(model: Model, rng: np.random.Generator, cfg: dict[str, Any], ks: np.ndarray, batch: np.ndarray):
    """The mini-batches of the gradients at the positions reached by steps ``ks`` (:func:`_potential`'s
    policy for a block): the distinct batches ``rows`` ``(B, n)``, the row of each step ``which``
    ``(K,)``, and the batch kept."""
    if not cfg["reuse"]:
        return rng.integers(0, model.n_data, (ks.size, cfg["n"])), np.arange(ks.size), batch
    new = ks % cfg["resample"] == 0
    fresh = rng.integers(0, model.n_data, (int(new.sum()), cfg["n"]))
    rows = np.vstack([batch[None, :], fresh])  # sghmc_init drew the first outer iteration's batch
    return rows, np.cumsum(new), rows[-1]


def sghmc_momentum(state: SGHMCState, cfg: dict[str, Any]) -> np.ndarray:
    """``p = (x - x_prev)/h``: the momentum used by the last position update."""
    return (state.hb.x - state.hb.x_prev) / cfg["h"]


# SGNHT and CCAdL
class ThermostatState(NamedTuple):
    """Position, momentum, thermostat ``xi``, step count and CCAdL's covariance estimate ``Gamma^``
    (full ``(D, D)``, diagonal ``(D,)``, or empty for SGNHT)."""

    theta: np.ndarray
    p: np.ndarray
    xi: float
    k: int
    gamma_hat: np.ndarray


def thermostat_step(p: np.ndarray, g: np.ndarray, xi: float, friction: np.ndarray | None, rng, cfg) -> tuple:
    """``p+ = p - h g - friction - h xi p + sqrt(2 A h) N(0, I)``, ``xi+ = xi + h (p+^T p+/D - 1)``:
    momentum SGD plus noise, and the Nosé-Hoover thermostat (Alg. 4.3 and 4.4, beta = 1, mu = D)."""
    h, A = cfg["h"], cfg["A"]
    pn = p - h * g - h * xi * p + np.sqrt(2.0 * A * h) * rng.standard_normal(p.size)
    if friction is not None:
        pn -= friction
    return pn, xi + h * (float(pn @ pn) / p.size - 1.0)


def _thermo_configure(model: Model, step: float, friction: float = 1.0, batch: int | None = None) -> dict[str, Any]:
    return {"h": positive("step", step), "A": positive("friction", friction), "n": _batch(model, batch)}


def sgnht_configure(model: Model, step: float, friction: float = 1.0, batch: int | None = None) -> dict[str, Any]:
    """Step ``h``, friction ``A`` (the thermostat starts at ``xi_0 = A``)."""
    return _thermo_configure(model, step, friction, batch)


def ccadl_configure(
    model: Model, step: float, friction: float = 1.0, batch: int | None = None, covariance: str = "full"
) -> dict[str, Any]:
    """As SGNHT, plus ``covariance`` "full" (O(nD^2) per step) or "diagonal" (O(nD), l.2228)."""
    if covariance not in ("full", "diagonal"):
        raise InputError("covariance", f"must be 'full' or 'diagonal'; got {covariance!r}")
    cfg = _thermo_configure(model, step, friction, batch)
    if cfg["n"] < 2:
        raise InputError("batch", "CCAdL estimates a covariance from the mini-batch: needs batch >= 2")
    return cfg | {"diag": covariance == "diagonal"}


def thermo_init(model: Model, theta0: np.ndarray, rng: np.random.Generator, cfg: dict[str, Any]) -> ThermostatState:
    D = model.dim
    G0 = np.zeros(0) if "diag" not in cfg else (np.zeros(D) if cfg["diag"] else np.zeros((D, D)))
    return ThermostatState(theta0, rng.standard_normal(D), cfg["A"], 0, G0)


def sgnht_step(model: Model, s: ThermostatState, rng: np.random.Generator, cfg: dict[str, Any]) -> ThermostatState:
    """Alg. 4.3: p from the gradient at the old theta, then ``theta += h p``."""
    g, _ = minibatch_grad(model, s.theta, _draw(model, rng, cfg["n"]))
    p, xi = thermostat_step(s.p, g, s.xi, None, rng, cfg)
    return ThermostatState(s.theta + cfg["h"] * p, p, xi, s.k + 1, s.gamma_hat)


def sgnht_steps(model: Model, s: ThermostatState, rng: np.random.Generator, cfg: dict[str, Any], K: int, terms):
    """``K`` steps of :func:`sgnht_step` in one compiled call (:func:`samplers.compiled.sgnht_loop`)."""
    idx = rng.integers(0, model.n_data, (K, cfg["n"]))
    noise = rng.standard_normal((K, model.dim))
    theta, p = s.theta.copy(), s.p.copy()
    X, P, XI = np.empty((K, model.dim)), np.empty((K, model.dim)), np.empty(K)
    xi = sgnht_loop(terms[0], terms[1], theta, p, float(s.xi), cfg["h"], cfg["A"], idx, noise, X, P, XI)
    return ThermostatState(theta, p, float(xi), s.k + K, s.gamma_hat), X, P, {"xi": XI}


def ccadl_step(model: Model, s: ThermostatState, rng: np.random.Generator, cfg: dict[str, Any]) -> ThermostatState:
    """Alg. 4.4: ``theta += h p`` first, then the covariance estimate at the new theta and the p update."""
    h, n, k = cfg["h"], cfg["n"], s.k + 1
    theta = s.theta + h * s.p
    g, G = minibatch_grad(model, theta, _draw(model, rng, n))
    Gc = G - G.mean(axis=0)
    V = (Gc * Gc).sum(axis=0) / (n - 1) if cfg["diag"] else (Gc.T @ Gc) / (n - 1)  # Eq. (4.46)
    kappa = 1.0 / k  # Eq. (4.45), kappa_t = 1/t: Gamma^_t is the mean of V_1..V_t
    gamma_hat = (1.0 - kappa) * s.gamma_hat + kappa * V
    Gp = gamma_hat * s.p if cfg["diag"] else gamma_hat @ s.p
    friction = (0.5 * h * h * model.n_data**2 / n) * Gp
    p, xi = thermostat_step(s.p, g, s.xi, friction, rng, cfg)
    return ThermostatState(theta, p, xi, k, gamma_hat)


def _no_stats(state: Any) -> dict[str, float]:
    return {}


SGLD = Kernel(sgld_configure, sgld_init, sgld_step, lambda s: s.x, lambda s, c: None, _no_stats, False, sgld_steps)
SGHMC = Kernel(sghmc_configure, sghmc_init, sghmc_step, lambda s: s.hb.x, sghmc_momentum, _no_stats, False, sghmc_steps)
_thermo_stats = lambda s: {"xi": s.xi}
_p = lambda s, c: s.p
SGNHT = Kernel(sgnht_configure, thermo_init, sgnht_step, lambda s: s.theta, _p, _thermo_stats, False, sgnht_steps)
CCADL = Kernel(ccadl_configure, thermo_init, ccadl_step, lambda s: s.theta, _p, _thermo_stats, False)
