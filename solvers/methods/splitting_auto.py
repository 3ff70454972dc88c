"""The ``auto`` rule of the primal-dual and splitting forms (priority in :data:`solvers.registry.AUTO_PRIORITY`).

A problem offering the saddle or ADMM form (:mod:`solvers.problems.erm`, ``generalized_lasso``,
``rpca``) is not smooth in general, so the quasi-Newton rule must not take it: a composite problem
(``prox``, ``smooth_value``, ``L``) goes to ``fista``, a problem offering only a split to ``admm``.
"""

from __future__ import annotations

from ..problem import offers
from ..registry import register_auto_rule


def _auto_rule(problem: object) -> str | None:
    if not (offers(problem, "saddle_point") or offers(problem, "splitting")):
        return None
    if offers(problem, "prox", "smooth_value", "L"):
        return "fista"
    return "admm" if offers(problem, "splitting") else "pdcp"


register_auto_rule("splitting_auto", _auto_rule)
