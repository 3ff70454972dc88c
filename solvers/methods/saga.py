"""SAGA (seed 001 Alg 4.1, Eq. 4.1) with prox, and the shared SAG/SAGA driver.

    w = x - step [ f'_j(x) - f'_j(phi_j) + mean_i f'_i(phi_i) ],   x+ = prox_{step h}(w)

(prox in the L260 convention: ``prox_{1/step}^h(w) = argmin h(x) + |x - w|^2/(2 step)``, L1579).
SAGA's ``step`` is the seed's gamma, a TRUE step size. Default (Thm 4.7 / L1416): the larger of
``1/(2(mu n + L))`` (each f_i mu-strongly convex) and ``1/(3L)`` (adaptive to mu), with L the
largest term constant ``L_max``; both have a linear-rate theorem.

Linear models (:class:`~solvers.problems.linear_models.LinearModel`) run compiled epochs with one
stored scalar per term, the explicit-L2 update of L1522 and just-in-time (lazy) updates on sparse
rows (:mod:`solvers.kernels_incremental.variance_reduced`); multinomial logistic regression the same
with one stored K-vector per term (:mod:`solvers.kernels_incremental.multinomial`). Any other problem offering
``term_grad`` runs the same update in Python (a full gradient table, ``n x dim``), with its
``prox`` or ``project`` (e.g. the simplex-constrained log-pool problem).
"""

from __future__ import annotations

from typing import Unpack

import numpy as np

from ..errors import InputError
from ..kernels_incremental.losses import all_derivs
from ..kernels_incremental.variance_reduced import (
    geometric_tables,
    saga_dense_epoch,
    saga_sparse_epoch,
    saga_sparse_epoch_scaled,
    use_scaled,
)
from ..monitor import Stop
from ..problem import capability
from ..registry import register
from ._incremental_common import DEFAULT_TOL, IndexDraws, Monitor, constant, require_smooth, start, term_mu


def saga_default_step(problem) -> float:
    L = constant(problem, "L_max") or constant(problem, "L")
    if L is None:
        raise InputError("step", "the problem offers no L_max/L, so give a step size")
    mu = term_mu(problem)
    n = problem.n_terms
    return max(1.0 / (3.0 * L), 1.0 / (2.0 * (mu * n + L)) if mu > 0 else 0.0)


def run_table_method(problem, x0, *, method, theta, step, order, seed, off_clock=False, **stop: Unpack[Stop]):
    """SAGA (theta = 1) or SAG in the form of Eq. 4.4 (theta = 1/n); see the module docstring."""
    draw = IndexDraws(order, seed, problem.n_terms)
    require_smooth(problem, method)
    if not step > 0:
        raise InputError("step", f"must be > 0; got {step}")
    mon = Monitor(problem, method, **stop)
    mon.off_clock = off_clock
    x = start(problem, x0)
    n = problem.n_terms
    lt = capability(problem, "linear_terms")
    if lt is not None:
        l2, l1 = problem.l2, problem.l1
        table = np.empty(n)
        all_derivs(lt.loss, *lt.args(), lt.y, x, lt.smoothing, table)
        gbar = np.asarray(problem.A.T @ table, dtype=np.float64) / n
        mon.passes += 1
        scaled = lt.sparse and use_scaled(step, l2, l1, lt.indptr, problem.dim)
        if scaled:
            work = np.empty((problem.dim, 3))
        elif lt.sparse:
            last = np.zeros(problem.dim, dtype=np.int64)
            pw, geo = geometric_tables(1.0 - step * l2, n)
        if scaled:

            def one_epoch(idx):
                saga_sparse_epoch_scaled(
                    lt.loss, *lt.csr(), lt.y, lt.smoothing, idx, x, table, gbar, step, l2, theta, work
                )
        elif lt.sparse:

            def one_epoch(idx):
                saga_sparse_epoch(
                    lt.loss, *lt.csr(), lt.y, lt.smoothing, idx, x, table, gbar, step, l2, l1, theta, last, pw, geo
                )
        else:

            def one_epoch(idx):
                saga_dense_epoch(lt.loss, lt.X, lt.y, lt.smoothing, idx, x, table, gbar, step, l2, l1, theta)

        epochs = mon.run_epochs(x, one_epoch, draw)
        return mon.result(x, epochs, step=step, compiled=True)
    if capability(problem, "multinomial_terms") is not None:
        return _table_multinomial(problem, x, mon, draw, step, theta)
    if capability(problem, "features_ndk") is not None and capability(problem, "labels") is not None:
        return _saga_loglinear(problem, x, mon, draw, step, theta)
    if capability(problem, "mixture_rows") is not None:
        return _saga_mixture(problem, x, mon, draw, step, theta)
    # generic path: any problem with term_grad
    prox = mon.prox
    G = np.array([problem.term_grad(i, x) for i in range(n)], dtype=np.float64)
    gbar = G.mean(axis=0)
    mon.passes += 1
    epoch = 0
    halt = mon.check(x, epoch)
    while not halt:
        for j in draw():
            g = problem.term_grad(int(j), x)
            dg = g - G[j]
            x = prox(x - step * (theta * dg + gbar), step)
            gbar += dg / n
            G[j] = g
        mon.passes += 1
        epoch += 1
        halt = mon.check(x, epoch)
    return mon.result(x, epoch, step=step, compiled=False)


def _table_multinomial(problem, x, mon, draw, step, theta):
    """Compiled SAGA / SAG for :class:`~solvers.problems.linear_models.MultinomialLogistic`: one stored
    K-vector per term, explicit-L2 update, lazy updates on CSR rows
    (:mod:`solvers.kernels_incremental.multinomial`)."""
    from ..kernels_incremental.multinomial import full_pass, mn_saga_dense_epoch, mn_saga_sparse_epoch

    mt = problem.multinomial_terms
    n = problem.n_terms
    l2, l1 = problem.l2, problem.l1
    _, table, gbar = full_pass(problem, x)
    mon.passes += 1
    if mt.sparse:
        last = np.zeros(problem.dim // mt.K, dtype=np.int64)  # one clock per feature
        pw, geo = geometric_tables(1.0 - step * l2, n)
    if mt.sparse:

        def one_epoch(idx):
            mn_saga_sparse_epoch(
                mt.data, mt.indices, mt.indptr, mt.labels, idx, x, table, gbar, step, l2, l1, theta, last, pw, geo
            )
    else:

        def one_epoch(idx):
            mn_saga_dense_epoch(mt.X, mt.labels, idx, x, table, gbar, step, l2, l1, theta)

    epochs = mon.run_epochs(x, one_epoch, draw)
    return mon.result(x, epochs, step=step, compiled=True)


def _saga_loglinear(problem, x, mon, draw, step, theta):
    """Compiled SAGA/SAG for :class:`~solvers.problems.loglinear.ConditionalLogLinear` (log pools)."""
    from ..kernels_incremental.loglinear_saga import loglinear_init_table, loglinear_saga_epoch, project_simplex_inplace

    F = problem.features_ndk
    labels = np.ascontiguousarray(problem.labels, dtype=np.int64)
    n, K = problem.n_terms, problem.n_classes
    simplex = problem.constraint == "simplex"
    l2 = float(capability(problem, "l2", 0.0) or 0.0)
    if simplex:
        project_simplex_inplace(x, np.empty_like(x))
    P = np.empty((n, K))
    gbar = np.empty(problem.dim)
    loglinear_init_table(F, labels, x, P, gbar)
    mon.passes += 1
    epoch = 0
    halt = mon.check(x, epoch)
    while not halt:
        loglinear_saga_epoch(F, labels, draw(), x, P, gbar, step, l2, simplex, theta)
        mon.passes += 1
        epoch += 1
        halt = mon.check(x, epoch)
    return mon.result(x, epoch, step=step, compiled=True)


def _saga_mixture(problem, x, mon, draw, step, theta):
    """Compiled SAGA/SAG for :class:`~solvers.problems.mixture.MixtureLikelihood` (linear pools)."""
    from ..kernels_incremental.loglinear_saga import project_simplex_inplace
    from ..kernels_incremental.mixture import mixture_init_table, mixture_saga_epoch

    Q = problem.mixture_rows
    n = problem.n_terms
    project_simplex_inplace(x, np.empty_like(x))
    s = np.empty(n)
    gbar = np.empty(problem.dim)
    mixture_init_table(Q, x, s, gbar)
    mon.passes += 1
    epoch = 0
    halt = mon.check(x, epoch)
    while not halt:
        mixture_saga_epoch(Q, draw(), x, s, gbar, step, theta)
        mon.passes += 1
        epoch += 1
        halt = mon.check(x, epoch)
    return mon.result(x, epoch, step=step, compiled=True)


@register("saga", needs=("term_grad",), constraints=("none", "simplex", "box"), tol=DEFAULT_TOL, max_iter=300)
def saga(problem, x0=None, *, step=None, order="random", seed=0, off_clock=False, **stop: Unpack[Stop]):
    """SAGA with prox (seed 001 Alg 4.1); compiled for linear models, lazy updates on sparse rows.

    ``step`` (the seed's gamma, a step size) defaults to ``max(1/(3 L_max), 1/(2(mu n + L_max)))``;
    ``order`` is "random" (the theory), "permuted" or "cyclic"; ``max_iter`` counts epochs; the
    run stops when the gradient-mapping norm is ``<= tol``.
    """
    require_smooth(problem, "saga")
    if step is None:
        step = saga_default_step(problem)
    return run_table_method(
        problem, x0, method="saga", theta=1.0, step=step, **stop, order=order, seed=seed, off_clock=off_clock
    )
