"""Compiled (numba) kernels of the markets, one idea per module.

Everything works on one item at a time (beliefs ``L`` of shape ``(A, K)`` in log space) and the
drivers loop over items in parallel (``prange``). Agent ``i`` is ``kind[i]`` (:data:`EXP` or
:data:`ISO`; logarithmic is isoelastic with ``eta = 1``), ``inv_eta[i]`` (``1/eta_i``: the exponent
of its effective belief, converted once from ``Agents.eta`` by :attr:`markets.agents.Agents.inv_eta`)
and its wealth ``W[i]``. Prices are normalised log-prices ``u`` (``c = exp(u)``,
``logsumexp(u) = 0``).

==========================  =====================================================================
module                      holds
==========================  =====================================================================
``potential``               the general path: spending, the potential Phi and its Newton
                            direction for any mix of agents, the start, ``item_spending``
``isoelastic``              the lean one-order path: ``P^g`` by the vectorised exp, one pass over
                            the agents, the Gram matrix, the workspace
``direction``               the Newton direction from the scaled Hessian (Cholesky of
                            :mod:`solvers.kernels.cholesky_factor`) and the chord step
``newton_cg``               the matrix-free Newton direction (conjugate gradients, O(K A) per
                            product) for many goods
``jacobi``                  the diagonal Newton step in log-prices: Newton-CG's global phase on
                            the general path
``woodbury``                the exact Newton direction of the general path for few agents
``anderson``                the Anderson-accelerated fixed point (memory 5, safeguarded)
``gram``                    eta = 2 markets in the agents' space: the scaling of the A x A Gram
                            matrix of ``P^(1/2)``, Newton in A dimensions, a row-major pass
``adjoint``                 the wealth gradient's adjoint solves (one CG solve per item)
``line_search``             the safeguarded step: mirror fall-back, capped first trial, Armijo
``equilibrium``             the drivers (Newton, the seed's fixed point, Anderson; per item and
                            in parallel): ``solve_item``, ``solve_items``, ``solve_iso_block``;
                            their chunks' buffers from an arena (:mod:`markets.workspace`)
``training``                Algorithm 2.4: ``batch_payouts``, ``online_epoch``
``zero_beliefs``            ``count_neginf``
``floor``                   the probability floor of validated beliefs: ``floor_rows``
``check``                   the equilibrium conditions at given prices (``check=True``), from
                            Table 2.4's investments, independent of ``potential``
``start_bound``             bounds on isoelastic prices: low warm starts lifted, dear ones boxed
==========================  =====================================================================
"""

from .direction import CHORD_RATIO
from .equilibrium import (
    iso_arena_size,
    items_arena_size,
    solve_iso_block,
    solve_item,
    solve_items,
    start_arena_size,
    start_prices,
)
from .floor import count_rows_below, floor_rows
from .isoelastic import iso_workspace_size
from .line_search import MAX_LOG_STEP
from .potential import EXP, ISO, item_spending
from .start_bound import lift_starts
from .training import batch_payouts, online_epoch
from .zero_beliefs import count_neginf

__all__ = [
    "CHORD_RATIO",
    "MAX_LOG_STEP",
    "EXP",
    "ISO",
    "solve_item",
    "solve_items",
    "solve_iso_block",
    "start_prices",
    "iso_arena_size",
    "items_arena_size",
    "start_arena_size",
    "iso_workspace_size",
    "item_spending",
    "batch_payouts",
    "online_epoch",
    "count_neginf",
    "count_rows_below",
    "floor_rows",
    "lift_starts",
]
