"""The one validator (aggregators/validation.py): every rejection of the issue, with its location,
logsumexp normalisation, the floor policy and its counts, and property tests."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.special import logsumexp

from aggregators.validation import (
    DEFAULT_FLOOR,
    PROB_SUM_TOL,
    PredictionError,
    Predictions,
    apply_floor,
    as_labels,
    as_log_probs,
    validate,
)


def probs(n=3, a=2, k=4, seed=0):
    p = np.random.default_rng(seed).dirichlet(np.ones(k), size=(n, a))
    return p


def raises(code, fn, *args, item=None, agent=None, field=None, **kw):
    with pytest.raises(PredictionError) as ei:
        fn(*args, **kw)
    e = ei.value
    assert e.code == code, str(e)
    assert e.item == item and e.agent == agent, (e.item, e.agent, str(e))
    if field is not None:
        assert e.field == field
    d = e.to_dict()
    json.dumps(d)  # JSON-ready
    assert d["code"] == code and d.get("item") == item and d.get("agent") == agent
    assert isinstance(e, ValueError)
    return e


# -- rejections with their location --------------------------------------------------------------
@pytest.mark.parametrize("kind", ["probs", "log_probs"])
def test_nan_located(kind):
    x = probs() if kind == "probs" else np.log(probs())
    x[2, 1, 3] = np.nan
    e = raises("nan", as_log_probs, x, kind=kind, item=2, agent=1, field="predictions")
    assert "NaN" in str(e) and "item 2" in str(e) and "agent 1" in str(e)


@pytest.mark.parametrize("kind", ["probs", "log_probs"])
def test_posinf_located(kind):
    x = probs() if kind == "probs" else np.log(probs())
    x[1, 0, 2] = np.inf
    raises("inf", as_log_probs, x, kind=kind, item=1, agent=0)


def test_neginf_is_not_a_probability():
    x = probs()
    x[0, 1, 0] = -np.inf
    raises("inf", as_log_probs, x, kind="probs", item=0, agent=1)


def test_negative_probability_located():
    x = probs()
    x[2, 0, 1] = -0.1
    x[2, 0, 2] += 0.1
    raises("negative", as_log_probs, x, kind="probs", item=2, agent=0)


def test_unnormalised_beyond_tolerance_rejected_inside_accepted():
    x = probs()
    x[1, 1] *= 1 + 10 * PROB_SUM_TOL
    e = raises("not_normalised", as_log_probs, x, kind="probs", item=1, agent=1)
    assert "sum to one" in e.reason
    y = probs()
    y[0, 0] *= 1 + 0.5 * PROB_SUM_TOL  # inside the tolerance: renormalised exactly
    out = as_log_probs(y, kind="probs").log_probs
    np.testing.assert_allclose(logsumexp(out, axis=2), 0.0, atol=1e-14)
    np.testing.assert_allclose(np.exp(out[0, 0]), y[0, 0] / y[0, 0].sum(), rtol=1e-13)


def test_all_minus_inf_row_rejected():
    x = np.log(probs())
    x[2, 1, :] = -np.inf
    raises("zero_row", as_log_probs, x, item=2, agent=1)


@pytest.mark.parametrize(
    "x",
    [
        [[[0.5, 0.5], [0.5]]],  # ragged agents
        [[[0.5, 0.5]], [[0.5, 0.5], [0.5, 0.5]]],  # ragged items
        [[["a", "b"]]],  # not numeric
    ],
)
def test_ragged_or_non_numeric_rejected(x):
    raises("not_numeric_or_ragged", as_log_probs, x, kind="probs")


@pytest.mark.parametrize("shape", [(4,), (3, 4), (2, 3, 4, 1)])
def test_wrong_ndim(shape):
    e = raises("bad_shape", as_log_probs, np.full(shape, 0.25), kind="probs")
    assert f"{len(shape)}-D" in e.reason


@pytest.mark.parametrize("shape,what", [((0, 2, 3), "item"), ((2, 0, 3), "agent"), ((2, 2, 1), "two classes")])
def test_too_few_items_agents_classes(shape, what):
    e = raises("bad_shape", as_log_probs, np.zeros(shape))
    assert what in e.reason


def test_bad_kind():
    raises("bad_kind", as_log_probs, probs(), kind="logits", field="kind")


# -- labels --------------------------------------------------------------------------------------
def test_labels_outside_range_located():
    raises("unknown_class", as_labels, [0, 3, 4], 3, 4, item=2, field="labels")
    raises("unknown_class", as_labels, [0, -1, 2], 3, 4, item=1)
    raises("unknown_class", as_labels, np.array([1e20, 0.0, 1.0]), 3, 4, item=0)  # no int64 wrap-around


def test_non_integer_labels():
    raises("bad_labels", as_labels, [0, 1.5, 2], 3, 4, item=1)
    raises("bad_labels", as_labels, [0, np.nan, 2], 3, 4, item=1)
    raises("bad_labels", as_labels, ["a", "b", "c"], 3, 4)
    raises("bad_labels", as_labels, [True, False, True], 3, 4)
    np.testing.assert_array_equal(as_labels([0.0, 3.0, 1.0], 3, 4), [0, 3, 1])
    assert as_labels(np.array([0, 3, 1], dtype=np.uint8), 3, 4).dtype == np.int64


def test_labels_length_and_shape_mismatch():
    e = raises("shape_mismatch", as_labels, [0, 1], 3, 4)
    assert "2 labels for 3 items" in e.reason
    raises("bad_shape", as_labels, [[0, 1, 2]], 3, 4)


def test_validate_checks_labels_against_predictions():
    x = probs(n=3, k=4)
    preds, y = validate(x, [0, 1, 3], kind="probs")
    assert preds.shape == (3, 2, 4) and y.tolist() == [0, 1, 3]
    raises("unknown_class", validate, x, [0, 1, 4], kind="probs", item=2)
    raises("shape_mismatch", validate, x, [0, 1], kind="probs")
    p2, none = validate(x, None, kind="probs")
    assert none is None


# -- normalisation ------------------------------------------------------------------------------
def test_unnormalised_log_probs_normalised_with_logsumexp():
    rng = np.random.default_rng(1)
    raw = rng.normal(size=(5, 3, 6)) * 4 + 700.0  # exp() would overflow; logsumexp must not
    out = as_log_probs(raw).log_probs
    ref = raw - np.log(np.exp(raw - 700.0).sum(axis=2, keepdims=True)) - 700.0
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)
    assert out.dtype == np.float64 and out.flags.c_contiguous


def test_probs_and_log_probs_agree_and_zeros_are_minus_inf():
    p = probs()
    p[0, 0] = [0.5, 0.5, 0.0, 0.0]
    a = as_log_probs(p, kind="probs")
    with np.errstate(divide="ignore"):
        b = as_log_probs(np.log(p), kind="log_probs")
    np.testing.assert_allclose(a.log_probs, b.log_probs, atol=1e-14)
    assert a.has_zeros and np.isneginf(a.log_probs[0, 0, 2:]).all()


def test_predictions_pass_through_unchanged():
    p = as_log_probs(probs(), kind="probs")
    assert as_log_probs(p) is p


# -- floor policy -------------------------------------------------------------------------------
def test_floor_counts_and_mass():
    p = np.array([[[1.0, 0.0, 0.0, 0.0], [0.5, 0.5 - 1e-12, 1e-12, 0.0]], [[0.25] * 4, [0.25] * 4]])
    preds = as_log_probs(p, kind="probs")
    out = apply_floor(preds, 1e-3)
    assert out.n_floored == 5 and out.floor == 1e-3
    q = np.exp(out.log_probs)
    np.testing.assert_allclose(q.sum(axis=2), 1.0, atol=1e-14)
    assert q.min() >= 1e-3 * (1 - 1e-12)
    np.testing.assert_allclose(q[0, 0], [1 - 3e-3, 1e-3, 1e-3, 1e-3], rtol=1e-12)
    np.testing.assert_allclose(q[0, 1], [0.499, 0.499 - 1e-12 * 0.998 / (1 - 1e-12), 1e-3, 1e-3], rtol=1e-9)
    np.testing.assert_array_equal(out.log_probs[1], preds.log_probs[1])  # untouched rows are unchanged


def test_floor_cascade_pushes_near_floor_entries_too():
    # 0.0011 is above a 1e-3 floor, but taking mass for the zeros pushes it below: it is floored too
    p = np.array([[[0.9969, 0.0011, 0.0011, 0.0009, 0.0]]])
    p = p / p.sum()
    out = apply_floor(as_log_probs(p, kind="probs"), 1e-3)
    q = np.exp(out.log_probs[0, 0])
    assert q.min() >= 1e-3 * (1 - 1e-12)
    np.testing.assert_allclose(q.sum(), 1.0, atol=1e-14)
    assert out.n_floored == int(np.isclose(q, 1e-3, rtol=1e-12).sum())


def test_floor_default_and_off_and_bad_values():
    p = probs()
    p[1, 0] = [1.0, 0.0, 0.0, 0.0]
    preds = as_log_probs(p, kind="probs")
    assert apply_floor(preds).floor == DEFAULT_FLOOR == 1e-9
    assert apply_floor(preds).n_floored == 3
    raises("zero_probability", apply_floor, preds, None, item=1, agent=0)
    clean = as_log_probs(probs(), kind="probs")
    assert apply_floor(clean, None) is clean
    for bad in [0.0, -1e-3, 0.25, 1.0, np.nan, "x"]:
        raises("bad_floor", apply_floor, preds, bad, field="floor")


def test_floor_no_op_counts_zero():
    preds = as_log_probs(probs(), kind="probs")
    out = apply_floor(preds, 1e-9)
    assert out.n_floored == 0
    np.testing.assert_array_equal(out.log_probs, preds.log_probs)


# -- properties ---------------------------------------------------------------------------------
prob_tables = st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(2, 6), st.integers(0, 2**32 - 1))


def _random_probs(shape_seed, zero_frac=0.3):
    n, a, k, seed = shape_seed
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, 0.3), size=(n, a))
    p[rng.random(p.shape) < zero_frac] = 0.0
    p[..., 0] += p.sum(axis=2) == 0  # never an all-zero row
    return p / p.sum(axis=2, keepdims=True)


@settings(max_examples=60, deadline=None)
@given(prob_tables, st.floats(1e-12, 0.05))
def test_floor_properties(shape_seed, floor):
    p = _random_probs(shape_seed)
    k = p.shape[2]
    floor = min(floor, 0.9 / k)
    preds = as_log_probs(p, kind="probs")
    out = apply_floor(preds, floor)
    q = np.exp(out.log_probs)
    np.testing.assert_allclose(q.sum(axis=2), 1.0, atol=1e-12)
    assert (out.log_probs >= np.log(floor) - 1e-12).all()
    assert out.n_floored >= int((p < floor).sum())
    again = apply_floor(out, floor)  # idempotent
    assert again.n_floored == 0
    np.testing.assert_array_equal(again.log_probs, out.log_probs)
    # the order of the entries is preserved (ties allowed where flooring merged them)
    idx = np.argsort(p, axis=2, kind="stable")
    q_by_p = np.take_along_axis(q, idx, axis=2)
    assert (np.diff(q_by_p, axis=2) >= -1e-15).all()


@settings(max_examples=60, deadline=None)
@given(
    arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(2, 5)), elements=st.floats(-50, 50))
)
def test_log_probs_always_normalised(raw):
    out = as_log_probs(raw).log_probs
    np.testing.assert_allclose(logsumexp(out, axis=2), 0.0, atol=1e-12)
    # normalisation only shifts each row
    d = raw - out
    np.testing.assert_allclose(d, np.broadcast_to(d[..., :1], d.shape), atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(prob_tables)
def test_probs_roundtrip(shape_seed):
    p = _random_probs(shape_seed)
    out = as_log_probs(p, kind="probs")
    assert isinstance(out, Predictions) and out.shape == p.shape
    np.testing.assert_allclose(np.exp(out.log_probs), p, atol=1e-15)


# -- the compiled fast path for large log-probability inputs -------------------------------------
def _large(rng, n=300, a=20, k=12):
    x = rng.normal(size=(n, a, k)) * 5 + rng.normal(size=(n, a, 1)) * 300  # unnormalised, shifted rows
    x[rng.random((n, a, k)) < 0.05] = -np.inf  # zero probabilities allowed
    return x


def test_fast_path_equals_scipy_logsumexp():
    from aggregators.validation import FAST_PATH_MIN_SIZE

    rng = np.random.default_rng(5)
    x = _large(rng)
    assert x.size >= FAST_PATH_MIN_SIZE
    out = as_log_probs(x).log_probs
    ref = x - logsumexp(x, axis=2, keepdims=True)  # scipy: an independent reference
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)
    assert np.array_equal(np.isneginf(out), np.isneginf(x))
    assert out.dtype == np.float64 and out.flags.c_contiguous and out.shape == x.shape
    f32 = as_log_probs(x.astype(np.float32)).log_probs  # any float dtype comes out float64
    assert f32.dtype == np.float64


@pytest.mark.parametrize(
    "where, value, code",
    [((250, 7, 3), np.nan, "nan"), ((4, 19, 0), np.inf, "inf"), ((123, 2, slice(None)), -np.inf, "zero_row")],
)
def test_fast_path_refusals_are_located_like_the_numpy_path(where, value, code):
    rng = np.random.default_rng(6)
    x = _large(rng)
    x[where] = value
    raises(code, as_log_probs, x, item=where[0], agent=where[1])
