"""SAG (seed 001 Alg 2.2, L535-547; SAGA-comparable form Eq. 4.4, L1457).

    x+ = x - step [ (f'_j(x) - f'_j(phi_j))/n + mean_i f'_i(phi_i) ] = x - step * (new table mean)

The seed's SAG parameter gamma is an INVERSE step (``x - (1/(gamma n)) sum_i y_i``); here
``step = 1/gamma``. Default ``step = 1/L_max``, Schmidt et al.'s practical choice the seed reports
(L706; the theory needs 1/(16 L)). Table initialised by a full gradient pass (Alg 2.2).
"""

from __future__ import annotations

from typing import Unpack

from ..errors import InputError
from ..monitor import Stop
from ..registry import register
from ._incremental_common import DEFAULT_TOL, constant, require_smooth
from .saga import run_table_method


@register("sag", needs=("term_grad",), constraints=("none", "simplex", "box"), tol=DEFAULT_TOL, max_iter=300)
def sag(problem, x0=None, *, step=None, order="random", seed=0, off_clock=False, **stop: Unpack[Stop]):
    """SAG (seed 001 Alg 2.2 / Eq. 4.4); ``step = 1/gamma`` defaults to ``1/L_max``."""
    require_smooth(problem, "sag")
    if step is None:
        L = constant(problem, "L_max") or constant(problem, "L")
        if L is None:
            raise InputError("step", "the problem offers no L_max/L, so give a step size")
        step = 1.0 / L
    return run_table_method(
        problem,
        x0,
        method="sag",
        theta=1.0 / problem.n_terms,
        step=step,
        **stop,
        order=order,
        seed=seed,
        off_clock=off_clock,
    )
