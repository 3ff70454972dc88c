"""``solver="auto"`` for the linear models of :mod:`solvers.problems.linear_models`.

Rule (from ``benchmarks/bench_incremental.py``, see ``benchmarks/results/solvers-incremental.md``):
hinge loss -> ``sdca`` (the only solver here for a non-smooth loss with a certificate); an l1 term
-> ``saga`` (prox, lazy updates on sparse rows); dense smooth problems -> ``svrg`` (one compiled
row pass per step plus a BLAS snapshot; with L-BFGS the fastest measured on n=1e5, d=100); sparse
smooth problems -> ``lbfgs`` (quasi-Newton: on the benchmark's unit-norm sparse rows each
evaluation is one cheap sparse pass and it needed 5-20x less time than every stochastic method).
Other problems defer to the other rules (Newton, EM...). Registered last (module name), so it is
consulted first.
"""

from __future__ import annotations

from ..registry import register_auto_rule


def _rule(problem) -> str | None:
    lt = getattr(problem, "linear_terms", None)
    if lt is None:
        return None
    if not getattr(problem, "smooth", True):
        return "sdca"
    if getattr(problem, "l1", 0.0) > 0:
        return "saga"
    if not lt.sparse:
        return "svrg"
    return "lbfgs"


register_auto_rule(_rule)
