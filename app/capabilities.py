"""What the library offers in this deployment (pools, solvers, markets), found at run time."""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Any


@lru_cache
def capabilities() -> dict[str, Any]:
    methods = []
    try:
        from aggregators.registry import POOL_METHODS, _CLASSES

        for m in POOL_METHODS:
            mod, cls = _CLASSES[m]
            try:
                getattr(importlib.import_module(mod), cls)
                methods.append(m)
            except Exception:
                pass
    except Exception:
        pass
    try:
        from solvers import available

        solvers = available()
    except Exception:
        solvers = []
    try:
        importlib.import_module("markets.training")
        markets = True
    except Exception:
        markets = False
    return {"pool_methods": methods, "solvers": solvers, "markets": markets}
