"""Utility functions of market agents and their optimal investments (seed 000, section 2.8.1.1).

An agent with belief ``P`` over ``K`` goods, wealth ``W`` and utility ``U`` facing prices ``c``
(``c_k > 0``, ``sum_k c_k = 1``) spends ``r_k`` on good ``k`` so as to maximise
``sum_k P(k) U(r_k / c_k)`` subject to ``sum_k r_k = W`` (Eq. 2.30). The solution is

    r_k = c_k (U')^{-1}(lambda * c_k / P(k))                                    (Eq. 2.31)

with the Lagrange multiplier ``lambda`` fixed by the budget. :class:`Utility` implements Eq. 2.31
for any utility from ``U'`` and its inverse alone (a one-dimensional root find for ``lambda``,
vectorised over items); the three families of Table 2.4 override it with closed forms.

Conventions: beliefs and prices are passed in log space, ``log_p`` and ``log_c`` of shape
``(..., K)``; wealth broadcasts against ``(...)``. Investments ``r`` have the shape of ``log_c``.

Exponential agents (CARA) may take *negative* positions (short sales) and may end with negative
wealth; nothing is clipped. Isoelastic agents with ``eta == 1`` are logarithmic agents.

Seed issue: Table 2.4 prints the exponential investment as
``W/K + c_k log(P_k/c_k) - (1/K) sum_k' c_k' log(P_k'/c_k')``. That vector spends ``W`` but does not
satisfy the first-order condition (2.31) unless prices are uniform, and it does not clear the market
at the table's own equilibrium. The solution of (2.30) for ``U(W) = -exp(-W)`` is
``r_k = c_k (W + log(P_k/c_k) - sum_k' c_k' log(P_k'/c_k'))``, which is what is implemented (and
tested against a direct numerical maximisation of (2.30)).
"""

from __future__ import annotations

import math

import numpy as np

from solvers.errors import InputError
from solvers.special import logsumexp

EXPONENTIAL = 0
"""Kind code of exponential agents in the compiled kernels."""
ISOELASTIC = 1
"""Kind code of isoelastic (and logarithmic, ``eta == 1``) agents in the compiled kernels."""
GENERIC = 2
"""Kind code of utilities known only through ``U'`` and its inverse."""


class Utility:
    """A concave, increasing utility known through ``U``, ``U'`` and ``(U')^{-1}``.

    Subclass and implement :meth:`value`, :meth:`marginal` and :meth:`inverse_marginal`; the optimal
    investment (Eq. 2.31) then follows. ``kind`` tells the equilibrium solver which compiled path
    applies (``GENERIC`` for a new utility).
    """

    kind: int = GENERIC
    allows_zero_belief: bool = False
    eta: float = float("nan")
    """Risk aversion: a number for isoelastic agents, ``inf`` for exponential, ``nan`` if unknown."""

    def value(self, w: np.ndarray) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def marginal(self, w: np.ndarray) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def inverse_marginal(self, y: np.ndarray) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def expected_utility(self, r: np.ndarray, log_p: np.ndarray, log_c: np.ndarray) -> np.ndarray:
        """``sum_k P(k) U(r_k / c_k)``, the objective of Eq. (2.30)."""
        return np.sum(np.exp(log_p) * self.value(r / np.exp(log_c)), axis=-1)

    def investment(self, log_p: np.ndarray, log_c: np.ndarray, wealth: np.ndarray | float) -> np.ndarray:
        """Optimal investment by Eq. (2.31): ``r_k = c_k (U')^{-1}(lambda c_k / P_k)``.

        ``lambda`` (one per item) is found by bisection on ``log lambda`` so that ``sum_k r_k = W``;
        the spend is decreasing in ``lambda`` because ``(U')^{-1}`` is decreasing. Bisection runs to
        relative precision 1e-15 on ``lambda``, then the budget is met exactly by construction of
        the final rescaling-free evaluation (the residual is reported by callers).
        """
        return _investment_by_multiplier(self, np.asarray(log_p, float), np.asarray(log_c, float), wealth)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _investment_by_multiplier(u: Utility, log_p: np.ndarray, log_c: np.ndarray, wealth) -> np.ndarray:
    log_p, log_c = np.broadcast_arrays(log_p, log_c)
    c = np.exp(log_c)
    w = np.broadcast_to(np.asarray(wealth, float), log_p.shape[:-1])
    ratio_log = log_c - log_p  # log(c_k / P_k)

    def spend(loglam: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):
            return np.sum(c * u.inverse_marginal(np.exp(loglam[..., None] + ratio_log)), axis=-1)

    # bracket log(lambda): expand until spend(lo) >= W >= spend(hi)
    lo = np.full(w.shape, -1.0)
    hi = np.full(w.shape, 1.0)
    for _ in range(200):
        s = spend(lo)
        bad = ~(s >= w)
        if not bad.any():
            break
        lo = np.where(bad, 2 * lo - 1, lo)
    for _ in range(200):
        s = spend(hi)
        bad = ~(s <= w)
        if not bad.any():
            break
        hi = np.where(bad, 2 * hi + 1, hi)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        s = spend(mid)
        up = s > w
        lo = np.where(up, mid, lo)
        hi = np.where(up, hi, mid)
        if np.all(hi - lo <= 1e-15 * np.maximum(1.0, np.abs(mid))):
            break
    loglam = 0.5 * (lo + hi)
    return c * u.inverse_marginal(np.exp(loglam[..., None] + ratio_log))


class Exponential(Utility):
    """``U(W) = -exp(-W)`` (constant absolute risk aversion; Table 2.4, first row).

    Investment ``r_k = c_k (W + log(P_k/c_k) - sum_k' c_k' log(P_k'/c_k'))`` (solution of Eq. 2.30;
    see the module note on the table's typo). Positions may be negative. Zero beliefs are not
    allowed (``log 0``).
    """

    kind = EXPONENTIAL
    eta = float("inf")

    def value(self, w):
        return -np.exp(-w)

    def marginal(self, w):
        return np.exp(-w)

    def inverse_marginal(self, y):
        return -np.log(y)

    def investment(self, log_p, log_c, wealth):
        log_p = np.asarray(log_p, float)
        log_c = np.asarray(log_c, float)
        a = log_p - log_c
        c = np.exp(log_c)
        s = np.sum(c * a, axis=-1, keepdims=True)
        w = np.asarray(wealth, float)[..., None]
        return c * (w + a - s)


class Isoelastic(Utility):
    """``U(W) = (W^{1-eta} - 1)/(1 - eta)`` with risk aversion ``eta > 0`` (Table 2.4, third row).

    Investment ``r_k = W c_k^{1-1/eta} P_k^{1/eta} / sum_k' c_k'^{1-1/eta} P_k'^{1/eta}``: the agent
    spends its wealth in proportion to its *effective belief* (Eq. 2.35). ``eta = 1`` is the
    logarithmic agent. Zero beliefs are allowed (the agent does not buy that good).
    """

    kind = ISOELASTIC
    allows_zero_belief = True

    def __init__(self, eta: float) -> None:
        self.eta = _check_eta(eta)

    def value(self, w):
        w = np.asarray(w, float)
        if self.eta == 1.0:
            return np.log(w)
        return (w ** (1.0 - self.eta) - 1.0) / (1.0 - self.eta)

    def marginal(self, w):
        return np.asarray(w, float) ** (-self.eta)

    def inverse_marginal(self, y):
        return np.asarray(y, float) ** (-1.0 / self.eta)

    def investment(self, log_p, log_c, wealth):
        g = 1.0 / self.eta
        log_p = np.asarray(log_p, float)
        log_c = np.asarray(log_c, float)
        z = g * log_p + (1.0 - g) * log_c
        q = np.exp(z - logsumexp(z, axis=-1, keepdims=True))
        return np.asarray(wealth, float)[..., None] * q

    def __repr__(self) -> str:
        return f"Isoelastic(eta={self.eta!r})"


class Logarithmic(Isoelastic):
    """``U(W) = log W`` (Table 2.4, second row): ``r_k = W P_k``; the isoelastic agent with eta = 1."""

    def __init__(self) -> None:
        super().__init__(1.0)

    def investment(self, log_p, log_c, wealth):
        log_p, log_c = np.broadcast_arrays(np.asarray(log_p, float), np.asarray(log_c, float))
        return np.asarray(wealth, float)[..., None] * np.exp(log_p)

    def __repr__(self) -> str:
        return "Logarithmic()"


def _check_eta(eta) -> float:
    try:
        e = float(eta)
    except (TypeError, ValueError):
        raise InputError("eta", f"must be a positive number; got {eta!r}") from None
    if not math.isfinite(e) or e <= 0:  # math: np.isfinite on a scalar cost ~1 us, per agent (session 48)
        raise InputError("eta", f"risk aversion must be finite and > 0; got {eta!r}")
    return e


def make_utility(spec) -> Utility:
    """A :class:`Utility` from an instance, ``"log"``, ``"exp"``, ``"exponential"``,
    ``"logarithmic"``, or a positive number ``eta`` (isoelastic; ``1`` gives the log agent)."""
    if isinstance(spec, Utility):
        return spec
    if isinstance(spec, str):
        s = spec.lower()
        if s in ("log", "logarithmic"):
            return Logarithmic()
        if s in ("exp", "exponential"):
            return Exponential()
        if s.startswith("iso"):
            raise InputError("utility", f"give isoelastic agents as their eta (a number); got {spec!r}")
        raise InputError("utility", f"unknown utility {spec!r} (use 'log', 'exp', a number eta, or a Utility)")
    if isinstance(spec, bool):
        raise InputError("utility", f"unknown utility {spec!r}")
    if isinstance(spec, (int, float, np.integer, np.floating)):
        e = _check_eta(spec)
        return Logarithmic() if e == 1.0 else Isoelastic(e)
    raise InputError("utility", f"unknown utility {spec!r} (use 'log', 'exp', a number eta, or a Utility)")
