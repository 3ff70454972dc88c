"""Stochastic bound majorization (``sbm``) for conditional log-linear models.

SBM does the same on a random mini-batch ``B`` (sums over ``B`` scaled by ``1/|B|``, i.e. the batch
majorizer is an unbiased estimate of the full one, ``lam`` unchanged), with step ``eta``. Options:
a geometric batch growth (semi-stochastic, Aravkin et al. 2013) which ends as BM and therefore
converges to the exact optimum; the Sherman-Morrison form of seed 004 Algorithm 4 (repaired) that
never factorises ``H`` (``O(d^2)`` per (item, outcome)); a diagonal majorant of the curvature for
large ``d`` (``curvature="diag"``, ``O(d)`` per (item, outcome)).

"The same" is batch bound majorization, :mod:`solvers.methods.bound_majorization` (seed 004, after
Jebara & Choromanska 2012); the problem reader, the step and the compiled Sherman-Morrison kernel
are :mod:`solvers.methods._loglinear_terms`, :mod:`solvers.methods._majorizer_step` and
:mod:`solvers.kernels.sherman_morrison`.
"""

from __future__ import annotations

import math
from typing import Unpack

import numpy as np

from ..errors import InputError
from ..kernels.sherman_morrison import sherman_morrison_direction
from ..monitor import Run, Stop
from ..progress import report
from ..registry import register
from ..result import SolveResult
from ..simplex import simplex_metric_projection
from ._loglinear_terms import check_budget, prepare
from ._majorizer_step import add_lam, newton_point

__all__ = ["stochastic_bound_majorization"]


@register("sbm", needs=("features", "labels"), constraints=("none", "simplex"), tol=1e-8, max_iter=200)
def stochastic_bound_majorization(
    problem,
    x0=None,
    *,
    batch_size: int | None = None,
    step=1.0,
    schedule="constant",
    decay=1.0,
    growth=1.1,
    sherman_morrison=False,
    curvature="full",
    order="ascending",
    seed: int | None = 0,
    **stop: Unpack[Stop],
) -> SolveResult:
    """Stochastic bound majorization (seed 004 Algorithms 3-4, with a stated convention).

    Iteration ``k`` draws a mini-batch ``B`` of ``p_k`` items (without replacement inside an epoch),
    computes the bounds on ``B`` only and sets

        theta <- argmin_{theta in Lambda} of the batch majorizer at theta~ with step eta_k:
        theta~ - eta_k H_B^{-1} g_B   (then projected in the H_B metric when constrained),
        g_B = (1/p) sum_{i in B} w_i (mu_i - f_i(y_i)) + lam theta~,  H_B = (1/p) sum_{i in B} w_i Sigma_i + lam I.

    So the batch sums are scaled by ``t/p`` relative to the slides' Algorithm 3 and ``lam`` keeps its
    meaning; a full batch with ``eta = 1`` is exactly BM.

    Options
    -------
    max_iter : maximum number of EPOCHS (passes over the data).
    batch_size : ``p_0`` (default ``min(n, 40)``, the slides' Table 1).
    step, schedule, decay : ``eta_k = step`` (``"constant"``) or ``step / (1 + decay * epoch)``
        (``"inverse"``, a Robbins-Monro schedule).
    growth : ``p_{k+1} = min(n, ceil(growth * p_k))``; ``1`` keeps the batch fixed (plain SBM,
        converges only to a neighbourhood with a constant step); ``> 1`` (default 1.1) is the
        semi-stochastic variant, which becomes BM once ``p_k = n`` and converges linearly.
    sherman_morrison : compute ``H_B^{-1} g_B`` by the rank-one updates of Algorithm 4 (``O(d^2)`` per
        (item, outcome), no ``O(d^3)`` factorisation); needs ``lam > 0``, an unconstrained problem and
        ``curvature="full"``; pays when ``p K < d``.
    curvature, order : as in ``bm``.

    Stopping: once the batch is full, when a step has norm ``<= tol``; with a batch that never fills
    (``growth = 1``), when the change of ``theta`` over a whole epoch has norm ``<= tol``.
    ``trace`` records the full objective at the end of each epoch (off the clock).
    """
    tol, max_iter = stop["tol"], stop["max_iter"]
    check_budget(tol, max_iter)
    if not (step > 0 and math.isfinite(step)):
        raise InputError("step", f"must be finite and > 0; got {step}")
    if schedule not in ("constant", "inverse"):
        raise InputError("schedule", f"must be 'constant' or 'inverse'; got {schedule!r}")
    if not (growth >= 1.0 and math.isfinite(growth)):
        raise InputError("growth", f"must be >= 1; got {growth}")
    run = Run("sbm", **stop)
    terms, constraint, x = prepare(problem, x0, curvature, order)
    n, lam = terms.n, terms.lam
    if sherman_morrison:
        if lam <= 0:
            raise InputError("sherman_morrison", "sherman_morrison=True needs lam > 0 (M starts at I/lam)")
        if constraint != "none":
            raise InputError(
                "sherman_morrison",
                "sherman_morrison=True handles unconstrained problems only (the metric projection needs H, not H^{-1})",
            )
        if curvature != "full":
            raise InputError("sherman_morrison", "sherman_morrison=True needs curvature='full'")
    p = int(batch_size) if batch_size is not None else min(n, 40)
    if not 1 <= p:
        raise InputError("batch_size", f"must be >= 1; got {batch_size}")
    p = min(p, n)
    pf = float(p)
    rng = np.random.default_rng(seed)
    perm, pos = rng.permutation(n), 0
    run.clock.pause()
    run.record(problem.value(x), at=0.0)  # off the clock
    run.clock.resume()
    seen, epoch, it = 0, 0, 0  # items processed, epochs completed, iterations
    converged, message = False, "max_iter (epochs) reached"
    x_epoch = x.copy()
    halt = False
    while not halt:
        it += 1
        if p >= n:
            idx = None
        else:
            if pos + p > n:
                perm, pos = rng.permutation(n), 0
            idx = np.sort(perm[pos : pos + p])
            pos += p
        eta = step if schedule == "constant" else step / (1.0 + decay * epoch)
        if sherman_morrison:
            bidx = np.arange(n) if idx is None else idx
            Fb, sb = terms.dense_batch(x, bidx)
            phi, _, _ = sherman_morrison_direction(
                x, Fb, sb, terms.labels[bidx], terms.w[bidx], lam, order == "ascending"
            )
            x_new = x - eta * phi
        else:
            _, g, S = terms.sums(x, idx, curvature=curvature)
            g = g + lam * x
            H = add_lam(S, lam)
            if constraint == "none" and eta == 1.0:
                x_new = newton_point(x, g, H)
            else:
                # damped point, then (constrained) its projection in the H_B metric
                v = x + eta * (newton_point(x, g, H) - x)
                x_new = v if constraint == "none" else simplex_metric_projection(H, v, x)
        step_norm = float(np.linalg.norm(x_new - x))
        x = x_new
        seen += min(p, n)
        run.passes = seen / n
        if not np.all(np.isfinite(x)):
            message = "non-finite iterate"
            break
        if run.callback_stops(x):
            message = "stopped by callback"
            break
        full = p >= n
        if full and step_norm <= tol:
            converged, message = True, f"step norm {step_norm:.3g} <= tol (full batch)"
            halt = True
        if seen // n > epoch or halt:
            epoch = seen // n
            seconds = run.clock()
            run.clock.pause()
            run.record(problem.value(x), at=seconds, batch=min(p, n), eta=eta)  # off the clock
            run.clock.resume()
            report(run.progress, run.passes / max_iter)
            if not full and float(np.linalg.norm(x - x_epoch)) <= tol:
                converged, message = True, "epoch change <= tol"
                halt = True
            x_epoch = x.copy()
            if seen >= int(max_iter) * n:
                halt = True
        if growth > 1.0 and p < n:
            pf = min(float(n), pf * growth)
            p = min(n, int(math.ceil(pf)))
    seconds = run.clock()
    run.clock.pause()
    fun = float(problem.value(x))  # off the clock
    report(run.progress, 1.0)
    return run.result(
        x,
        fun,
        it,
        converged,
        message,
        seconds=seconds,
        final_batch_size=min(p, n),
        sherman_morrison=sherman_morrison,
        curvature=curvature,
    )
