"""Market agents: a utility and a wealth each; their beliefs arrive per item (seed 000, section 2.8.1).

:class:`Agents` holds the utilities and the wealth of ``A`` agents; beliefs are the usual
predictions array ``(n_items, n_agents, n_classes)`` validated by the one validator
(:func:`aggregators.validation.as_log_probs`). Decisions (documented in ``docs/markets.md``):

* Wealth must be finite and > 0 for every agent when given; it is normalised to sum to one (the
  seed's ``sum_i W_i = 1``). Equilibrium prices depend only on the normalised wealth for
  isoelastic/log markets; exponential agents' investments use the normalised wealth.
* Trained exponential agents may end with zero or negative wealth (CARA utility is defined on the
  whole real line); :meth:`Agents.with_wealth` accepts that for them only.
* A market needs at least two agents.
* Zero beliefs: by default beliefs are floored (``floor=DEFAULT_FLOOR``, counted in
  ``n_floored``) like the log and Rényi pools. With ``floor=None``, zeros are accepted for log and
  isoelastic agents (they simply do not buy that good) but rejected for exponential agents (their
  investment contains ``log P``), and a good that every agent believes impossible is rejected (its
  price would be zero).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aggregators.validation import DEFAULT_FLOOR, Predictions, _check_floor, as_log_probs
from solvers.errors import InputError

from . import kernels
from .utilities import EXPONENTIAL, GENERIC, ISOELASTIC, Isoelastic, Logarithmic, Utility, _check_eta, make_utility


@dataclass
class Agents:
    """``A`` agents: ``utilities`` (list of :class:`~markets.utilities.Utility`) and ``wealth`` (A,).

    Build with :func:`make_agents`. Markets speak ``eta`` (risk aversion) everywhere; the compiled
    kernels read ``kind`` and ``inv_eta``, the one place where ``eta`` is converted (the exponent
    ``1/eta`` of an isoelastic agent's effective belief, the Rényi order of Eq. 2.36; see the
    glossary in ``docs/markets.md``).
    """

    utilities: list[Utility]
    wealth: np.ndarray
    kind: np.ndarray = field(init=False)
    eta: np.ndarray = field(init=False)
    """Risk aversion per agent (``inf`` for exponential, ``nan`` for generic utilities)."""
    inv_eta: np.ndarray = field(init=False)
    """``1/eta`` for isoelastic (and log) agents, 0 for the others: what the kernels read."""

    def __post_init__(self) -> None:
        self.kind = np.array([u.kind for u in self.utilities], dtype=np.int64)
        self.eta = np.array([u.eta for u in self.utilities], dtype=np.float64)
        self.inv_eta = np.where(self.kind == ISOELASTIC, 1.0 / self.eta, 0.0)

    @property
    def n_agents(self) -> int:
        return len(self.utilities)

    @property
    def has_exponential(self) -> bool:
        return bool((self.kind == EXPONENTIAL).any())

    @property
    def has_generic(self) -> bool:
        return bool((self.kind == GENERIC).any())

    def with_wealth(self, wealth: Any) -> Agents:
        """Same utilities, new wealth (validated; exponential agents may hold any finite wealth)."""
        return Agents(list(self.utilities), check_wealth(wealth, self.n_agents, self.kind))


def check_wealth(wealth: Any, n_agents: int, kind: np.ndarray | None = None) -> np.ndarray:
    """Validate wealth: finite, shape (n_agents,), > 0 (except exponential agents after trading,
    which may hold any finite amount), positive total; returns it normalised to sum to one."""
    try:
        w = np.asarray(wealth, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError("wealth", f"must be a 1-D array of {n_agents} positive numbers") from None
    if w.ndim == 0:
        raise InputError("wealth", f"must be a 1-D array of {n_agents} positive numbers; got a scalar")
    if w.ndim != 1 or w.shape[0] != n_agents:
        raise InputError("wealth", f"must have shape ({n_agents},), one per agent; got {tuple(w.shape)}")
    if not np.isfinite(w).all():
        i = int(np.argwhere(~np.isfinite(w))[0][0])
        raise InputError("wealth", f"must be finite; agent {i} has {w[i]!r}")
    must_be_positive = np.ones(n_agents, bool) if kind is None else (kind != EXPONENTIAL)
    bad = must_be_positive & (w <= 0)
    if bad.any():
        i = int(np.argwhere(bad)[0][0])
        raise InputError("wealth", f"must be > 0; agent {i} has {w[i]!r}")
    tot = w.sum()
    if not tot > 0:
        raise InputError("wealth", f"the total must be > 0; got {tot!r}")
    return w / tot


def _plain_specs(seq: list) -> dict | None:
    """The distinct specs of ``seq`` mapped to their utilities when every spec is a string or a plain
    number (not a bool) and every spec is valid, else None (the caller's loop then finds the first bad
    agent). The utilities are built once per distinct value, numbers without
    :func:`~markets.utilities.make_utility`'s dispatch. Equal numbers share one utility (``2`` and
    ``2.0`` are one key, as a dict has them; ``"2"`` is a name)."""
    for t in set(map(type, seq)):
        if not (
            t is str or (issubclass(t, (int, float, np.integer, np.floating)) and not issubclass(t, (bool, np.bool_)))
        ):
            return None
    made: dict[Any, Any] = dict.fromkeys(seq)
    try:
        for k in made:
            if type(k) is str:
                made[k] = make_utility(k)
            else:
                e = _check_eta(k)
                made[k] = Logarithmic() if e == 1.0 else Isoelastic(e)
    except InputError:
        return None
    return made


def _utilities_of(seq: list) -> list[Utility]:
    """One :class:`Utility` per spec, one object per distinct number or name: building a utility
    per agent cost 2-5 µs each, 2-5 ms per call of a 1,000-agent market (session 37: a third of
    the fixed cost of an equilibrium of one item at 1,000 x 1,024, paid by every method). Specs that
    are all names and numbers take :func:`_plain_specs` (session 51, ``make_agents`` of 1,000
    agents: the grid's mixed market 0.50 -> 0.21 ms, 1,000 distinct etas 1.49 -> 0.76 ms;
    ``benchmarks/bench_make_agents.py``); others, and any bad spec, the loop here, which names the
    first bad agent."""
    plain = _plain_specs(seq)
    if plain is not None:
        return list(map(plain.__getitem__, seq))
    made: dict[tuple[bool, Any], Utility] = {}
    out = []
    try:
        for s in seq:
            if isinstance(s, (str, int, float, np.integer, np.floating)) and not isinstance(s, bool):
                key = (True, s) if isinstance(s, str) else (False, float(s))
                u = made.get(key)
                if u is None:
                    u = made[key] = make_utility(s)
                out.append(u)
            else:
                out.append(make_utility(s))
    except InputError as e:  # name the agent: a market of 1,000 etas, one of them bad
        if e.agent is not None:
            raise
        raise InputError(e.field, e.reason, code=e.code, agent=len(out), **e.location) from None
    return out


def make_agents(utilities: Any, wealth: Any = None, n_agents: int | None = None) -> Agents:
    """Agents from a utility spec (one for all, or one per agent) and a wealth vector.

    ``utilities``: a :class:`Utility`, ``"log"``, ``"exp"``, a number ``eta`` (isoelastic), or a
    sequence of those, one per agent. ``wealth``: positive numbers (normalised to sum 1); default
    equal wealth. ``n_agents`` is required when neither argument fixes it.
    """
    if isinstance(utilities, (str, Utility, int, float, np.integer, np.floating)) or utilities is None:
        if n_agents is None:
            if wealth is None:
                raise InputError("n_agents", "needed when one utility is given and no wealth")
            n_agents = int(np.size(wealth))
        spec = "log" if utilities is None else utilities
        utils = [make_utility(spec)] * n_agents  # one (immutable) utility shared by every agent
    else:
        seq = list(utilities) if isinstance(utilities, (Sequence, np.ndarray)) else None
        if seq is None:
            raise InputError("utilities", f"expected a utility or a sequence of them; got {utilities!r}")
        utils = _utilities_of(seq)
        if n_agents is not None and len(utils) != n_agents:
            raise InputError("utilities", f"got {len(utils)} utilities for {n_agents} agents")
        n_agents = len(utils)
    if n_agents < 2:
        raise InputError("n_agents", f"a market needs at least two agents; got {n_agents}")
    w = np.full(n_agents, 1.0 / n_agents) if wealth is None else check_wealth(wealth, n_agents)
    return Agents(utils, w)


def market_of(beliefs: Any, utilities: Any, wealth: Any, kind: str) -> tuple[Any, Agents]:
    """The ``(beliefs, agents)`` of a call that takes ``utilities`` as an :class:`Agents` (``wealth``
    then overrides its wealth if given) or as utility specs; specs are sized by the beliefs, which
    are validated first so that shape errors name the ``beliefs`` argument."""
    if isinstance(utilities, Agents):
        return beliefs, (utilities if wealth is None else utilities.with_wealth(wealth))
    beliefs = as_log_probs(beliefs, kind=kind, field="beliefs")  # type: ignore[arg-type]
    return beliefs, make_agents(utilities, wealth, beliefs.n_agents)


def floor_beliefs(preds: Predictions, floor: float) -> Predictions:
    """:func:`aggregators.validation.apply_floor`'s rule on validated (normalised) beliefs, by the
    market's compiled pass (:mod:`markets.kernels.floor`: a compare pass, and a copy with ``exp``
    only of the floored entries when some entry is below the floor; no copy otherwise)."""
    fl = _check_floor(floor, preds.n_classes)
    lp = np.ascontiguousarray(preds.log_probs)
    flat = lp.reshape(-1, lp.shape[2])
    if kernels.count_rows_below(flat, np.log(fl)) == 0:
        return Predictions(lp, 0, fl)
    out = np.empty_like(flat)
    n = kernels.floor_rows(flat, out, fl)
    return Predictions(out.reshape(lp.shape), int(n), fl)


def prepare_beliefs(
    beliefs: Any,
    agents: Agents,
    *,
    kind: str = "log_probs",
    floor: float | None = DEFAULT_FLOOR,
    field: str = "beliefs",
    defer_floor: bool = False,
) -> Predictions:
    """Validate beliefs for a market of ``agents`` (shape, zeros policy, at least two agents).
    ``defer_floor``: check ``floor`` but return the beliefs unfloored (the equilibrium drivers
    floor each item in cache: :func:`markets.equilibrium.fused_floor`)."""
    preds = as_log_probs(beliefs, kind=kind, field=field)  # type: ignore[arg-type]
    if preds.n_agents < 2:
        raise InputError(field, "a market needs at least two agents; got 1", code="one_agent")
    if preds.n_agents != agents.n_agents:
        raise InputError(
            field,
            f"has {preds.n_agents} agents but the market has {agents.n_agents}",
            code="shape_mismatch",
        )
    if floor is not None:
        if defer_floor:
            _check_floor(floor, preds.n_classes)
            return preds
        return floor_beliefs(preds, floor)
    lp = preds.log_probs
    if kernels.count_neginf(lp.reshape(-1)) > 0:  # one compiled scan; details only if there are zeros
        zeros = np.isneginf(lp)
        no_zero_ok = np.array([not u.allows_zero_belief for u in agents.utilities])
        bad = zeros & no_zero_ok[None, :, None]
        if bad.any():
            i, a = (int(v) for v in np.argwhere(bad)[0][:2])
            raise InputError(
                field,
                "zero belief is undefined for an exponential (or generic) agent and flooring is off",
                item=i,
                agent=a,
                code="zero_probability",
            )
        dead = zeros.all(axis=1)  # (n, K): a good every agent believes impossible
        if dead.any():
            i = int(np.argwhere(dead)[0][0])
            raise InputError(
                field,
                "a good has zero belief from every agent (its price would be zero)",
                item=i,
                code="zero_probability",
            )
    return preds
