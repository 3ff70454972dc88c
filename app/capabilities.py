"""What the library offers in this deployment (pools, solvers, markets), for ``GET /health``."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import markets.training  # noqa: F401 - the markets are part of every deployment
from aggregators.registry import POOL_METHODS
from solvers import available


@lru_cache
def capabilities() -> dict[str, Any]:
    """``pool_methods`` (the pool registry's names), ``solvers`` (the registered solvers) and
    ``markets`` (machine-learning markets are served)."""
    return {"pool_methods": list(POOL_METHODS), "solvers": available(), "markets": True}
