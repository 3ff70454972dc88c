"""Problem definitions implementing the protocol of :mod:`solvers.problem`, one module per family."""
