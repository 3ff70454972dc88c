"""Diagnostics of a chain: effective sample size and integrated autocorrelation time by ArviZ (a
maintained implementation of Geyer's initial monotone sequence estimator, the one Stan uses), the
Monte Carlo standard errors derived from them, and the RMSE of a sample's density against an
analytic marginal (seed 000 Table 4.1).

The seed's autocorrelation time is ``tau = 1 + 2 sum_{s>=1} omega(s)`` (l.2270): with ``n`` draws
``tau = n / ESS``, which is how :func:`autocorrelation_time` reads it off ArviZ's ESS. The seed
does not say how the "RMSE of the distribution" was computed (binning or KDE); here it is the RMSE
over the bins of a normalised histogram against the analytic density at the bin centres, on the
central ``coverage`` mass of the analytic marginal.
"""

from __future__ import annotations

import importlib
import time
import warnings
from typing import Any

import numpy as np

from solvers.errors import InputError

ARVIZ_IMPORT_TRIES = 5


def _import_arviz() -> Any:
    """``import arviz``, surviving ArviZ 0.23's once-a-day stamp race.

    On import ArviZ 0.23 writes today's date to ``<user cache>/arviz/daily_warning`` through a temporary
    file of a fixed name (``daily_warning.tmp``, then ``replace``). Two processes importing it for the
    first time in a day write the same temporary file, and the one whose ``replace`` comes second finds
    it gone: ``FileNotFoundError``, the import fails. It failed this project's CI on 2026-11-30 (00:2x UTC,
    two pytest-xdist workers collecting the sampler tests). By then the other process has written the
    stamp, so importing again skips the write; a service's worker processes meet the same race."""
    for attempt in range(ARVIZ_IMPORT_TRIES):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # ArviZ announces its refactor on import
                return importlib.import_module("arviz")
        except FileNotFoundError:
            if attempt == ARVIZ_IMPORT_TRIES - 1:
                raise
            time.sleep(0.02 * (attempt + 1))
    raise AssertionError("unreachable")


az = _import_arviz()


def _chain(x: Any) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim != 1 or a.size < 4 or not np.isfinite(a).all():
        raise InputError("samples", f"must be a finite 1-D chain of at least 4 draws; got shape {a.shape}")
    return a


def ess(x: Any) -> float:
    """Bulk effective sample size of one chain (ArviZ ``ess``, ``method="bulk"``)."""
    return float(az.ess(_chain(x)[None, :], method="bulk"))


def ess_all(samples: Any) -> np.ndarray:
    """:func:`ess` of every column of an ``(n, D)`` sample."""
    s = np.asarray(samples, dtype=float)
    return np.array([ess(s[:, d]) for d in range(s.shape[1])])


def autocorrelation_time(x: Any) -> float:
    """Integrated autocorrelation time ``n / ESS`` (the seed's ``1 + 2 sum omega(s)``)."""
    a = _chain(x)
    return a.size / ess(a)


def mc_errors(samples: Any) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo standard errors of the column means and variances: ``sd/sqrt(ESS)`` and
    ``sqrt((m4 - var^2)/ESS)`` (the delta method; ``m4`` the fourth central moment)."""
    s = np.asarray(samples, dtype=float)
    e = ess_all(s)
    c = s - s.mean(axis=0)
    var = (c**2).mean(axis=0)
    m4 = (c**4).mean(axis=0)
    return np.sqrt(var / e), np.sqrt(np.maximum(m4 - var**2, 0.0) / e)


def density_rmse(x: Any, pdf: Any, ppf: Any, *, bins: int = 50, coverage: float = 0.999) -> float:
    """RMSE between the histogram density of ``x`` and ``pdf`` at the bin centres, over ``bins``
    equal bins spanning the analytic ``ppf`` central ``coverage`` interval (the histogram is
    normalised by all draws, so mass outside the interval counts as missing)."""
    a = _chain(x)
    lo, hi = ppf((1 - coverage) / 2), ppf((1 + coverage) / 2)
    counts, edges = np.histogram(a, bins=bins, range=(lo, hi))
    dens = counts / (a.size * (edges[1] - edges[0]))
    centres = 0.5 * (edges[1:] + edges[:-1])
    return float(np.sqrt(np.mean((dens - pdf(centres)) ** 2)))
