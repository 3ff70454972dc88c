"""Agora's REST service (FastAPI): pools, markets and solvers as resources."""

__version__ = "0.1.0"
