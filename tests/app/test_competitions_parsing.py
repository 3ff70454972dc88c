"""Reading submission files: formats, normalisation and the validation report."""

from __future__ import annotations

import io

import numpy as np
import pytest

from app.competitions import parsing

# -- parsing ------------------------------------------------------------------------------------
IDS = np.array([10, 11, 12, 13, 14])


def _rows(k=4, seed=0):
    return np.random.default_rng(seed).normal(size=(len(IDS), k)) * 3


def test_csv_unnormalised_rows_are_normalised_and_aligned():
    v = _rows()
    order = np.array([3, 0, 4, 1, 2])  # shuffled rows
    data = parsing.to_csv(IDS[order], v[order])
    out = parsing.parse_submission(data, IDS, 4)
    ref = v - np.log(np.exp(v).sum(1, keepdims=True))
    np.testing.assert_allclose(out.log_probs, ref, atol=1e-5)  # csv keeps 6 significant digits
    assert out.report.ok and out.report.format == "csv"


def test_npy_and_npz_formats():
    v = _rows(seed=1)
    out = parsing.parse_submission(parsing.to_npy(IDS, v), IDS, 4)
    np.testing.assert_allclose(np.exp(out.log_probs).sum(1), 1.0, atol=1e-12)
    np.testing.assert_allclose(out.log_probs - out.log_probs[:, :1], v - v[:, :1], atol=1e-12)
    buf = io.BytesIO()
    np.savez(buf, ids=IDS[::-1], log_probs=v[::-1])
    out2 = parsing.parse_submission(buf.getvalue(), IDS, 4)
    np.testing.assert_allclose(out2.log_probs, out.log_probs, atol=1e-12)
    assert out2.report.format == "npz"


def test_probability_kind_and_warning():
    p = np.full((5, 4), 0.25)
    ok = parsing.parse_submission(parsing.to_csv(IDS, p), IDS, 4, kind="probs")
    np.testing.assert_allclose(ok.log_probs, np.log(0.25), atol=1e-12)
    warned = parsing.parse_submission(parsing.to_csv(IDS, p), IDS, 4)
    assert warned.report.warnings[0]["code"] == "looks_like_probabilities"


def _reject(data, k=4):
    with pytest.raises(parsing.SubmissionRejected) as ei:
        parsing.parse_submission(data, IDS, k)
    return ei.value.report.to_dict()


def test_report_lists_every_problem():
    v = _rows()
    v[1, 2] = np.nan
    v[3, 0] = np.inf
    ids = np.array([10, 10, 12, 99, 14])
    rep = _reject(parsing.to_npy(ids, v))
    codes = {e["code"]: e for e in rep["errors"]}
    assert set(codes) == {"duplicate_ids", "unknown_ids", "missing_ids", "nan", "inf"}
    assert codes["unknown_ids"]["items"] == [99]
    assert codes["missing_ids"]["items"] == [11, 13]
    assert codes["nan"]["items"] == [10] and codes["inf"]["items"] == [99]
    assert not rep["ok"]


def test_report_shape_and_format_errors():
    assert _reject(parsing.to_csv(IDS, _rows(k=3)))["errors"][0]["code"] == "bad_shape"
    assert _reject(b"")["errors"][0]["code"] == "empty"
    assert _reject(b"id,a,b\n1,2\n3,4,5\n")["errors"][0]["code"] == "ragged"
    assert _reject(b"id,a\n1,x\n")["errors"][0]["code"] == "not_numeric"
    assert _reject(b"\xff\xfe\x00garbage")["errors"][0]["code"] == "not_text"
    assert _reject(b"\x93NUMPYbroken")["errors"][0]["code"] == "unreadable"
    neg = _rows()
    neg[2] = -np.inf
    rep = _reject(parsing.to_npy(IDS, neg))
    assert rep["errors"][0]["code"] == "zero_row" and rep["errors"][0]["items"] == [12]


def _prob_csv(ids, p, fmt):
    lines = ["id," + ",".join(f"c{j}" for j in range(p.shape[1]))]
    lines += [f"{i}," + ",".join(format(v, fmt) for v in row) for i, row in zip(ids, p)]
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("fmt", [".6g", ".6f"])
def test_probabilities_written_with_six_digits_are_accepted(fmt):
    """64 classes written with six significant digits (or decimals) miss the sum by up to 3.2e-5;
    the tolerance n_classes * 1e-6 accepts them and the rows are renormalised exactly."""
    k, n = 64, 300
    ids = np.arange(n) + 7
    p = np.random.default_rng(1).dirichlet(np.ones(k) * 0.3, size=n)
    out = parsing.parse_submission(_prob_csv(ids, p, fmt), ids, k, kind="probs")
    assert out.report.ok
    np.testing.assert_allclose(np.exp(out.log_probs).sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.exp(out.log_probs), p, atol=1e-5)
    assert parsing.sum_tolerance(k) == pytest.approx(6.4e-5) and parsing.sum_tolerance(1) == 1e-6


def test_the_report_counts_every_offending_row():
    k, n = 5, 400
    ids = np.arange(n)
    p = np.full((n, k), 0.2)
    p[:238] *= 1.01  # 238 rows sum to 1.01
    p[300:303, 0] = -0.1  # 3 rows with a negative entry (they also miss the sum)
    with pytest.raises(parsing.SubmissionRejected) as e:
        parsing.parse_submission(parsing.to_npy(ids, p), ids, k, kind="probs")
    errs = {x["code"]: x for x in e.value.report.errors}
    assert errs["not_normalised"]["count"] == 241 and errs["not_normalised"]["items"] == [0, 1, 2, 3, 4]
    assert errs["negative"]["count"] == 3 and errs["negative"]["items"] == [300, 301, 302]
    assert "241 row(s)" in errs["not_normalised"]["reason"]
