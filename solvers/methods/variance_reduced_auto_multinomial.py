"""``solver="auto"`` for :class:`~solvers.problems.linear_models.MultinomialLogistic` (softmax regression).

Rule (measured by ``benchmarks/bench_multinomial.py``, see ``benchmarks/results/solvers-incremental.md``,
section "Multinomial (compiled kernels)"): an l1 term -> ``saga`` (prox; on make_classification
n=20000, d=100, K=10 it reached 1e-6 in 1.3-6.7 s where FISTA needed 12-18 s and SVRG was slower);
otherwise -> ``lbfgs`` (fastest of ours on digits, where every stochastic method is slow at C = 1, and
on par with or ahead of the compiled SVRG on the generated problem). Newton, the rule that would
otherwise apply (dim <= 1000), forms the (dK x dK) Hessian column by column and was 100x slower.
A separate module (imported after ``newton``/``quasi_newton``, so consulted before them); it leaves
every other problem to the other rules.
"""

from __future__ import annotations

from ..registry import register_auto_rule


def _rule(problem) -> str | None:
    if getattr(problem, "multinomial_terms", None) is None:
        return None
    if getattr(problem, "l1", 0.0) > 0:
        return "saga"
    return "lbfgs"


register_auto_rule(_rule)
