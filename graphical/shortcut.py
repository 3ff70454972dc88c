"""SHORTCUT: approximate conditional covariance thresholding (η = 1) in expected ``O(p^2.5)``.

Seed 001 chapter 8, Alg 8.1 (l.2928-2956) with maxProduct, Alg 8.2 (l.2959-2986; McAuley & Caetano
2011). CCT's inner minimum ``min_k |C_ij - C_ik C_kj / C_kk|`` is replaced by (l.2912-2920)

    W_ij = max{0, min_{k ∈ V∖{i,j}} (|C_ij| - sgn(C_ij) C_ik C_kj / C_kk)}
         = sqrt(C_ii C_jj) · max{0, |C̄_ij| - max(0, max_k sgn(C̄_ij) C̄_ik C̄_kj)},

the min applying to the whole expression (notes pitfall 8) and the empty conditioning set being a
candidate as in CCT (``|S| <= η``), which is the inner ``max(0, ·)``: a pair whose every path product
has the opposite sign keeps ``|C_ij|``. ``W`` equals CCT η = 1 wherever no path product exceeds
``|C̄_ij|`` and is 0 (CCT: small and positive) where one does; so ``W <= W_CCT`` everywhere.

The maximum of path products is found with maxProduct over each row's off-diagonal correlations
sorted by sign: positive entries descending (``P_i``), negative ones by descending magnitude
(``N_i``). For ``C̄_ij >= 0`` the products come from ``P_i ∩ P_j`` and ``N_i ∩ N_j``; for ``C̄_ij < 0``
from ``P_i ∩ N_j`` and ``N_i ∩ P_j``, and the branch subtracts their maximum (the printed "+" at
l.2947 is a typo: notes pitfall 8). Alg 8.1 takes ``|C̄_j*|`` in that branch; we take ``-C̄_j*``, so a
``k`` met in one list that is not in the other gives a non-positive product and can never win.

Alg 8.1 works in correlation units; its threshold is "prescaled" (l.2924; ``1/sqrt(C_ii C_jj)``, not
``C_kk``: pitfall 8). Here :func:`shortcut` returns ``W`` in the units of the input (multiplied back
by ``sqrt(C_ii C_jj)``) and keeps ``W_ij >= t``, which is the correlation-unit test against
``t / sqrt(C_ii C_jj)``. On a correlation matrix the two units agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numba as nb
import numpy as np

from graphical.checks import as_covariance
from graphical.thresholding import threshold


@dataclass(frozen=True)
class ShortcutResult:
    """SHORTCUT's weights, the graph at the threshold (``None`` without one) and its work count.

    ``examined`` counts the sorted-list entries maxProduct looked at (the seed's "pairwise products",
    l.2958; the naive method looks at ``p - 2`` per pair), summed over the ``p(p-1)/2`` pairs.
    """

    weights: np.ndarray
    graph: np.ndarray | None
    examined: int

    @property
    def examined_per_pair(self) -> float:
        p = self.weights.shape[0]
        return self.examined / (p * (p - 1) / 2)


def sorted_by_sign(R: np.ndarray) -> tuple[np.ndarray, ...]:
    """Alg 8.1's preprocessing: per row, the positive and negative off-diagonal entries sorted by ``|·|``.

    Returns ``(pos, npos, pos_rank, neg, nneg, neg_rank)``: ``pos[i, :npos[i]]`` lists the ``k`` with
    ``R_ik > 0`` by descending ``R_ik`` (``P_i``), ``pos_rank[i, k]`` is ``k``'s position there (the
    inverse map ``P_i^{-1}``) or ``p`` if ``k`` is not in it; the same for ``R_ik < 0`` (``N_i``).
    """
    p = R.shape[0]
    off = R.copy()
    np.fill_diagonal(off, 0.0)
    out: list[np.ndarray] = []
    for signed in (off, -off):
        order = np.argsort(-signed, axis=1, kind="stable").astype(np.int32)
        n = (signed > 0).sum(axis=1).astype(np.int32)
        rank = np.empty((p, p), dtype=np.int32)
        np.put_along_axis(rank, order, np.broadcast_to(np.arange(p, dtype=np.int32), (p, p)), axis=1)
        rank[rank >= n[:, None]] = p
        out += [order, n, rank]
    return tuple(out)


@nb.njit(cache=True)
def _max_product(va, sa, La, na, Ra, vb, sb, Lb, nb_, Rb):  # pragma: no cover - compiled
    """Alg 8.2: ``max(0, max_{k ∈ A ∩ B} (sa·va_k)(sb·vb_k))`` with lists sorted by descending ``s·v``.

    ``A`` holds the ``k`` with ``sa·va_k > 0``, ``Ra[k]`` is ``k``'s position in ``A`` or the sentinel
    ``p`` (the rows have a zero diagonal, so ``k = a`` or ``b`` never scores). Scans both lists in step; an entry of ``A`` at position ``r`` in ``B`` caps ``B``'s
    useful length at ``r`` (everything later in both lists is dominated by it) and vice versa.
    Returns ``(max, entries examined)``.
    """
    best = 0.0
    end_a = na
    end_b = nb_
    s = 0
    while s < end_a and s < end_b:
        # branch-free: a k of A that is not in B has sb·vb_k <= 0 (a product <= 0 cannot win) and
        # rank Rb[k] = len(B)'s sentinel p (cannot shorten B); the same with A and B swapped
        k = La[s]
        best = max(best, sa * va[k] * sb * vb[k])
        end_b = min(end_b, Rb[k])
        k = Lb[s]
        best = max(best, sa * va[k] * sb * vb[k])
        end_a = min(end_a, Ra[k])
        s += 1
    return best, 2 * s


@nb.njit(cache=True)
def _shortcut_kernel(R, pos, npos, prank, neg, nneg, nrank):  # pragma: no cover - compiled
    """Alg 8.1's double loop in correlation units, with the sign-fixed negative branch."""
    p = R.shape[0]
    W = np.zeros((p, p))
    seen = 0
    for i in range(p):
        ri = R[i]
        for j in range(i):
            rj = R[j]
            c = ri[j]
            if c >= 0.0:
                tl, s1 = _max_product(ri, 1.0, pos[i], npos[i], prank[i], rj, 1.0, pos[j], npos[j], prank[j])
                tr, s2 = _max_product(ri, -1.0, neg[i], nneg[i], nrank[i], rj, -1.0, neg[j], nneg[j], nrank[j])
            else:
                tl, s1 = _max_product(ri, 1.0, pos[i], npos[i], prank[i], rj, -1.0, neg[j], nneg[j], nrank[j])
                tr, s2 = _max_product(ri, -1.0, neg[i], nneg[i], nrank[i], rj, 1.0, pos[j], npos[j], prank[j])
            seen += s1 + s2
            w = abs(c) - max(tl, tr)
            if w < 0.0:
                w = 0.0
            W[i, j] = w
            W[j, i] = w
    return W, seen


def max_product(a: Any, b: Any) -> tuple[float, int]:
    """``max(0, max_k a_k b_k)`` over the ``k`` with ``a_k > 0`` and ``b_k > 0`` by Alg 8.2.

    Returns the maximum and the number of entries examined (``<= 2·len(a)``; expected ``O(sqrt(n))``
    when the two orders are independent, linear on the seed's "diamond", Fig 8.2).
    """
    va = np.ascontiguousarray(a, dtype=float)
    vb = np.ascontiguousarray(b, dtype=float)
    (pa, na, ra), (pb, nb_, rb) = (_one_list(v) for v in (va, vb))
    best, seen = _max_product(va, 1.0, pa, na, ra, vb, 1.0, pb, nb_, rb)
    return float(best), int(seen)


def _one_list(v: np.ndarray) -> tuple[np.ndarray, int, np.ndarray]:
    order = np.argsort(-v, kind="stable").astype(np.int32)
    n = int((v > 0).sum())
    rank = np.empty(v.size, dtype=np.int32)
    rank[order] = np.arange(v.size, dtype=np.int32)
    rank[rank >= n] = v.size
    return order, n, rank


def shortcut(C: Any, t: float | None = None, *, field: str = "covariance") -> ShortcutResult:
    """SHORTCUT's conditional-covariance weights of ``C`` and, given ``t``, the graph ``W_ij >= t``.

    ``C`` is a covariance or a correlation matrix (checked: symmetric, PSD, finite, ``p >= 2``).
    """
    A = as_covariance(C, field=field, nonzero_variance=True)
    sd = np.sqrt(np.diag(A))
    R = A / sd[:, None] / sd[None, :]
    np.fill_diagonal(R, 0.0)  # the kernel reads list membership off the sign of an entry
    Wbar, seen = _shortcut_kernel(R, *sorted_by_sign(R))
    W = Wbar * sd[:, None] * sd[None, :]
    return ShortcutResult(weights=W, graph=None if t is None else threshold(W, t), examined=int(seen))
