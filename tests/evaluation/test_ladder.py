"""The public-score mechanisms of evaluation.ladder (Blum & Hardt 2015, Algorithm 1)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluation.ladder import check_display, round_to, shown_score
from solvers.errors import InputError


def _run(scores, mechanism, step):
    shown: list[float] = []
    for s in scores:
        shown.append(shown_score(s, shown, mechanism, step))
    return shown


def test_ladder_by_hand():
    # R0 = inf; 3.04 -> 3.0; 2.97 is not 0.1 below 3.0 -> 3.0; 2.86 -> 2.9; 3.5 -> 2.9; 2.79 -> 2.8
    assert _run([3.04, 2.97, 2.86, 3.5, 2.79], "ladder", 0.1) == [3.0, 3.0, 2.9, 2.9, 2.8]


def test_exact_and_round():
    assert _run([3.04, 2.97], "exact", 0.0) == [3.04, 2.97]
    assert _run([3.04, 2.97, 3.5], "round", 0.1) == [3.0, 3.0, 3.5]
    assert round_to(1.23456, 0.001) == 1.235 and round_to(math.inf, 0.1) == math.inf


def test_ladder_changes_at_most_once_per_margin():
    """Each change of the shown score lowers it by at least half a margin (it beats R - step and is
    rounded to step); the first shown value is at most s0 + step/2 and the last at least
    s_min - step/2, so a run from s0 to s_min changes it at most 2 (s0 - s_min) / step + 2 times;
    probes that do not improve read back nothing new."""
    rng = np.random.default_rng(0)
    for step in (0.01, 0.05, 0.2):
        scores = 3.0 + np.cumsum(rng.normal(0, 0.02, 500)) * 0.1 + rng.normal(0, 0.05, 500)
        shown = _run(scores, "ladder", step)
        assert all(b <= a for a, b in zip(shown, shown[1:]))
        changes = sum(1 for a, b in zip(shown, shown[1:]) if b != a)
        assert changes <= 2 * (scores[0] - scores.min()) / step + 2
        # every shown value is within half a step of a submitted score
        assert all(min(abs(v - scores)) <= step / 2 + 1e-12 for v in set(shown))


@pytest.mark.parametrize(
    "mechanism,step,field",
    [
        ("ladder", None, "score_step"),
        ("round", 0.0, "score_step"),
        ("round", math.nan, "score_step"),
        ("exact", 0.5, "score_step"),
        ("median", 0.1, "score_mechanism"),
    ],
)
def test_bad_choices_name_their_field(mechanism, step, field):
    with pytest.raises(InputError) as e:
        check_display(mechanism, step)
    assert e.value.field == field


def test_good_choices():
    assert check_display("exact", None) == 0.0 and check_display("ladder", 0.05) == 0.05
