"""Finito / MISO, Prox-Finito, SDCA (three variants) and SGD epochs for linear models.

Shared conventions: ``f_i(x) = phi(a_i . x, y_i) + (mu/2)|x|^2`` (each term mu-strongly convex,
``mu = l2``); one stored scalar ``s_i = phi'(a_i . phi_i)`` per term, so
``f'_i(phi_i) = s_i a_i + mu phi_i``; running sums ``Sphi = sum_i phi_i`` and ``Sg = sum_i s_i a_i``.
Rows are read through :func:`row_dot` / :func:`row_axpy` (dense or CSR).
"""

from __future__ import annotations

from numba import njit

from .losses import (
    l1_step_and_average,
    loss_conj,
    loss_conj_deriv,
    loss_deriv,
    loss_prox,
    row_axpy,
    row_dot,
    sgd_step_size,
)


@njit(cache=True)
def finito_epoch(loss, X, data, indices, indptr, sparse, y, smoothing, idx, phi, s, Sphi, Sg, w, alpha, mu, l2):
    """Finito (seed 001 Alg 3.1, Eq. 3.1), MISO when ``alpha = L/mu`` (Eq. 3.2).

    w = phibar - (1/(alpha mu n)) sum_i f'_i(phi_i); phi_j <- w; store f'_j(w). ``w`` holds the
    point computed from the final state on exit. ``mu`` sets the step, ``l2`` is the ridge inside
    the terms (``f'_i(phi_i) = s_i a_i + l2 phi_i``).
    """
    n = phi.shape[0]
    d = w.shape[0]
    c_g = 1.0 / (alpha * mu * n)
    c_phi = 1.0 / n - l2 * c_g
    for j in idx:
        for c in range(d):
            w[c] = c_phi * Sphi[c] - c_g * Sg[c]
        s_new = loss_deriv(loss, row_dot(X, data, indices, indptr, sparse, j, w), y[j], smoothing)
        for c in range(d):
            Sphi[c] += w[c] - phi[j, c]
            phi[j, c] = w[c]
        row_axpy(X, data, indices, indptr, sparse, j, s_new - s[j], Sg)
        s[j] = s_new
    for c in range(d):
        w[c] = c_phi * Sphi[c] - c_g * Sg[c]


@njit(cache=True)
def prox_finito_epoch(loss, X, data, indices, indptr, sparse, y, smoothing, idx, phi, s, Sphi, Sg, sqn, z, mu):
    """Prox-Finito (seed 001 Alg 3.3, Eq. 3.11), eta = mu (n - 1).

    z = (1/(n-1)) sum_{i != j} phi_i - (1/eta) sum_{i != j} f'_i(phi_i);
    phi_j = prox_eta^{f_j}(z) = argmin_x f_j(x) + (eta/2)|x - z|^2 (the L260 prox convention),
    solved through the 1-D prox of phi: with u = a.x, v = eta a.z/(mu+eta), t = |a|^2/(mu+eta),
    u = prox_{t phi}(v), beta = (v - u)/t and phi_j = (eta z - beta a)/(mu + eta).
    """
    n = phi.shape[0]
    d = z.shape[0]
    eta = mu * (n - 1)
    for j in idx:
        for c in range(d):
            z[c] = (Sphi[c] - phi[j, c]) / (n - 1) - (mu * (Sphi[c] - phi[j, c])) / eta
        # the data part of sum_{i != j} f'_i: Sg - s_j a_j
        row_axpy(X, data, indices, indptr, sparse, j, s[j] / eta, z)
        for c in range(d):
            z[c] -= Sg[c] / eta
        tt = sqn[j] / (mu + eta)
        v = eta * row_dot(X, data, indices, indptr, sparse, j, z) / (mu + eta)
        if tt > 0.0:
            u = loss_prox(loss, v, y[j], tt, smoothing)
            beta = (v - u) / tt
        else:
            beta = loss_deriv(loss, v, y[j], smoothing)
        for c in range(d):
            newp = eta * z[c] / (mu + eta)
            Sphi[c] += newp - phi[j, c]
            phi[j, c] = newp
        row_axpy(X, data, indices, indptr, sparse, j, -beta / (mu + eta), phi[j])
        row_axpy(X, data, indices, indptr, sparse, j, -beta / (mu + eta), Sphi)
        row_axpy(X, data, indices, indptr, sparse, j, beta - s[j], Sg)
        s[j] = beta


@njit(cache=True)
def sdca_epoch(loss, X, data, indices, indptr, sparse, y, smoothing, idx, beta, x, sqn, mu, variant, sconst):
    """SDCA (seed 001 Alg 2.1, L438-491) with one dual scalar per term (L493-503).

    Sign convention of the seed: x = -(1/(mu n)) sum_i beta_i a_i, beta_i -> phi'(a_i . x*).
    variant 0: exact step, the prox form of Primal SDCA (Alg 3.2 / Eq. 3.6):
        u = prox_{t phi}(a.z), t = |a_j|^2/(mu n), z = x + beta_j a_j/(mu n), beta_j = (a.z - u)/t;
    variant 1: interval line search over s in [0, 1] of
        phi*(beta_j + s d) + (mu n/2)|x - (s d/(mu n)) a_j|^2, with d = phi'(a_j.x) - beta_j
        (bisection on the derivative, 50 halvings);
    variant 2: constant step s = ``sconst`` (the seed's mu n/(mu n + L)).
    """
    n = beta.shape[0]
    mun = mu * n
    for j in idx:
        q = sqn[j]
        if q == 0.0:
            continue
        ax = row_dot(X, data, indices, indptr, sparse, j, x)
        bj = beta[j]
        if variant == 0:
            tt = q / mun
            az = ax + bj * tt
            u = loss_prox(loss, az, y[j], tt, smoothing)
            bnew = (az - u) / tt
        else:
            dd = loss_deriv(loss, ax, y[j], smoothing) - bj
            if dd == 0.0:
                continue
            if variant == 2:
                sbest = sconst
            else:
                k2 = dd * dd * q / mun
                g0 = dd * (loss_conj_deriv(loss, bj, y[j], smoothing) - ax)
                g1 = dd * (loss_conj_deriv(loss, bj + dd, y[j], smoothing) - ax) + k2
                if g0 >= 0.0:
                    sbest = 0.0
                elif g1 <= 0.0:
                    sbest = 1.0
                else:
                    lo = 0.0
                    hi = 1.0
                    for _ in range(50):
                        mid = 0.5 * (lo + hi)
                        gm = dd * (loss_conj_deriv(loss, bj + mid * dd, y[j], smoothing) - ax) + mid * k2
                        if gm > 0.0:
                            hi = mid
                        else:
                            lo = mid
                    sbest = 0.5 * (lo + hi)
            bnew = bj + sbest * dd
        row_axpy(X, data, indices, indptr, sparse, j, -(bnew - bj) / mun, x)
        beta[j] = bnew


@njit(cache=True)
def sdca_dual_terms(loss, beta, y, smoothing):
    r = 0.0
    for i in range(beta.shape[0]):
        r += loss_conj(loss, beta[i], y[i], smoothing)
    return r


@njit(cache=True)
def sgd_epoch(loss, X, data, indices, indptr, sparse, y, smoothing, idx, x, k0, schedule, g0, l2, l1, xavg, avg_from):
    """SGD x <- prox_{g_k l1}(x - g_k f'_j(x)) (seed 001 section 2.1 L392-404; seed 003 6.3).

    schedule 0 constant g0; 1 ``g0 / (1 + g0 l2 k)`` (the classical theta/k with theta = 1/mu,
    shifted so that the first step is g0); 2 ``g0 / sqrt(1 + k)``. ``xavg`` (length 0 to skip)
    holds the running average of the iterates from step ``avg_from`` on. Returns the new k.
    """
    d = x.shape[0]
    k = k0
    acc = xavg.shape[0] > 0
    for j in idx:
        st = sgd_step_size(schedule, g0, l2, k)
        sj = loss_deriv(loss, row_dot(X, data, indices, indptr, sparse, j, x), y[j], smoothing)
        r = 1.0 - st * l2
        for c in range(d):
            x[c] *= r
        row_axpy(X, data, indices, indptr, sparse, j, -st * sj, x)
        k = l1_step_and_average(x, st * l1, k, acc, avg_from, xavg)
    return k
