"""Agora's shared numerical core: problems, solvers and one result type.

Knows nothing of pools, markets or HTTP. ``minimize(problem, method)`` runs any registered solver
by name; ``available(problem)`` lists the ones that apply.
"""

from . import kernel_cache  # noqa: F401  (keys numba's cache by the sources; first, before any kernel)
from .errors import InputError
from .problem import CAPABILITIES, Problem, capability, offers
from .progress import Cancelled, ProgressFn
from .registry import available, choose, minimize, register
from .result import SolveResult, Trace

__all__ = [
    "CAPABILITIES",
    "InputError",
    "Problem",
    "capability",
    "offers",
    "Cancelled",
    "ProgressFn",
    "available",
    "choose",
    "minimize",
    "register",
    "SolveResult",
    "Trace",
]

# Every module of solvers.methods registers its solvers on import.
from . import methods  # noqa: E402,F401
