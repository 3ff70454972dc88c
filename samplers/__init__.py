"""MCMC and stochastic-gradient samplers (seed 000 chapter 4): models, samplers, diagnostics.

Sits beside ``aggregators`` and ``markets`` above ``solvers``, and imports ``solvers`` only.
``sample(model, method, n_samples, theta0=..., step=...)`` runs any sampler of :data:`SAMPLERS`
("mh", "mala", "hmc", "sgld", "sghmc", "sgnht", "ccadl") and returns a :class:`SampleResult`.
"""

import solvers.kernel_cache  # noqa: F401  (keys numba's cache by the sources before any kernel compiles)

from .models import DRBM, Gaussian, LogisticRegression, Model, NormalGamma, TapeGradients
from .run import SAMPLERS, SampleResult, sample

__all__ = [
    "DRBM",
    "Gaussian",
    "LogisticRegression",
    "Model",
    "NormalGamma",
    "SAMPLERS",
    "SampleResult",
    "TapeGradients",
    "sample",
]
