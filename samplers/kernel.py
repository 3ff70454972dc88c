"""What every sampler provides to the driver (:func:`samplers.run.sample`), in the optax shape of the
solvers' state machines (``solvers/methods/sgd.py``, ``momentum.py``): an immutable state, an
``init`` and a ``step`` (state in, state out).

* ``configure(model, step, **options) -> cfg``: validate the options once (``InputError`` naming
  the option) and precompute what the steps share (a mass-matrix factor, a noise factor);
* ``init(model, theta0, rng, cfg) -> state`` and ``step(model, state, rng, cfg) -> state``;
* ``position(state)``, ``momentum(state, cfg)`` (None for the samplers without one) and
  ``stats(state)`` (per-sample statistics: the thermostat ``xi``) read a state; the exact samplers'
  states also count accepted proposals (``n_accepted``, ``n_rejected_nonfinite``);
* ``full_data``: True when a step touches all N items (MH, MALA, HMC), False for the mini-batch
  samplers (a step then costs ``batch/N`` passes);
* ``steps(model, state, rng, cfg, K, terms) -> (state, positions (K, D), momenta (K, D) or None,
  stats {name: (K,)})``: ``K`` steps in one compiled call, for the models with a compiled mini-batch
  gradient (``terms`` from :func:`samplers.compiled.compiled_terms`); None for the samplers without
  one (the driver then calls ``step``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from solvers.errors import InputError


class Kernel(NamedTuple):
    configure: Callable[..., dict[str, Any]]
    init: Callable[..., Any]
    step: Callable[..., Any]
    position: Callable[[Any], np.ndarray]
    momentum: Callable[[Any, dict[str, Any]], np.ndarray | None]
    stats: Callable[[Any], dict[str, float]]
    full_data: bool
    steps: Callable[..., tuple[Any, np.ndarray, np.ndarray | None, dict[str, np.ndarray]]] | None = None


def positive(name: str, value: Any) -> float:
    """``value`` as a finite float > 0, else an :class:`InputError` naming ``name``."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(name, f"must be a number; got {value!r}") from None
    if not (np.isfinite(v) and v > 0):
        raise InputError(name, f"must be finite and > 0; got {value!r}")
    return v


def spd_factor(name: str, matrix: Any, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``(M, L)`` with ``L L^T = M`` for a symmetric positive-definite ``(dim, dim)`` matrix or a
    positive ``(dim,)`` diagonal, else an :class:`InputError` naming ``name``."""
    M = np.asarray(matrix, dtype=float)
    if M.ndim == 1:
        M = np.diag(M)
    if M.shape != (dim, dim) or not np.isfinite(M).all():
        raise InputError(name, f"must be a finite ({dim}, {dim}) matrix or ({dim},) diagonal; got shape {M.shape}")
    if not np.allclose(M, M.T, rtol=1e-10, atol=1e-12):
        raise InputError(name, "must be symmetric")
    try:
        return M, np.linalg.cholesky(M)
    except np.linalg.LinAlgError:
        raise InputError(name, "must be positive definite", code="not_positive_definite") from None


def psd_sqrt(name: str, C: np.ndarray, reason: str) -> np.ndarray:
    """A square root ``S`` (``S S^T = C``) of a symmetric positive semi-definite ``C`` (eigenvalues
    down to ``-1e-10 * max|eig|`` are read as rounding and clipped to 0), else an InputError."""
    w, V = np.linalg.eigh(0.5 * (C + C.T))
    if w.min() < -1e-10 * max(1.0, float(np.abs(w).max())):
        raise InputError(name, f"{reason} (smallest eigenvalue {w.min():.3g})", code="not_psd")
    return V * np.sqrt(np.clip(w, 0.0, None))
