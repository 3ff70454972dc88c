"""The ``auto`` rule of the primal-dual and splitting forms (priority in :data:`solvers.registry.AUTO_PRIORITY`).

A problem offering the saddle or ADMM form (:mod:`solvers.problems.erm`, ``generalized_lasso``,
``rpca``) is not smooth in general, so the quasi-Newton rule must not take it: the lasso and the elastic net
(squared-loss ERM with ``L1``/``ElasticNet``) go to ``coordinate_descent`` (against scikit-learn's ``Lasso``:
``benchmarks/results/lasso.md``), another composite problem (``prox``, ``smooth_value``, ``L``) to
``fista``, a problem offering only a split to ``admm``.
"""

from __future__ import annotations

from ..problem import offers
from ..registry import register_auto_rule
from .coordinate_descent import lasso_form


def _auto_rule(problem: object) -> str | None:
    if not (offers(problem, "saddle_point") or offers(problem, "splitting")):
        return None
    if lasso_form(problem) is not None:
        return "coordinate_descent"
    if offers(problem, "prox", "smooth_value", "L"):
        return "fista"
    return "admm" if offers(problem, "splitting") else "pdcp"


register_auto_rule("splitting_auto", _auto_rule)
