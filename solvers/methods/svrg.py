"""SVRG and S2GD (seed 001 Alg 2.3, L560-603).

    x+ = prox( x - (1/eta) [ f'_j(x) - f'_j(x_snap) + g ] ),   g = mean_i f'_i(x_snap),

with a new snapshot every ``m`` steps. The seed's eta is an INVERSE step: ``step = 1/eta``, default
``1/(4 L_max)`` (eta = 4L, the analysis of section 4.7, Thm 4.10), and ``m = n`` (the experiments
recalibrate every n steps, L1537). Snapshot (L589-603): ``"last"`` (practice), ``"average"``
(Johnson & Zhang) or ``"random"`` (one of the last m iterates, as in S2GD).

``s2gd``: Konecny & Richtarik's semi-stochastic GD, an SVRG whose inner loop has a random length
``t in 1..m`` drawn with ``P(t) ~ (1 - mu step)^(m - t)``, snapshot at its last iterate.

Linear models: one stored scalar per term for the snapshot, ``s_i = phi'(a_i . x_snap)``, so a step
costs one row pass (term-gradient evaluations counted: 1 per step plus n per snapshot); sparse rows
use just-in-time updates. Multinomial logistic regression: the same with one stored K-vector per term
(:mod:`solvers.kernels_incremental.multinomial`). Other problems with ``term_grad`` run in Python (2 term gradients a step).
The snapshot's full gradient doubles as the stopping test (gradient-mapping norm at the snapshot).
"""

from __future__ import annotations

from typing import Unpack

import numpy as np

from ..errors import InputError
from ..kernels_incremental.loglinear_saga import loglinear_init_table, loglinear_svrg_inner, project_simplex_inplace
from ..kernels_incremental.losses import all_derivs_loss
from ..kernels_incremental.mixture import mixture_init_table, mixture_svrg_inner
from ..kernels_incremental.multinomial import full_pass as mn_full_pass
from ..kernels_incremental.multinomial import mn_svrg_dense_inner, mn_svrg_sparse_inner
from ..kernels_incremental.variance_reduced import (
    geometric_tables,
    svrg_dense_inner,
    svrg_sparse_inner,
    svrg_sparse_inner_scaled,
    use_scaled,
)
from ..monitor import Stop
from ..problem import capability, constraint_of
from ..registry import register
from ._incremental_common import DEFAULT_TOL, IndexDraws, Monitor, constant, require_smooth, start, term_family

SNAPSHOTS = ("last", "average", "random")


def _run(problem, x0, *, method, step, m, snapshot, order, seed, s2gd, off_clock, **stop: Unpack[Stop]):
    draw = IndexDraws(order, seed, problem.n_terms)
    if snapshot not in SNAPSHOTS:
        raise InputError("snapshot", f"must be one of {SNAPSHOTS}; got {snapshot!r}")
    require_smooth(problem, method)
    n = problem.n_terms
    if step is None:
        L = constant(problem, "L_max") or constant(problem, "L")
        if L is None:
            raise InputError("step", "the problem offers no L_max/L, so give a step size")
        step = 1.0 / (4.0 * L)
    if not step > 0:
        raise InputError("step", f"must be > 0; got {step}")
    m = n if m is None else int(m)
    if m < 1:
        raise InputError("m", f"must be >= 1; got {m}")
    mu = constant(problem, "mu", 0.0) or 0.0
    mon = Monitor(problem, method, **stop)
    mon.off_clock = off_clock
    x = start(problem, x0)
    lt = capability(problem, "linear_terms")
    mt = capability(problem, "multinomial_terms")  # softmax regression: one K-vector per term
    # the log pool's conditional log-linear problem: compiled inner loop (one K-vector per term)
    family = term_family(problem)
    ll, mix = family == "loglinear", family == "mixture"
    prox = mon.prox
    sparse_rows = (lt is not None and lt.sparse) or (mt is not None and mt.sparse)
    if sparse_rows and snapshot == "average":
        raise InputError("snapshot", "snapshot='average' is not implemented for sparse rows; use 'last' or 'random'")
    if sparse_rows:
        last = np.zeros(problem.dim if mt is None else problem.dim // mt.K, dtype=np.int64)
        pw, geo = geometric_tables(1.0 - step * problem.l2, m)
    # no l1: the scaled sparse inner loop (x = beta w, running-sum lazy steps)
    scaled = lt is not None and lt.sparse and use_scaled(step, problem.l2, problem.l1, lt.indptr, problem.dim)
    work = np.empty((problem.dim, 2)) if scaled else None
    weights = None
    if s2gd:
        w = (1.0 - min(mu * step, 0.999)) ** (m - np.arange(1, m + 1))
        weights = w / w.sum()
    it = 0
    while True:
        # snapshot: full gradient at x (also the stopping test)
        if lt is not None:
            s_snap = np.empty(n)
            lsum = all_derivs_loss(lt.loss, *lt.args(), lt.y, x, lt.smoothing, s_snap)
            gdata = np.asarray(problem.A.T @ s_snap, dtype=np.float64) / n
            g = gdata + problem.l2 * x
            fx = lsum / n + 0.5 * problem.l2 * float(x @ x) + problem.l1 * float(np.abs(x).sum())
        elif mt is not None:
            fx, s_snap, gdata = mn_full_pass(problem, x)
            g = gdata + problem.l2 * x
        elif ll:
            if constraint_of(problem) == "simplex" and it == 0:
                project_simplex_inplace(x, np.empty_like(x))
            F = problem.features_ndk
            labels = np.ascontiguousarray(problem.labels, dtype=np.int64)
            P_snap = np.empty((n, problem.n_classes))
            gdata = np.empty(problem.dim)
            loglinear_init_table(F, labels, x, P_snap, gdata)
            fx, g = problem.value_and_grad(x)
        elif mix:
            if it == 0:
                project_simplex_inplace(x, np.empty_like(x))
            Q = problem.mixture_rows
            s_snap = np.empty(n)
            gdata = np.empty(problem.dim)
            mixture_init_table(Q, x, s_snap, gdata)
            fx, g = problem.value_and_grad(x)
        else:
            fx, g = problem.value_and_grad(x)
        mon.passes += 1
        if mon.check(x, it, value_grad=(fx, g)):
            break
        length = m if weights is None else int(draw.rng.choice(m, p=weights)) + 1
        idx = draw(length)
        record = int(draw.rng.integers(0, length)) if snapshot == "random" else -1
        if lt is not None or mt is not None:
            l2, l1 = problem.l2, problem.l1
            if record >= 0:
                # run up to the recorded iterate, keep it, then finish the loop from it (same iterates)
                parts = [idx[: record + 1], idx[record + 1 :]]
            else:
                parts = [idx]
            xs: np.ndarray | None = x.copy() if record >= 0 else None
            xsum = np.zeros(problem.dim) if snapshot == "average" else np.zeros(0)
            for pi, part in enumerate(parts):
                if mt is not None:
                    if mt.sparse:
                        mn_svrg_sparse_inner(*mt.csr(), mt.labels, part, x, s_snap, gdata, step, l2, l1, last, pw, geo)
                    else:
                        mn_svrg_dense_inner(mt.X, mt.labels, part, x, s_snap, gdata, step, l2, l1, xsum)
                elif scaled:
                    # mypy counts a star argument as filling every remaining parameter
                    svrg_sparse_inner_scaled(  # type: ignore[call-arg]
                        lt.loss, *lt.csr(), lt.y, lt.smoothing, part, x, s_snap, gdata, step, l2, work
                    )
                elif lt.sparse:
                    svrg_sparse_inner(
                        lt.loss, *lt.csr(), lt.y, lt.smoothing, part, x, s_snap, gdata, step, l2, l1, last, pw, geo
                    )
                else:
                    svrg_dense_inner(lt.loss, lt.X, lt.y, lt.smoothing, part, x, s_snap, gdata, step, l2, l1, xsum)
                if record >= 0 and pi == 0:
                    xs = x.copy()
            if snapshot == "average":
                x = xsum / length
            elif record >= 0:
                assert xs is not None  # record >= 0 sets it on the first part
                x = xs
            mon.passes += length / n
        elif ll:
            l2 = float(capability(problem, "l2", 0.0) or 0.0)
            simplex = constraint_of(problem) == "simplex"
            xsum = np.zeros(problem.dim) if snapshot == "average" else np.zeros(0)
            if record >= 0:
                loglinear_svrg_inner(F, labels, idx[: record + 1], x, P_snap, gdata, step, l2, simplex, xsum)
                xs = x.copy()
                loglinear_svrg_inner(F, labels, idx[record + 1 :], x, P_snap, gdata, step, l2, simplex, xsum)
                x = xs
            else:
                loglinear_svrg_inner(F, labels, idx, x, P_snap, gdata, step, l2, simplex, xsum)
            if snapshot == "average":
                x = xsum / length
            mon.passes += length / n
        elif mix:
            xsum = np.zeros(problem.dim) if snapshot == "average" else np.zeros(0)
            if record >= 0:
                mixture_svrg_inner(Q, idx[: record + 1], x, s_snap, gdata, step, xsum)
                xs = x.copy()
                mixture_svrg_inner(Q, idx[record + 1 :], x, s_snap, gdata, step, xsum)
                x = xs
            else:
                mixture_svrg_inner(Q, idx, x, s_snap, gdata, step, xsum)
            if snapshot == "average":
                x = xsum / length
            mon.passes += length / n
        else:
            xt = x.copy()
            xsum = np.zeros_like(x)
            xs = x
            for k, j in enumerate(idx):
                j = int(j)
                d = problem.term_grad(j, x) - problem.term_grad(j, xt)
                x = prox(x - step * (d + g), step)
                if snapshot == "average":
                    xsum += x
                if k == record:
                    xs = x.copy()
            if snapshot == "average":
                x = xsum / length
            elif record >= 0:
                x = xs
            mon.passes += 2 * length / n
        it += 1
    return mon.result(x, it, step=step, m=m, compiled=lt is not None or mt is not None or ll or mix)


@register("svrg", needs=("term_grad",), constraints=("none", "simplex", "box"), tol=DEFAULT_TOL, max_iter=300)
def svrg(
    problem,
    x0=None,
    *,
    step=None,
    m: int | None = None,
    snapshot="last",
    order="random",
    seed=0,
    off_clock=False,
    **stop: Unpack[Stop],
):
    """SVRG / prox-SVRG (seed 001 Alg 2.3): ``step = 1/eta`` defaults to ``1/(4 L_max)``, ``m = n``.

    ``max_iter`` counts snapshots (outer iterations); stops on the gradient-mapping norm at the
    snapshot.
    """
    return _run(
        problem,
        x0,
        method="svrg",
        step=step,
        m=m,
        snapshot=snapshot,
        **stop,
        order=order,
        seed=seed,
        s2gd=False,
        off_clock=off_clock,
    )


@register("s2gd", needs=("term_grad",), constraints=("none", "simplex", "box"), tol=DEFAULT_TOL, max_iter=300)
def s2gd(
    problem, x0=None, *, step=None, m: int | None = None, order="random", seed=0, off_clock=False, **stop: Unpack[Stop]
):
    """S2GD: SVRG with a random inner-loop length ``P(t) ~ (1 - mu step)^(m - t)`` (seed 001 L589-603)."""
    return _run(
        problem,
        x0,
        method="s2gd",
        step=step,
        m=m,
        snapshot="last",
        **stop,
        order=order,
        seed=seed,
        s2gd=True,
        off_clock=off_clock,
    )
