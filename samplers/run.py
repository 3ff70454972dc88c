"""One driver for every sampler: :func:`sample(model, method, n_samples, theta0=..., step=...)`.

It validates the options once, runs ``burn_in + n_samples * thin`` steps of the method's state
machine (:mod:`samplers.kernel`), keeps every ``thin``-th position after the burn-in, and returns one
:class:`SampleResult`. The bookkeeping is the solvers' :class:`solvers.monitor.Run`: one clock,
one trace (the full log posterior every ``record_every`` steps, with the passes over the data and
the seconds), the progress callback (fraction done) and the callback rule (a truthy return of
``callback(theta)`` stops the run).

Bad states are never returned as samples: a step that yields a non-finite position or momentum (a
non-finite gradient, an overflow) or leaves the model's support (a Normal-Gamma precision <= 0)
stops the run; the result then holds the samples kept before that step, ``ok`` is False and
``message`` names the step. The exact samplers (MH, MALA, HMC) cannot get there: they reject such
proposals (counted in ``stats["n_rejected_nonfinite"]``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvers.errors import InputError
from solvers.monitor import Run
from solvers.progress import ProgressFn, report
from solvers.result import Trace

from .compiled import compiled_terms
from .kernel import Kernel
from .mcmc import HMC, MALA, MH
from .models.base import Model
from .sgmcmc import CCADL, SGHMC, SGLD, SGNHT

#: most steps run in one compiled call (bounds the memory of a block's draws: BLOCK x batch indices)
BLOCK = 1024

SAMPLERS: dict[str, Kernel] = {
    "mh": MH,
    "mala": MALA,
    "hmc": HMC,
    "sgld": SGLD,
    "sghmc": SGHMC,
    "sgnht": SGNHT,
    "ccadl": CCADL,
}


@dataclass
class SampleResult:
    """What every sampler returns.

    ``samples`` ``(n_kept, D)``; ``stats`` per kept sample: ``kinetic_temperature`` ``p^T p / D``
    (samplers with a momentum), ``xi`` (the thermostats); ``accept_rate`` for the exact samplers;
    ``n_steps`` steps run, ``n_passes`` the density and gradient evaluations counted in passes over
    the data (a full-data step is one pass, L for HMC; a mini-batch step ``batch/N``).
    """

    samples: np.ndarray
    method: str
    ok: bool
    message: str
    n_steps: int
    n_passes: float
    seconds: float
    accept_rate: float | None = None
    stats: dict[str, np.ndarray] = field(default_factory=dict)
    trace: Trace = field(default_factory=Trace)
    info: dict[str, Any] = field(default_factory=dict)


def _count(name: str, value: Any, low: int) -> int:
    if not (isinstance(value, int | np.integer) and not isinstance(value, bool) and value >= low):
        raise InputError(name, f"must be an integer >= {low}; got {value!r}")
    return int(value)


def sample(
    model: Model,
    method: str,
    n_samples: int,
    *,
    theta0: Any,
    step: float,
    burn_in: int = 0,
    thin: int = 1,
    seed: int | np.random.Generator | None = 0,
    callback: Any = None,
    progress: ProgressFn | None = None,
    record_every: int | None = None,
    compiled: bool = True,
    **options: Any,
) -> SampleResult:
    """Run ``method`` (a key of :data:`SAMPLERS`) on ``model`` from ``theta0``; ``options`` are the
    method's own (``mass``, ``n_leapfrog``, ``friction``, ``batch``, ``sigma_hat``,
    ``resample_every``, ``reuse_batch``, ``covariance``, ``offset``, ``decay``: see each ``*_configure``).
    ``compiled``: SGLD, SGHMC and SGNHT on a model with a compiled mini-batch gradient
    (:func:`samplers.compiled.compiled_terms`) run blocks of steps in one numba call (the same
    updates on randomness drawn per block, so a seed gives another path than ``compiled=False``)."""
    if method not in SAMPLERS:
        raise InputError("method", f"must be one of {sorted(SAMPLERS)}; got {method!r}")
    kernel = SAMPLERS[method]
    n_samples, burn_in, thin = _count("n_samples", n_samples, 1), _count("burn_in", burn_in, 0), _count("thin", thin, 1)
    theta = np.array(theta0, dtype=float)
    if theta.shape != (model.dim,) or not np.isfinite(theta).all() or not model.in_support(theta):
        raise InputError("theta0", f"must be a finite point of the support of shape ({model.dim},)")
    try:
        cfg = kernel.configure(model, step, **options)
    except TypeError as e:  # an option the method does not take
        raise InputError("options", f"{method}: {e}") from None
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    total = burn_in + n_samples * thin
    every = max(1, total // 100) if record_every is None else _count("record_every", record_every, 1)
    # passes over the data per step: one density (+ gradient) evaluation, L for HMC, batch/N for SG
    per_step = cfg.get("n_leapfrog", 1) if kernel.full_data else cfg["n"] / model.n_data

    run = Run(method, callback=callback, progress=progress)
    state = kernel.init(model, theta, rng, cfg)
    x = theta
    terms = compiled_terms(model) if compiled and kernel.steps is not None else None
    kept = np.empty((n_samples, model.dim))
    stats: dict[str, list[float]] = {}
    n_kept, ok, message, k, why = 0, True, f"{total} steps", 0, ""
    run.record(model.log_post(theta))
    while k < total:
        if terms is not None and kernel.steps is not None:  # a block of steps to the next record point
            K = min(every - k % every, total - k, BLOCK)
            state, X, P, S = kernel.steps(model, state, rng, cfg, K, terms)
            finite = np.isfinite(X).all(axis=1) & (True if P is None else np.isfinite(P).all(axis=1))
            n_good = K if finite.all() else int(np.argmin(finite))  # compiled models support all of R^D
            steps = k + 1 + np.arange(n_good)
            keep = np.flatnonzero((steps > burn_in) & ((steps - burn_in) % thin == 0))
            kept[n_kept : n_kept + keep.size] = X[keep]
            n_kept += keep.size
            if P is not None:
                with np.errstate(over="ignore"):  # a finite but huge momentum has an infinite temperature
                    stats.setdefault("kinetic_temperature", []).extend(
                        ((P[keep] ** 2).sum(axis=1) / model.dim).tolist()
                    )
            for key, v in S.items():
                stats.setdefault(key, []).extend(v[keep].tolist())
            k += n_good
            run.passes += per_step * n_good
            if n_good < K:
                k, why = k + 1, "non-finite gradient or state"
            x = X[n_good - 1] if n_good else x
        else:
            state = kernel.step(model, state, rng, cfg)
            k += 1
            x, p = kernel.position(state), kernel.momentum(state, cfg)
            if not (np.isfinite(x).all() and (p is None or np.isfinite(p).all())):
                why = "non-finite gradient or state"
            elif not model.in_support(x):
                why = "left the model's support"
            elif k > burn_in and (k - burn_in) % thin == 0:
                kept[n_kept] = x
                n_kept += 1
                row = dict(kernel.stats(state))
                if p is not None:
                    row["kinetic_temperature"] = float(p @ p) / model.dim
                for key, val in row.items():
                    stats.setdefault(key, []).append(float(val))
            run.passes += per_step
        if why:
            run.passes += per_step if terms is not None else 0.0
            ok, message = False, f"stopped at step {k}: {why} (reduce the step); kept {n_kept}"
            break
        if k % every == 0 or k == total:
            run.record(model.log_post(x))
            report(progress, k / total)
            if run.callback_stops(x):
                message = f"stopped by callback at step {k}"
                break
    counts = {key: int(getattr(state, key)) for key in ("n_accepted", "n_rejected_nonfinite") if hasattr(state, key)}
    accept = counts["n_accepted"] / max(1, k) if counts else None
    return SampleResult(
        samples=kept[:n_kept].copy(),
        method=method,
        ok=ok,
        message=message,
        n_steps=k,
        n_passes=run.passes,
        seconds=run.clock(),
        accept_rate=accept,
        stats={key: np.asarray(v) for key, v in stats.items()},
        trace=run.trace,
        info=counts,
    )
