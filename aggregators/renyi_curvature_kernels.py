"""Compiled per-item work of the Rényi weights' curvature (:mod:`aggregators.renyi_weight_hessian`).

The curvature of a chunk of items needs, per item, the tilted agents ``Q_i ∝ P_i^{γ_i} Q^{1-γ_i}``
(one exponential per agent and class), the right-hand sides ``M`` and the factors ``V``, ``d`` of
``H = diag(d) + Vᵀ V``, then a ``K x K`` solve per item (batched LAPACK) and a rearrangement of its
solution into the columns ``Z`` whose ``Z Zᵀ`` is the curvature (one BLAS product per chunk). The
NumPy form of the elementwise part (five array-sized temporaries, transposing copies) took 5.4 s of
the 10.2 s curvature of 20,000 items × 140 agents × 64 classes; here it is one pass per item
(:func:`tilted_columns`) and one rearranging pass (:func:`fill_columns`). Both are serial and release
the GIL: :func:`aggregators.renyi_weight_hessian.renyi_weight_curvature` runs whole chunks (kernels,
LAPACK and BLAS) in parallel threads instead.

Everything is scaled by ``D^{-1/2}``, ``D = diag(q)``: the solve is with
``H̃ = D^{-1/2} H D^{-1/2}``, whose eigenvalues lie in ``[min γ, 1]`` (:mod:`aggregators.renyi_kernels`:
``H`` relative to ``D_Q``), where ``H`` itself has eigenvalues as small as ``γ min_y q(y)``; and the
Fisher columns ``Jᵀ diag(√q)`` of :func:`aggregators.renyi_weight_hessian.curvature_columns` are then
the solution ``X = H̃^{-1} M̃ᵀ`` itself (``J = D^{-1/2} X``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.kernels.fastexp import exp_scaled
from solvers.kernels.vmax import vmax

_FM = {"nsz", "contract", "reassoc"}

Q_MIN = 1e-300
"""Aggregate probabilities are read as at least this (``1/√q`` scales the columns)."""


@njit(cache=True, nogil=True, fastmath=_FM)
def tilted_columns(La, rows, agents, pos, gam, colscale, sv, dg, R, Mt, Vt, dq, isq):
    """For each item ``j`` of the chunk (data row ``rows[j]``, aggregate ``r = R[j]``, ``q = e^r``):

    - ``Mt[j, i] = colscale_i (Q_i - q) / √q``         for every agent ``i`` (``La``'s ``agents[i]``);
    - ``Vt[j, pos_i] = sv_{pos_i} Q_i / √q``            for the agents with ``pos_i >= 0`` (positive weight);
    - ``dq[j] = Σ_{pos_i >= 0} dg_{pos_i} Q_i / q``     (the diagonal of ``H̃``);
    - ``isq[j] = 1 / √q``.

    ``Q_i ∝ exp(γ_i L_i + (1 - γ_i) r)`` normalised over the classes. Outputs in their own dtype.
    """
    m = rows.shape[0]
    A = agents.shape[0]
    K = La.shape[2]
    x = np.empty(K)
    e = np.empty(K)
    q = np.empty(K)
    iq = np.empty(K)
    acc = np.empty(K)
    for j in range(m):
        acc[:] = 0.0
        r = R[j]
        for y in range(K):
            q[y] = max(np.exp(r[y]), Q_MIN)
            iq[y] = 1.0 / np.sqrt(q[y])
            isq[j, y] = iq[y]
        row = rows[j]
        for i in range(A):
            g = gam[i]
            src = La[row, agents[i]]
            for y in range(K):
                x[y] = g * src[y] + (1.0 - g) * r[y]
            exp_scaled(x, 1.0, e, vmax(x))
            t = 0.0
            for y in range(K):
                t += e[y]
            iv = 1.0 / t
            cs = colscale[i]
            for y in range(K):
                Qy = e[y] * iv
                Mt[j, i, y] = cs * (Qy - q[y]) * iq[y]
            p = pos[i]
            if p >= 0:
                s = sv[p] * iv
                dd = dg[p] * iv
                for y in range(K):
                    Vt[j, p, y] = s * e[y] * iq[y]
                    acc[y] += dd * e[y]
        for y in range(K):
            dq[j, y] = acc[y] / q[y]


@njit(cache=True, nogil=True)
def fill_columns(XT, labels, isq, cf, ce, out):
    """``out[i, j (K+1) + y] = cf_j X_j[i, y]`` (the Fisher columns) and ``out[i, j (K+1) + K] =
    ce_j X_j[i, y_j] / √q_j(y_j)`` (the item's own gradient) for the ``m`` items of ``XT`` (m, A, K)."""
    m, A, K = XT.shape
    for i in range(A):
        for j in range(m):
            o = j * (K + 1)
            c = cf[j]
            for y in range(K):
                out[i, o + y] = c * XT[j, i, y]
            lab = labels[j]
            out[i, o + K] = ce[j] * XT[j, i, lab] * isq[j, lab]
