"""A third-order correction of the general path's Newton step, for its last steps.

Newton's method on the clearing residual converges quadratically: on the mixed markets of
``benchmarks/bench_markets_grid.py`` (eta = 2, 10, 30 and log agents) ``res_{t+1}`` is about
``0.4-0.6 res_t^2``, so a step from ``res = 3e-5`` lands at ``3e-10``, just above ``tol = 1e-10``,
and one more whole step (an evaluation, the direction's pass or products) is spent to cross it.
(The miss is Newton's own: solving the linear system to 1e-12 lands at the same place.)

The correction predicts the spending at the Newton point ``u + d`` to second order without an
evaluation. For an isoelastic agent of order ``g`` (``a = 1 - g``) its effective belief along ``d`` is
``Q_k(t) = Q_k e^(t a d_k) / sum_j Q_j e^(t a d_j)`` (seed 000 Eq. 2.35), so with ``m = Q . d`` and
``s = Q . d^2``

    Q_k'  = a Q_k (d_k - m),
    Q_k'' = a^2 Q_k (d_k^2 - 2 m d_k + 2 m^2 - s),

and ``T(u + d) = T + sum_i W_i (Q_i' + Q_i'' / 2) + O(|d|^3)`` (logarithmic agents, ``a = 0``, do
not move): one pass over the agents' effective beliefs, two dot products and one update per agent,
the cost of one CG product (:func:`predicted_spending`). The step is then ``d + d2`` with ``d2``
solving the same system ``M d2 = b'(u + d)`` for the logarithmic right-hand side
(:func:`markets.kernels.newton_cg.newton_rhs`) at ``u + d`` with the predicted spending: a chord
step with the matrix at ``u`` on a residual known to ``O(|d|^3)``, so the error after ``d + d2`` is
``O(res^3)`` (Chebyshev's order). The Woodbury direction solves it with the same small matrix
(:func:`markets.kernels.woodbury.woodbury_resolve`), CG by a second solve.

It costs about half a step, so it is taken only where it is predicted to save one
(:func:`use_corrector`): from the constants of the last plain and corrected steps (``res_{t+1} /
res_t^2`` and ``/ res_t^3``), when one corrected step and the Newton steps after it are fewer than
the Newton steps alone; and only if the correction is small beside the step
(:func:`small_correction`), else the step is Newton's. Only markets without exponential
agents (their spending's second derivative is another formula; they keep plain Newton).

Measured in session 38 (one item each of the grid's mixed markets, ``tol = 1e-10``): logit 1,024 x
100 ``0.16 -> 9.6e-3 -> 3.1e-5 -> 3.4e-10 -> 1.5e-15`` by Newton against ``0.16 -> 6.9e-4 ->
1.6e-10`` with the correction at every step (the cubic constant 0.2-0.5).
"""

from __future__ import annotations

from numba import njit

from solvers.kernels.vmax import vmax_abs

from .line_search import trial
from .newton_cg import newton_rhs
from .potential import ISO

_FM = {"reassoc", "contract"}
DEFAULT_CONSTANT = 0.5
"""The quadratic and cubic rate constants assumed before a step has measured them (the grid's
mixed markets: 0.4-0.6 and 0.2-0.5)."""


@njit(cache=True, fastmath=_FM, error_model="numpy")
def predicted_spending(kind, inv_eta, W, Q, T, d, Tp):
    """``Tp = T + sum_i W_i (Q_i' + Q_i'' / 2)`` along ``d`` (module docstring): the spending at
    ``u + d`` to second order from the effective beliefs ``Q`` and spending ``T`` at ``u``.
    Isoelastic and logarithmic agents only."""
    A, K = Q.shape
    for k in range(K):
        Tp[k] = T[k]
    for i in range(A):
        a = 1.0 - inv_eta[i]
        w = W[i]
        if kind[i] != ISO or a == 0.0 or w == 0.0:
            continue
        q = Q[i]
        m = 0.0
        s = 0.0
        for k in range(K):
            qd = q[k] * d[k]
            m += qd
            s += qd * d[k]
        # W q_k [a (d_k - m) + a^2/2 (d_k^2 - 2 m d_k + 2 m^2 - s)] = W q_k (p0 + p1 d_k + p2 d_k^2)
        p0 = w * (-a * m + 0.5 * a * a * (2.0 * m * m - s))
        p1 = w * (a - a * a * m)
        p2 = w * 0.5 * a * a
        for k in range(K):
            dk = d[k]
            Tp[k] += q[k] * (p0 + dk * (p1 + dk * p2))


@njit(cache=True, error_model="numpy")
def newton_steps(res, C, tol):
    """Newton steps predicted from ``res`` to ``tol`` at ``res_{t+1} = C res_t^2`` (at most 30)."""
    n = 0
    r = res
    while r > tol and n < 30:
        r = C * r * r
        n += 1
        if C * r >= 1.0:  # no quadratic convergence predicted from here
            return 30
    return n


NEWTON_OPTIMISM = 0.5
"""Newton's steps without the correction are predicted with this fraction of the last measured
quadratic constant: the constant falls as Newton converges (session 38, two-agent mixed markets:
0.41 on the step into the quadratic region, 0.2 after it), and a correction taken on the larger
one saved no step there (every item of Dirichlet 256 x 2 took 4 steps either way) but cost its pass
and solve."""


@njit(cache=True, error_model="numpy")
def use_corrector(res, Cq, Cc, tol):
    """Whether one corrected step (to ``Cc res^3``) and the Newton steps after it (quadratic
    constant ``Cq``) are predicted to be fewer than the Newton steps from ``res`` (constant
    ``NEWTON_OPTIMISM * Cq``)."""
    if not (res > tol) or res >= 1.0:
        return False
    return 1 + newton_steps(Cc * res * res * res, Cq, tol) < newton_steps(res, NEWTON_OPTIMISM * Cq, tol)


MAX_CORRECTION = 0.25
"""The largest ``max |d2| / max |d|`` of a correction that is taken (:func:`small_correction`)."""


@njit(cache=True, error_model="numpy")
def small_correction(d, d2):
    """Whether the correction ``d2`` is at most :data:`MAX_CORRECTION` of the Newton step ``d``
    (largest entries). Near the answer it is about ``C res`` of it; a large one means the
    second-order prediction is outside its range (session 38, the grid's mixed markets of two
    agents after the diagonal steps: corrections of 0.31-1.16 of the step left the residual at
    0.2-1 of where it was, where Newton divides it by 10; the corrections that worked were at
    most 0.26 of their step)."""
    m = vmax_abs(d)
    m2 = vmax_abs(d2[: d.shape[0]])
    return m2 <= MAX_CORRECTION * m


@njit(cache=True, error_model="numpy")
def corrector_rhs(kind, inv_eta, W, Wsum, Q, T, u, d, b2, work):
    """``b2``: the logarithmic right-hand side at ``u + d`` (normalised) with the spending
    predicted by :func:`predicted_spending`. ``work``: 4 K floats. Returns False where a predicted
    spending is not positive (the logarithm is not defined; the caller keeps the Newton step)."""
    K = u.shape[0]
    Tp = work[:K]
    un = work[K : 2 * K]
    c = work[2 * K : 3 * K]
    x = work[3 * K : 4 * K]
    predicted_spending(kind, inv_eta, W, Q, T, d, Tp)
    for k in range(K):
        if not (Tp[k] > 0.0):
            return False
    trial(u, d, 1.0, un, x)
    newton_rhs(un, Tp, Wsum, True, b2, c, x)
    return True
