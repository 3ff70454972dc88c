"""Finito, MISO and Prox-Finito (seed 001 Algs 3.1 and 3.3, Eqs. 3.1, 3.2 and 3.11).

Finito (each f_i mu-strongly convex, no prox):

    w = phibar - (1/(alpha mu n)) sum_i f'_i(phi_i);  pick j;  phi_j <- w;  store f'_j(w).

alpha is an INVERSE step: default ``alpha = 2`` when the big-data condition ``n >= 2 L/mu`` holds
(Thm 3.1); otherwise the seed's conjecture that the step shrinks in proportion (L706),
``alpha = min(L/mu, 4 L/(mu n))`` (never past MISO's ``alpha = L/mu``). Default order "permuted"
(a fresh permutation every epoch; the seed's fastest, L694-700; cyclic order diverges).
MISO (Mairal 2013, Eq. 3.2) is Finito with ``alpha = L/mu`` (works with any order).

Prox-Finito: ``eta = mu (n-1)``, ``z = (1/(n-1)) sum_{i!=j} phi_i - (1/eta) sum_{i!=j} f'_i(phi_i)``,
``phi_j = prox_eta^{f_j}(z) = argmin f_j(x) + (eta/2)|x - z|^2`` (the L260 convention), returning
``phibar - (1/(mu n)) sum f'_i(phi_i)``. It needs the prox of a term, so only linear models.

Storage: the points phi_i (``n x dim``) plus one scalar per term for linear models; the generic
path (any problem with ``term_grad`` and ``mu > 0``) keeps full gradient tables. Multinomial logistic
regression stores one K-vector per term (:mod:`solvers.kernels_incremental.multinomial`).
"""

from __future__ import annotations

from typing import Unpack

import numpy as np

from ..errors import InputError
from ..kernels_incremental.losses import all_derivs
from ..kernels_incremental.multinomial import full_pass as mn_full_pass
from ..kernels_incremental.multinomial import mn_finito_epoch
from ..kernels_incremental.table_methods import finito_epoch, prox_finito_epoch
from ..monitor import Stop
from ..problem import capability
from ..registry import register
from ._incremental_common import DEFAULT_TOL, IndexDraws, Monitor, constant, require_smooth, start, term_mu

MAX_TABLE_BYTES = 4 * 2**30


def _mu_L(problem, method):
    mu = term_mu(problem)
    if mu <= 0:
        raise InputError("problem", f"solver {method!r} needs a strongly convex problem (mu > 0); add an l2 term")
    L = constant(problem, "L_max") or constant(problem, "L")
    if L is None:
        raise InputError("problem", f"solver {method!r} needs L_max (or L)")
    return mu, L


def finito_default_alpha(n: int, mu: float, L: float) -> float:
    if n >= 2.0 * L / mu:
        return 2.0
    return max(2.0, min(L / mu, 4.0 * L / (mu * n)))


def _table(problem, method):
    n, d = problem.n_terms, problem.dim
    if 8.0 * n * d > MAX_TABLE_BYTES:
        raise InputError(
            "problem", f"{method}: the point table needs {8.0 * n * d / 2**30:.1f} GiB (n x dim); use 'saga' or 'svrg'"
        )
    return np.empty((n, d))


def _run_finito(problem, x0, method, alpha, order, seed, off_clock, check_every, **stop: Unpack[Stop]):
    """Finito with inverse step ``alpha``; ``alpha=None``: Finito's default (big-data condition), or
    MISO's ``L/mu`` when ``method == "miso"``."""
    draw = IndexDraws(order, seed, problem.n_terms)
    require_smooth(problem, method)
    if capability(problem, "l1", 0.0):
        raise InputError("problem", f"solver {method!r} has no prox; the problem has an l1 term (use 'saga' or 'svrg')")
    mu, L = _mu_L(problem, method)
    if alpha is None:
        alpha = L / mu if method == "miso" else finito_default_alpha(problem.n_terms, mu, L)
    if not alpha > 0:
        raise InputError("alpha", f"must be > 0; got {alpha}")
    mon = Monitor(problem, method, **stop)
    mon.off_clock = off_clock
    mon.check_every = int(check_every)
    x = start(problem, x0)
    n = problem.n_terms
    phi = _table(problem, method)
    phi[:] = x
    Sphi = n * x
    lt = capability(problem, "linear_terms")
    mt = capability(problem, "multinomial_terms")
    if lt is not None:
        s = np.empty(n)
        all_derivs(lt.loss, *lt.args(), lt.y, x, lt.smoothing, s)
        Sg = np.asarray(problem.A.T @ s, dtype=np.float64)
    elif mt is not None:
        _, s, Sg = mn_full_pass(problem, x)
        Sg = Sg * n
    else:
        G = np.array([problem.term_grad(i, x) for i in range(n)])
        SG = G.sum(axis=0)
    mon.passes += 1
    w = x.copy()
    epoch = 0
    while not mon.check(w, epoch):
        idx = draw()
        if lt is not None:
            finito_epoch(lt.loss, *lt.args(), lt.y, lt.smoothing, idx, phi, s, Sphi, Sg, w, alpha, mu, problem.l2)
        elif mt is not None:
            mn_finito_epoch(*mt.args(), mt.labels, idx, phi, s, Sphi, Sg, w, alpha, mu, problem.l2)
        else:
            for j in idx:
                w = Sphi / n - SG / (alpha * mu * n)
                g = problem.term_grad(int(j), w)
                Sphi += w - phi[j]
                phi[j] = w
                SG += g - G[j]
                G[j] = g
            w = Sphi / n - SG / (alpha * mu * n)
        mon.passes += 1
        epoch += 1
    return mon.result(w, epoch, alpha=alpha, phibar=Sphi / n, compiled=lt is not None or mt is not None)


@register("finito", needs=("term_grad", "mu"), constraints=("none",), tol=DEFAULT_TOL, max_iter=300)
def finito(
    problem, x0=None, *, alpha=None, order="permuted", seed=0, off_clock=False, check_every=1, **stop: Unpack[Stop]
):
    """Finito (seed 001 Alg 3.1): inverse step ``alpha`` (default 2 under the big-data condition), permuted order."""
    return _run_finito(problem, x0, "finito", alpha, order, seed, off_clock, check_every, **stop)


@register("miso", needs=("term_grad", "mu"), constraints=("none",), tol=DEFAULT_TOL, max_iter=300)
def miso(problem, x0=None, *, order="random", seed=0, off_clock=False, check_every=1, **stop: Unpack[Stop]):
    """MISO (Mairal 2013; seed 001 Eq. 3.2): Finito with ``alpha = L/mu``."""
    return _run_finito(problem, x0, "miso", None, order, seed, off_clock, check_every, **stop)


@register("prox_finito", needs=("ridge_terms", "mu"), constraints=("none",), tol=DEFAULT_TOL, max_iter=300)
def prox_finito(problem, x0=None, *, order="random", seed=0, off_clock=False, **stop: Unpack[Stop]):
    """Prox-Finito (seed 001 Alg 3.3): each step solves the prox of one term (a 1-D problem for the
    binary linear models, a K-dimensional Newton solve for multinomial logistic regression)."""
    draw = IndexDraws(order, seed, problem.n_terms)
    if capability(problem, "l1", 0.0):
        raise InputError("problem", "solver 'prox_finito' has no prox for h; the problem has an l1 term")
    mu, _ = _mu_L(problem, "prox_finito")
    n = problem.n_terms
    if n < 2:
        raise InputError("prox_finito", "needs at least two terms")
    x = start(problem, x0)
    mt = capability(problem, "multinomial_terms")
    if mt is not None:  # one K-vector per term; the prox of a term is a K-dimensional Newton solve
        from ..kernels_incremental.multinomial import multinomial_scores
        from ..kernels_incremental.multinomial_sdca import mn_prox_finito_epoch

        s = np.empty((n, mt.K))
        multinomial_scores(*mt.args(), mt.labels, x, s)
        sqn = np.ascontiguousarray(problem.sqnorms, dtype=np.float64)

        def epoch(idx, phi, s, Sphi, Sg, z):
            mn_prox_finito_epoch(*mt.args(), mt.labels, idx, phi, s, Sphi, Sg, sqn, z, mu)
    else:  # one scalar per term; the prox of a term is a 1-D problem
        lt = problem.linear_terms
        s = np.empty(n)
        all_derivs(lt.loss, *lt.args(), lt.y, x, lt.smoothing, s)

        def epoch(idx, phi, s, Sphi, Sg, z):
            prox_finito_epoch(lt.loss, *lt.args(), lt.y, lt.smoothing, idx, phi, s, Sphi, Sg, lt.sqnorms, z, mu)

    mon = Monitor(problem, "prox_finito", **stop)
    mon.off_clock = off_clock
    phi = _table(problem, "prox_finito")
    phi[:] = x
    Sphi = n * x
    Sg = np.asarray(problem.A.T @ s, dtype=np.float64).ravel()  # sum_i a_i s_i (x's layout)
    mon.passes += 1
    z = np.empty(problem.dim)
    xr = Sphi / n - (Sg + mu * Sphi) / (mu * n)
    k = 0
    while not mon.check(xr, k):
        epoch(draw(), phi, s, Sphi, Sg, z)
        xr = Sphi / n - (Sg + mu * Sphi) / (mu * n)
        mon.passes += 1
        k += 1
    return mon.result(xr, k, compiled=True)
