"""SP-BCD: stochastic primal-dual block coordinate descent (seed 000 Alg. 3.2, l.1569-1583; App. C l.2754-2792).

On ``min_x max_y sum_j (f_j(x_j) + <y, A_j x_j>) - g*(y)`` (Eq. 3.45; ``A = K^T`` of the
:class:`~solvers.problems.saddle_point.SaddlePoint`, ``q`` primal blocks), with ``m`` blocks ``S_t``
per iteration, ``theta = m/q`` (C.1), from ``x_bar = x``, ``r_bar = A x_bar``:

    x_j+     = argmin f_j(x_j) + <y, A_j x_j> + (1/2)|x_j - x_j|^2_{diag(1/tau_j)}     j in S_t   (3.46)
    x_bar_j+ = x_j+ + theta (x_j+ - x_j)              (x_bar_j kept for j not in S_t)       (3.49)
    y+       = argmin g*(y) - <y, r_bar + (q/m) sum_{S_t} A_j (x_bar_j+ - x_bar_j)>
               + (1/2)|y - y|^2_{diag(1/sigma^t)}                                          (3.50)
    r_bar+   = r_bar + sum_{S_t} A_j (x_bar_j+ - x_bar_j)                                   (3.52)

Step rules (option ``step_rule``): ``"thesis"`` (default) ``tau_d = 1/sum_k |A_kd|`` (3.48) and
``sigma_k = (m/q)/sum_{j in S_t} |A_kj|`` (3.51); ``"printed"`` the same without the ``m/q`` factor
(what l.1693 prints for RPCA, sigma = 1/m); ``"alt"`` ``tau_j = 1/|A_j|``, ``sigma = (m/q)/max_j |A_j|``
(l.1623). Before the first step :func:`steps_psd` checks that the matrix ``P`` of Eq. 3.54 is
positive semi-definite for the first ``S_t``; a rule that breaks it (``"printed"`` for RPCA with
m < 3: Schur complement ``(m^2/3 - m) I``) raises :class:`InputError` unless ``check_steps=False``.
A dual row that the selected blocks do not touch (sparse data) gets ``sigma_k = (m/q)/sum_j |A_kj|``
(a zero row of ``A_{S_t}`` leaves ``P`` PSD for any finite step).

Sampling (option ``sampling``): ``"perm-cyclic"`` (a random permutation of the blocks each epoch,
taken m at a time, l.1627) or ``"uniform"``. One pass = q/m iterations; the trace is recorded once
per pass (option ``check_every`` passes): primal objective, duality gap (the problem's
``duality_gap`` or the saddle's) or, for a constraint, its residual. Stopping: gap ``<= tol``; for a
constraint, residual ``<= tol max(1, |b|)`` and a relative objective change ``<= tol`` over a pass.
"""

from __future__ import annotations

import math
from typing import Unpack

import numpy as np
import scipy.sparse as sp

from ..checks import check_choice, check_count
from ..errors import InputError
from ..monitor import Run, Stop
from ..problem import offers, start_point
from ..problems.saddle_point import operator_norm
from ..registry import register
from ..result import SolveResult
from ._stopping import record_and_stop

STEP_RULES = ("thesis", "printed", "alt")


def _abs_sums(M, axis: int) -> np.ndarray:
    return np.asarray(abs(M).sum(axis=axis)).ravel()


def step_sizes(A, blocks, S, m: int, rule: str, tau: np.ndarray, block_norms: np.ndarray | None, full=None):
    """``(idx, A_S, tau_S, sigma^t)`` for the selected blocks ``S`` under ``rule`` (Eq. 3.48, 3.51 or l.1623).

    ``full``: the row sums ``sum_j |A_kj|`` (computed when not given; the solver passes them once).
    """
    q = len(blocks)
    idx = np.concatenate([blocks[j] for j in S])
    A_S = A[:, idx]
    if rule == "alt":
        assert block_norms is not None
        sigma = np.full(A.shape[0], (m / q) / float(block_norms.max()))
        return idx, A_S, tau[idx], sigma
    rows = _abs_sums(A_S, 1)
    if full is None:
        full = _abs_sums(A, 1)
    factor = m / q if rule == "thesis" else 1.0
    with np.errstate(divide="ignore"):
        sigma = np.where(rows > 0, factor / rows, (m / q) / full)
    return idx, A_S, tau[idx], sigma


def steps_psd(A_S, tau_S: np.ndarray, sigma: np.ndarray, m: int, q: int) -> float:
    """``|diag(sqrt(q sigma/m)) A_S diag(sqrt(tau_S))|_2^2``: P of Eq. 3.54 is PSD iff this is ``<= 1``.

    (P = [[diag(1/tau_S), -A_S^T], [-A_S, (m/q) diag(1/sigma)]]; its Schur complement is PSD exactly
    when the scaled coupling has norm at most one.)
    """
    left = np.sqrt(q * sigma / m)
    right = np.sqrt(tau_S)
    M = sp.diags(left) @ A_S @ sp.diags(right) if sp.issparse(A_S) else left[:, None] * A_S * right[None, :]
    return operator_norm(M) ** 2


@register("spbcd", needs=("saddle_point",), tol=1e-8, max_iter=1000)
def spbcd(
    problem,
    x0=None,
    *,
    m=1,
    block_size=1,
    sampling="perm-cyclic",
    step_rule="thesis",
    check_steps=True,
    check_every=1,
    seed=0,
    **stop: Unpack[Stop],
) -> SolveResult:
    """SP-BCD (Alg. 3.2): m of q primal blocks per iteration, full dual step; ``max_iter`` counts passes.

    Options: ``m`` (blocks per iteration), ``block_size`` (coordinates per block when the problem
    declares no partition), ``sampling`` ("perm-cyclic" or "uniform"), ``step_rule`` ("thesis",
    "printed", "alt"), ``check_steps`` (refuse a rule that makes P of Eq. 3.54 indefinite),
    ``check_every`` (passes between trace records), ``seed``.
    """
    tol, max_iter = stop["tol"], stop["max_iter"]
    check_count(check_every, field="check_every", minimum=1)
    check_count(block_size, field="block_size", minimum=1)
    check_choice(sampling, ("perm-cyclic", "uniform"), field="sampling")
    check_choice(step_rule, STEP_RULES, field="step_rule")
    sad = problem.saddle_point()
    A = sad.A
    blocks = sad.blocks or [np.arange(i, min(i + block_size, sad.dim)) for i in range(0, sad.dim, block_size)]
    q = len(blocks)
    check_count(m, field="m", minimum=1)
    if m > q:
        raise InputError("m", f"must be at most the number of blocks q = {q}; got {m}")
    rng = np.random.default_rng(seed)
    block_norms = None
    if step_rule == "alt":
        block_norms = np.array([operator_norm(A[:, b]) for b in blocks])
        tau = np.concatenate([np.full(len(b), 1.0 / n) for b, n in zip(blocks, block_norms, strict=True)])
        tau = tau[np.argsort(np.concatenate(blocks))]
    else:
        tau = 1.0 / _abs_sums(A, 0)  # (3.48); no zero column: the saddle refuses one
    full_rows = _abs_sums(A, 1)
    theta = m / q
    run = Run("spbcd", **stop)
    x = np.array(start_point(sad, x0), dtype=float)
    y = np.zeros(sad.dual_dim)
    x_bar = x.copy()
    r_bar = A @ x_bar
    own_gap = offers(problem, "duality_gap")
    iters_per_pass = max(1, q // m)
    order = rng.permutation(q)
    pos = 0
    if check_steps:
        S0 = order[:m]
        _, A_S0, tau_S0, sigma0 = step_sizes(A, blocks, S0, m, step_rule, tau, block_norms)
        val = steps_psd(A_S0, tau_S0, sigma0, m, q)
        if val > 1.0 + 1e-8:
            raise InputError(
                "step_rule",
                f"{step_rule!r} steps make P of Eq. 3.54 indefinite (scaled coupling norm^2 {val:.4g} > 1); "
                "pass check_steps=False to run it anyway",
            )
    b_norm = float(np.linalg.norm(sad.g.b)) if hasattr(sad.g, "residual") else 1.0
    f_prev = math.inf
    converged, message, k = False, f"max_iter ({max_iter} passes) reached", 0
    for k in range(1, max_iter + 1):
        for _ in range(iters_per_pass):
            if sampling == "uniform":
                S = rng.choice(q, size=m, replace=False)
            else:
                if pos + m > q:
                    order, pos = rng.permutation(q), 0
                S = order[pos : pos + m]
                pos += m
            idx, A_S, tau_S, sigma = step_sizes(A, blocks, S, m, step_rule, tau, block_norms, full_rows)
            v = x[idx] - tau_S * (A_S.T @ y)
            if sad.blocks is not None:
                x_new = np.concatenate(
                    [
                        sad.prox_block(j, blocks[j], v[o : o + len(blocks[j])], tau[blocks[j]])
                        for j, o in zip(S, np.cumsum([0] + [len(blocks[j]) for j in S[:-1]]), strict=True)
                    ]
                )
            else:
                x_new = sad.prox_block(0, idx, v, tau_S)
            xb_new = x_new + theta * (x_new - x[idx])
            delta = A_S @ (xb_new - x_bar[idx])
            y = sad.g.conj_prox(y + sigma * (r_bar + (q / m) * delta), sigma)
            r_bar += delta
            x[idx] = x_new
            x_bar[idx] = xb_new
            run.passes += len(idx) / sad.dim
        if k % check_every and k < max_iter:
            continue
        KTx = sad.KTx(x)
        fx = sad.primal(x, KTx)
        res = sad.residual(x, KTx)
        extra = {"theta": theta}
        if res is not None:
            extra["residual"] = res
            done = res <= tol * max(1.0, b_norm) and abs(fx - f_prev) <= tol * max(1.0, abs(fx))
        else:
            gap = float(problem.duality_gap(x)) if own_gap else sad.gap(x, y, KTx)
            extra["gap"] = gap
            done = gap <= tol
        f_prev = fx
        ok = "converged: " + ("residual and objective change <= tol" if res is not None else "duality gap <= tol")
        why = record_and_stop(run, x, fx, ok if done else None, **extra)
        if why:
            converged, message = done, why
            break
    return run.result(x, float(sad.primal(x)), k, converged, message, y=y, m=m, q=q, step_rule=step_rule)
