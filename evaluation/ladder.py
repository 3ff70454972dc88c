"""What a public leaderboard shows: the exact public score, a rounded one, or the Ladder's.

A public score computed on a fixed set of items is an oracle: an adaptive participant who uploads
many slightly different files and reads the exact score back learns which items are public and
their labels. The organiser of a competition chooses how much the shown score may leak:

* ``exact``: the score itself (no protection, the default of old competitions);
* ``round``: the score rounded to a multiple of ``step``;
* ``ladder``: the Ladder mechanism of Blum & Hardt (2015, "The Ladder: A Reliable Leaderboard for
  Machine Learning Competitions", Algorithm 1). Each participant's shown score ``R_t`` starts at
  ``R_0 = +inf``; a submission with score ``s_t`` changes it only when it beats the best shown so
  far by more than the margin, ``s_t < R_{t-1} - step``, and is then rounded to a multiple of
  ``step``: ``R_t = [s_t]_step``; otherwise ``R_t = R_{t-1}``. A probe that does not improve by a
  margin reads back the same number as before, so it says nothing about the items it changed.

Scores are perplexities (lower is better). The functions are pure, so the rules are testable
without a database.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from solvers.errors import InputError

MECHANISMS = ("exact", "round", "ladder")
MAX_STEP = 1e3


def check_display(mechanism: str, step: float | None) -> float:
    """Validate an organiser's choice; returns the step (0.0 for ``exact``)."""
    if mechanism not in MECHANISMS:
        raise InputError("score_mechanism", f"must be one of {', '.join(MECHANISMS)}; got {mechanism!r}")
    if mechanism == "exact":
        if step not in (None, 0, 0.0):
            raise InputError("score_step", "must be omitted (or 0) when score_mechanism is 'exact'")
        return 0.0
    if step is None or not (isinstance(step, int | float) and math.isfinite(step) and 0.0 < step <= MAX_STEP):
        raise InputError("score_step", f"must be a number in (0, {MAX_STEP:g}] for score_mechanism {mechanism!r}")
    return float(step)


def round_to(score: float, step: float) -> float:
    """``score`` rounded to the nearest multiple of ``step`` (printed without float noise)."""
    if not math.isfinite(score):
        return score
    digits = max(0, -math.floor(math.log10(step)) + 6)
    return round(round(score / step) * step, digits)


def shown_score(score: float, previous: Iterable[float], mechanism: str, step: float) -> float:
    """The public score shown for a new submission with true public ``score``.

    ``previous`` are the scores shown for the participant's earlier submissions (the Ladder's
    state is their minimum, ``R_{t-1}``).
    """
    if mechanism == "exact":
        return float(score)
    if mechanism == "round":
        return round_to(float(score), step)
    best = min(previous, default=math.inf)
    if score < best - step:
        return round_to(float(score), step)
    return best
