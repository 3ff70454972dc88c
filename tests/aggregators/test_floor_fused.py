"""The fused validate + floor pass (aggregators.validation_kernels.normalise_floor_rows) against the
NumPy path it replaces for large inputs (as_log_probs, then apply_floor's mass-preserving floor)."""

import numpy as np
import pytest

from aggregators import validation as V
from solvers.errors import InputError


def _numpy_path(x, floor, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(V, "FAST_PATH_MIN_SIZE", 1 << 60)
        return V.apply_floor(V.as_log_probs(x), floor)


@pytest.mark.parametrize("sharp", [1.0, 8.0, 40.0])
def test_fused_floor_matches_numpy(sharp, monkeypatch):
    rng = np.random.default_rng(3)
    x = sharp * rng.standard_normal((300, 7, 33)) + 5.0  # unnormalised, many rows floored at large sharpness
    x[0, 0, :3] = -np.inf  # zeros are floored too
    ref = _numpy_path(x, 1e-9, monkeypatch)
    monkeypatch.setattr(V, "FAST_PATH_MIN_SIZE", 1)
    got = V.as_floored_log_probs(x, floor=1e-9)
    assert got.n_floored == ref.n_floored
    if sharp == 40.0:
        assert ref.n_floored > 1000
    np.testing.assert_allclose(got.log_probs, ref.log_probs, rtol=0, atol=1e-12)
    assert (got.log_probs >= np.log(1e-9) - 1e-12).all()
    np.testing.assert_allclose(np.logaddexp.reduce(got.log_probs, axis=2), 0.0, atol=1e-12)
    # apply_floor on validated predictions takes the compiled pass too, and is idempotent (in values:
    # renormalising can move an entry at the floor by one ulp, which is then counted again)
    again = V.apply_floor(got, 1e-9)
    np.testing.assert_allclose(again.log_probs, got.log_probs, rtol=0, atol=1e-12)


def test_fused_floor_does_not_touch_input(monkeypatch):
    monkeypatch.setattr(V, "FAST_PATH_MIN_SIZE", 1)
    x = np.random.default_rng(0).standard_normal((20, 3, 5)) * 30
    before = x.copy()
    V.as_floored_log_probs(x)
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize(
    "bad, code",
    [(np.nan, "nan"), (np.inf, "inf")],
)
def test_fused_floor_names_bad_entries(bad, code, monkeypatch):
    monkeypatch.setattr(V, "FAST_PATH_MIN_SIZE", 1)
    x = np.zeros((10, 4, 3))
    x[6, 2, 1] = bad
    with pytest.raises(InputError) as e:
        V.as_floored_log_probs(x)
    assert e.value.field == "predictions" and e.value.item == 6 and e.value.agent == 2


def test_fused_floor_rejects_bad_floor(monkeypatch):
    monkeypatch.setattr(V, "FAST_PATH_MIN_SIZE", 1)
    with pytest.raises(InputError) as e:
        V.as_floored_log_probs(np.zeros((2, 2, 4)), floor=0.5)
    assert e.value.field == "floor"
