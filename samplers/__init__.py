"""MCMC and stochastic-gradient samplers (seed 000 chapter 4): models, samplers, diagnostics.

Sits beside ``aggregators`` and ``markets`` above ``solvers``, and imports ``solvers`` only.
"""
