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


def _ulps_at_row_scale(got, ref, x):
    """|got - ref| in units of the spacing of the row's scale max(|x|, |x - ref|, 1): the rounding
    unit of ``x - logsumexp(x)`` (cancellation makes a relative ulp of a result near 0 meaningless)."""
    xf = np.where(np.isfinite(x), x, 0.0)
    with np.errstate(invalid="ignore"):
        scale = np.maximum(np.abs(xf), np.abs(xf - np.where(np.isfinite(ref), ref, 0.0)))
    scale = np.maximum(scale.max(axis=-1, keepdims=True), 1.0)
    assert (np.isneginf(got) == np.isneginf(ref)).all()
    fin = np.isfinite(ref)
    with np.errstate(invalid="ignore"):
        return float((np.abs(got - ref)[fin] / np.spacing(np.broadcast_to(scale, ref.shape)[fin])).max())


@pytest.mark.parametrize("n_classes", [2, 3, 64, 1000])
def test_vectorised_pass_within_2_ulp_on_edge_values(n_classes, monkeypatch):
    """The blocked pass (vectorised exp, one log per row) against the NumPy path: zeros (-inf),
    probabilities that are denormal (log about -740) or one (log 0 with zeros elsewhere), exactly
    normalised rows, large shifts; the floor count is identical and every entry within 2 ulp at the
    row's scale (4 at K = 1,000, where the two summation orders differ by that much: each is within
    4 ulp of an extended-precision reference there, as the scalar kernel was; see the next test)."""
    rng = np.random.default_rng(n_classes)
    x = rng.standard_normal((400, 5, n_classes)) * rng.choice([0.1, 3.0, 30.0], size=(400, 5, 1))
    x[0, 0, 1:] = -np.inf  # probability one in class 0
    x[0, 1, :] = np.log(np.full(n_classes, 1.0 / n_classes))
    x[1, 0, 0] = np.log(5e-320)  # a denormal probability (floored)
    x[1, 1, :] = np.log(np.full(n_classes, 5e-320))  # every entry denormal: normalised to uniform
    x[2, 0, :] += 500.0  # unnormalised by a large shift
    x[2, 1, 0] = 5e-320  # a denormal log-probability (probability ~1 relative)
    floor = min(1e-9, 0.5 / n_classes)
    ref = _numpy_path(x, floor, monkeypatch)
    monkeypatch.setattr(V, "FAST_PATH_MIN_SIZE", 1)
    got = V.as_floored_log_probs(x, floor=floor)
    assert got.n_floored == ref.n_floored > 0
    ulp = 2.0 if n_classes <= 64 else 4.0
    assert _ulps_at_row_scale(got.log_probs, ref.log_probs, x) <= ulp
    np.testing.assert_allclose(got.log_probs[1, 1], -np.log(n_classes), rtol=0, atol=2 * np.spacing(740.0))
    plain = V.as_log_probs(x)  # the same pass without a floor (as_log_probs' compiled path)
    monkeypatch.setattr(V, "FAST_PATH_MIN_SIZE", 1 << 60)
    assert _ulps_at_row_scale(plain.log_probs, V.as_log_probs(x).log_probs, x) <= ulp


@pytest.mark.parametrize("n_classes, ulp", [(2, 2.0), (3, 2.0), (64, 2.0), (1000, 4.0)])
def test_vectorised_normalisation_against_extended_precision(n_classes, ulp):
    """``a - logsumexp(a)`` against the same computed in long double (x87, 64-bit mantissa)."""
    from aggregators.validation_kernels import normalise_log_rows

    rng = np.random.default_rng(7)
    x = rng.standard_normal((2000, n_classes)) * rng.choice([0.1, 3.0, 30.0], size=(2000, 1))
    xl = x.astype(np.longdouble)
    m = xl.max(axis=1, keepdims=True)
    exact = (xl - (m + np.log(np.exp(xl - m).sum(axis=1, keepdims=True)))).astype(np.float64)
    got = np.empty_like(x)
    assert normalise_log_rows(x, got) == 0
    assert _ulps_at_row_scale(got, exact, x) <= ulp


@pytest.mark.parametrize("where", [(0, 0, 0), (37, 3, 63), (399, 4, 17)])
@pytest.mark.parametrize("bad, code", [(np.nan, "nan"), (np.inf, "inf")])
def test_vectorised_pass_names_bad_entries_in_any_block(where, bad, code, monkeypatch):
    """A bad entry at a block's start, middle or end, among zeros (-inf) of the same row."""
    monkeypatch.setattr(V, "FAST_PATH_MIN_SIZE", 1)
    x = np.random.default_rng(1).standard_normal((400, 5, 64))
    x[where[0], where[1], :5] = -np.inf
    x[where] = bad
    for fn in (V.as_floored_log_probs, V.as_log_probs):
        with pytest.raises(InputError) as e:
            fn(x)
        assert (e.value.field, e.value.code, e.value.item, e.value.agent) == ("predictions", code, *where[:2])


def test_vectorised_pass_rejects_zero_rows_and_unnormalised_probs(monkeypatch):
    monkeypatch.setattr(V, "FAST_PATH_MIN_SIZE", 1)
    x = np.zeros((50, 3, 8))
    x[20, 1] = -np.inf
    with pytest.raises(InputError) as e:
        V.as_floored_log_probs(x)
    assert (e.value.field, e.value.code, e.value.item, e.value.agent) == ("predictions", "zero_row", 20, 1)
    p = np.full((50, 3, 8), 1.0 / 8)
    p[7, 2, 0] += 0.01
    with pytest.raises(InputError) as e:
        V.as_floored_log_probs(p, kind="probs")
    assert (e.value.field, e.value.code, e.value.item, e.value.agent) == ("predictions", "not_normalised", 7, 2)


def test_overwrite_floors_in_place_with_the_same_result(monkeypatch):
    """``overwrite=True`` (a chunked fit's block read from a store) writes the result into the input
    itself: the same numbers and floor count as the copying pass, no second array; an input that is
    not a writeable C-contiguous float64 array is left alone."""
    monkeypatch.setattr(V, "FAST_PATH_MIN_SIZE", 1)
    rng = np.random.default_rng(11)
    x = 20.0 * rng.standard_normal((200, 9, 17)) + 3.0
    x[5, 2, :4] = -np.inf
    ref = V.as_floored_log_probs(x.copy(), floor=1e-9)
    y = x.copy()
    got = V.as_floored_log_probs(y, floor=1e-9, overwrite=True)
    assert np.shares_memory(got.log_probs, y) and got.n_floored == ref.n_floored > 0
    assert np.array_equal(got.log_probs, ref.log_probs) and np.array_equal(y, ref.log_probs)
    for other in (x.astype(np.float32), np.asfortranarray(x), x[:, :, ::-1].copy()[:, :, ::-1]):
        before = other.copy()
        out = V.as_floored_log_probs(other, floor=1e-9, overwrite=True)
        assert not np.shares_memory(out.log_probs, other) and np.array_equal(other, before)
    ro = x.copy()
    ro.flags.writeable = False
    assert not np.shares_memory(V.as_floored_log_probs(ro, floor=1e-9, overwrite=True).log_probs, ro)


@pytest.mark.parametrize(
    "where, value, code", [((150, 3, 7), np.nan, "nan"), ((9, 8, slice(None)), -np.inf, "zero_row")]
)
def test_overwrite_raises_the_error_of_the_copying_pass(where, value, code, monkeypatch):
    """A refused row is left as it was, so the checks that follow name the same entry."""
    monkeypatch.setattr(V, "FAST_PATH_MIN_SIZE", 1)
    x = np.random.default_rng(12).standard_normal((200, 9, 17))
    x[where] = value
    errors = []
    for overwrite in (False, True):
        with pytest.raises(InputError) as e:
            V.as_floored_log_probs(x.copy(), floor=1e-9, overwrite=overwrite)
        errors.append((e.value.field, e.value.code, e.value.item, e.value.agent))
    assert errors[0] == errors[1] and errors[0][1:] == (code, where[0], where[1])
