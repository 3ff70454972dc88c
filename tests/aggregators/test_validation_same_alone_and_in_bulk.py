"""An item validates to the same bits alone and in a large call (session 55).

Until then inputs of fewer than 65,536 numbers were normalised and floored in NumPy and larger ones by
the compiled pass, which round differently in the last bit; the market then solved the same item to
prices 1e-15 apart, and Anderson, whose accept test compares residuals, to 2-5e-12 apart with a pass
more. Now every size takes the compiled pass, in one thread below ``PARALLEL_MIN_SIZE``."""

import numpy as np
import pytest

from aggregators import validation as V


def _items(n, a=6, k=40, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, a, k)) * rng.choice([0.3, 4.0, 25.0], size=(n, a, 1)) + 3.0  # unnormalised
    x[0, 0, :2] = -np.inf  # zeros (floored)
    return x


@pytest.mark.parametrize("floor", [None, 1e-9, 1e-4])
def test_an_item_validates_to_the_same_bits_alone_and_in_a_large_call(floor):
    x = _items(400)  # 96,000 numbers: the parallel pass
    assert x.size >= V.PARALLEL_MIN_SIZE
    if floor is None:
        bulk = V.as_log_probs(x).log_probs
        alone = [V.as_log_probs(x[i : i + 1]).log_probs[0] for i in (0, 1, 399)]
    else:
        bulk = V.as_floored_log_probs(x, floor=floor).log_probs
        alone = [V.as_floored_log_probs(x[i : i + 1], floor=floor).log_probs[0] for i in (0, 1, 399)]
    for got, i in zip(alone, (0, 1, 399)):
        assert np.array_equal(got, bulk[i])
    # and the two steps in turn (validate, then floor) give the fused pass's bits at both sizes
    if floor is not None:
        two = V.apply_floor(V.as_log_probs(x), floor)
        one = V.apply_floor(V.as_log_probs(x[399:]), floor)
        assert np.array_equal(two.log_probs[399], one.log_probs[0])


def test_flooring_validated_data_with_nothing_to_floor_changes_no_bit():
    x = _items(3)
    x[0, 0, :2] = 0.0
    preds = V.as_log_probs(x)
    out = V.apply_floor(preds, 1e-300)  # nothing below it
    assert out.n_floored == 0
    assert np.array_equal(out.log_probs, preds.log_probs)


def test_the_compiled_pass_agrees_with_the_numpy_checks_to_rounding(monkeypatch):
    """The NumPy path still names refused rows; where both accept, they agree to a few ulp."""
    x = _items(30)
    got = V.as_floored_log_probs(x, floor=1e-9)
    monkeypatch.setattr(V, "FAST_PATH_MIN_SIZE", 1 << 60)
    ref = V.as_floored_log_probs(x, floor=1e-9)
    assert got.n_floored == ref.n_floored > 0
    np.testing.assert_allclose(got.log_probs, ref.log_probs, rtol=0, atol=1e-13)
    assert not np.array_equal(got.log_probs, ref.log_probs)  # the rounding that used to split the sizes


def test_a_read_only_small_input_takes_the_warmed_signature():
    """A read-only array is a numba type of its own; a small one (pandas' ``to_numpy()`` under
    copy-on-write) is copied rather than compiled for, so a first call after the warm-up compiles nothing."""
    import aggregators.validation_kernels as vk

    x = _items(5)
    V.as_floored_log_probs(x, floor=1e-9)
    V.as_log_probs(x)
    before = len(vk.normalise_floor_rows_serial.signatures)
    ro = x.copy()
    ro.setflags(write=False)
    a = V.as_floored_log_probs(ro, floor=1e-9)
    b = V.as_log_probs(ro)
    c = V.apply_floor(b, 1e-6)
    assert len(vk.normalise_floor_rows_serial.signatures) == before
    assert np.array_equal(a.log_probs, V.as_floored_log_probs(x, floor=1e-9).log_probs)
    assert np.array_equal(b.log_probs, V.as_log_probs(x).log_probs)
    assert np.array_equal(c.log_probs, V.apply_floor(V.as_log_probs(x), 1e-6).log_probs)
    assert not ro.flags.writeable and np.array_equal(ro, x)  # the input untouched
