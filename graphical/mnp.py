"""The prox of the scale-free prior by the minimum-norm-point (MNP) algorithm (seed 001 §7.5.3, l.2813).

The seed compares its dual decomposition (Alg 7.1, :func:`graphical.degree_prior.prox_dual_decomposition`)
for the prox ``argmin_X s Ω(X) + ½|X - Z|_F^2`` of Ω (Prop 7.2) with subgradient descent and with the
MNP algorithm "adapted for computing the proximal operator (Bach, 2010b)" (Fig 7.3; notes §4: 15 ms per
MNP iteration against 0.82 ms for dual decomposition). This module is that MNP prox, written over the
edge variables ``x_e = X_ij`` (``i < j``):

* ``Ω(X) = f(|x|)`` with ``f`` the Lovász extension of ``F(S) = Σ_v h(d_S(v))`` (Prop 7.2), and
  ``½|X - Z|_F^2 = Σ_e (x_e - z_e)^2`` plus the free diagonal, so the prox is the prox of ``f(|.|)`` for
  the set function ``G = (s/2) F`` at ``z``.
* For a submodular ``G`` the unconstrained prox ``argmin_w g(w) + ½|w - t|^2`` is ``w = t - Π_{B(G)}(t)``
  (Bach's proximal problems for Lovász extensions; ``Π`` the projection onto the base polytope) and
  its level sets ``{w > a}`` solve ``min_A G(A) - t(A) + a|A|``; the constraint ``w >= 0`` leaves the
  levels ``a > 0`` alone, so the prox of ``g(|.|)`` is ``sign(z) max(|z| - Π_{B(G)}(|z|), 0)``
  (checked against the dual decomposition and cvxpy in ``tests/graphical/test_degree_prior.py``).
* ``Π_{B(G)}(t) - t`` is the minimum-norm point of ``B(G - t)``, found by Wolfe's algorithm (1976;
  Fujishige's use for submodular minimisation) with the greedy linear oracle: sort the edges by a
  direction, ascending, and give each its marginal gain ``(s/2)(h(d_u + 1) - h(d_u) + h(d_v + 1) -
  h(d_v)) - t_e``. Its certificate is Wolfe's gap ``|y|^2 - min_{q in B} <y, q>``.

Each major iteration adds one greedy vertex to the corral and the affine minimum-norm point of the
corral is a bordered solve with the corral's Gram matrix (kept up to date: one new row per vertex), so
an iteration costs ``O(m log m + m k + k^3)`` with ``m = p(p-1)/2`` edges and ``k`` corral vertices (up
to ``m + 1``): it is the general method the seed compares against, not a fast one.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def _greedy_vertex(
    order: np.ndarray, iu: np.ndarray, ju: np.ndarray, c: np.ndarray, half_s: float, t: np.ndarray, p: int
):
    """The vertex of ``B((s/2)F - t)`` minimising ``<direction, q>``, ``order`` the edges by ascending direction."""
    deg = np.zeros(p, np.int64)
    q = np.empty(order.shape[0])
    for e in order:
        u, v = iu[e], ju[e]
        q[e] = half_s * (c[deg[u]] + c[deg[v]]) - t[e]
        deg[u] += 1
        deg[v] += 1
    return q


def _affine_min_norm(gram: np.ndarray) -> np.ndarray:
    """The affine weights ``α`` (summing to 1) of the minimum-norm point of the affine hull of the corral,
    from its Gram matrix: the bordered system ``[[G, 1], [1^T, 0]] [α; μ] = [0; 1]``."""
    k = gram.shape[0]
    A = np.zeros((k + 1, k + 1))
    A[:k, :k] = gram
    A[:k, k] = A[k, :k] = 1.0
    b = np.zeros(k + 1)
    b[k] = 1.0
    return np.linalg.lstsq(A, b, rcond=None)[0][:k]


def prox_min_norm_point(
    Z: np.ndarray,
    c: np.ndarray,
    s: float,
    *,
    tol: float = 1e-10,
    max_iter: int = 10000,
    history: list[float] | None = None,
) -> tuple[np.ndarray, int, float]:
    """``argmin_X s Ω(X) + ½|X - Z|_F^2`` over symmetric X by Fujishige-Wolfe (see the module docstring).

    ``c``: the increments ``h(k+1) - h(k)`` (length ``>= p - 1``, non-negative, non-increasing: a
    tractable prior). Stops when Wolfe's gap ``|y|^2 - min_q <y, q>`` is at most ``tol · max(1, |y|^2)``.
    Returns ``(X, major iterations, gap)``; ``history`` receives the prox objective (of
    :func:`graphical.degree_prior.prox_objective`) at each major iteration's ``X``.
    """
    from .degree_prior import prox_objective

    p = Z.shape[0]
    iu, ju = np.triu_indices(p, 1)
    z = Z[iu, ju]
    t = np.abs(z)
    cc = np.ascontiguousarray(c[: p - 1], dtype=float)
    half_s = 0.5 * float(s)

    def vertex(direction: np.ndarray) -> np.ndarray:
        return _greedy_vertex(np.argsort(direction, kind="stable"), iu, ju, cc, half_s, t, p)

    def to_matrix(y: np.ndarray) -> np.ndarray:
        X = np.diag(np.diag(Z)).astype(float)
        x = np.sign(z) * np.maximum(-y, 0.0)
        X[iu, ju] = x
        X[ju, iu] = x
        return X

    Q = vertex(-t)[None, :]  # start from the greedy vertex in the order of decreasing |z|
    gram = Q @ Q.T
    lam = np.ones(1)
    y = Q[0].copy()
    gap, k = np.inf, 0
    while k < max_iter:
        k += 1
        q = vertex(y)
        yy = float(y @ y)
        gap = yy - float(y @ q)
        if history is not None:
            history.append(prox_objective(to_matrix(y), Z, c, s))
        if gap <= tol * max(1.0, yy):
            break
        g = Q @ q
        Q = np.vstack([Q, q])
        gram = np.block([[gram, g[:, None]], [g[None, :], np.array([[q @ q]])]])
        lam = np.append(lam, 0.0)
        while True:  # minor cycles: move to the affine minimum-norm point, dropping corral vertices
            alpha = _affine_min_norm(gram)
            if np.all(alpha > 1e-12):
                lam = alpha
                break
            neg = alpha <= 1e-12
            theta = float(np.min(lam[neg] / (lam[neg] - alpha[neg])))
            lam = (1.0 - theta) * lam + theta * alpha
            keep = lam > 1e-12
            Q, gram, lam = Q[keep], gram[np.ix_(keep, keep)], lam[keep] / lam[keep].sum()
        y = lam @ Q
    return to_matrix(y), k, gap
