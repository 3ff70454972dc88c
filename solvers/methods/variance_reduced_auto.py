"""``solver="auto"`` for the linear models of :mod:`solvers.problems.linear_models`.

Rule (from ``benchmarks/bench_incremental.py --head-to-head``, see
``benchmarks/results/solvers-incremental.md``): hinge loss -> ``sdca`` (the only solver here for a
non-smooth loss with a certificate); an l1 term -> ``saga`` (prox, lazy updates on sparse rows);
every other (smooth, l1-free) model, dense or sparse -> ``lbfgs``. Each L-BFGS evaluation is one
fused compiled pass over the rows (``LinearModel.value_and_grad``) and an accepted unit step costs one
evaluation, so L-BFGS needs 3-11 passes to 1e-6 on the benchmark problems: on the dense problem
(n = 1e5, d = 100) about half the time of our SVRG (the previous dense rule) and on the sparse one
(5e4 x 2e4) 4-10x less than our scaled sparse SAGA, and below scikit-learn's and scipy's L-BFGS on all
four. Other problems defer to the other rules (Newton, EM...). Its rank among the rules is
``registry.AUTO_PRIORITY`` (20: after the multinomial rule, before quasi-Newton and Newton).
"""

from __future__ import annotations

from ..problem import capability
from ..registry import register_auto_rule


def _rule(problem) -> str | None:
    lt = capability(problem, "linear_terms")
    if lt is None:
        return None
    if not capability(problem, "smooth", True):
        return "sdca"
    if capability(problem, "l1", 0.0) > 0:
        return "saga"
    return "lbfgs"


register_auto_rule("variance_reduced_auto", _rule)
