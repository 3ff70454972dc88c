"""Solver implementations, one module per method family; each registers itself on import.

Every module in this package is imported when ``solvers`` is imported, so adding a solver is adding
a module here that uses ``@solvers.registry.register``.
"""

import importlib
import pkgutil

for _m in pkgutil.iter_modules(__path__):
    if not _m.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_m.name}")
