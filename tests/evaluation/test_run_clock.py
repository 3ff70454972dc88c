"""evaluation.run_clock: the seconds left in a run, from the measured cost of its steps (issue 14 §4),
on a fake clock so that every figure is exact."""

import pytest

from evaluation.run_clock import RunClock


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_the_step_in_progress_runs_at_its_own_rate_and_later_steps_at_the_highest_rate_seen():
    clock = FakeClock()
    rc = RunClock([("a", 1.0), ("b", 4.0), ("c", 2.0)], clock=clock)  # total weight 7
    clock.t = 0.01
    assert rc.observe(0.001) is None  # under 5 % of the first step: nothing measured yet
    clock.t = 1.0
    assert rc.observe(1 / 7) == pytest.approx(4.0 * 1.0 + 2.0 * 1.0)  # a done at 1 s/unit; b, c not started
    clock.t = 5.0  # b half done in 4 s: 2 s per unit, so 4 s more, and c at the highest rate, 2 s/unit
    assert rc.observe(3 / 7) == pytest.approx(4.0 + 4.0)
    clock.t = 9.0
    assert rc.observe(5 / 7) == pytest.approx(2.0 * 2.0)  # b done; c costed at b's rate
    clock.t = 11.0
    assert rc.observe(6 / 7) == pytest.approx(2.0)  # c half done in 2 s
    assert rc.observe(1.0) == 0.0


def test_a_step_alike_a_measured_one_is_costed_by_it_when_that_is_less():
    clock = FakeClock()
    rc = RunClock([("log", 1.0), ("loo", 10.0)], alike={"loo": ("log", 4)}, clock=clock)
    clock.t = 0.5
    assert rc.observe(1 / 11) == pytest.approx(4 * 0.5)  # four refits of a 0.5 s fit, not 10 x 0.5
    clock.t = 0.0
    slow = RunClock([("log", 1.0), ("loo", 1.0)], alike={"loo": ("log", 4)}, clock=clock)
    clock.t = 1.5  # a 1.5 s log fit (a compilation, say): the loo's weight at 1.5 s/unit, not 4 x 1.5 s
    assert slow.observe(0.5) == pytest.approx(1.5)
