"""Pure domain logic of competitions: split, scores, Table 2.3 statistics, parsing, leaderboards."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
from scipy import stats

from app.competitions import leaderboard, parsing, scoring


# -- split and scores -----------------------------------------------------------------------------
def test_split_is_fixed_by_seed_and_sized():
    a = scoring.public_private_split(1000, 0.3, seed=7)
    b = scoring.public_private_split(1000, 0.3, seed=7)
    c = scoring.public_private_split(1000, 0.3, seed=8)
    assert a.dtype == bool and a.sum() == 300
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    # extremes keep at least one item on each side
    assert scoring.public_private_split(3, 0.01, seed=0).sum() == 1
    assert scoring.public_private_split(3, 0.99, seed=0).sum() == 2
    with pytest.raises(ValueError, match="public_fraction"):
        scoring.public_private_split(10, 1.0, seed=0)


def test_private_subsets_partition():
    parts = scoring.private_subsets(103, seed=1)
    assert len(parts) == 10
    allidx = np.concatenate(parts)
    assert np.array_equal(np.sort(allidx), np.arange(103))


def test_perplexity_uniform_is_k_and_matches_eq_2_26():
    rng = np.random.default_rng(0)
    k = 64
    y = rng.integers(0, k, 500)
    uni = np.full((500, k), -np.log(k))
    assert scoring.perplexity(uni, y) == pytest.approx(64.0, rel=1e-12)
    logits = rng.normal(size=(500, k))
    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    lp = np.log(p)
    # Eq. 2.26 written out with a python loop over probabilities (independent of the vectorised code)
    s = sum(math.log(p[j, y[j]]) for j in range(500))
    assert scoring.perplexity(lp, y) == pytest.approx(math.exp(-s / 500), rel=1e-10)
    assert scoring.log_loss(lp, y) == pytest.approx(-s / 500, rel=1e-10)


def test_table_row_matches_paired_t_test():
    rng = np.random.default_rng(3)
    base = 1.05 + 0.02 * rng.normal(size=10)
    better = base - 0.02 + 0.01 * rng.normal(size=10)
    row = scoring.table_row(better, base)
    d = better - base
    t = d.mean() / (d.std(ddof=1) / math.sqrt(10))
    assert row["p_value"] == pytest.approx(stats.t.cdf(t, df=9), rel=1e-9)
    assert row["p_value"] < 0.05
    assert row["diff_mean"] == pytest.approx(d.mean())
    assert row["perplexity_mean"] == pytest.approx(np.exp(better).mean())
    worse = scoring.table_row(base + 0.03, base)
    assert worse["p_value"] == 1.0  # identical shift: no variance, reported as not better
    noisy_worse = scoring.table_row(base + 0.03 + 0.01 * rng.normal(size=10), base)
    assert noisy_worse["p_value"] > 0.99


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


# -- leaderboards ---------------------------------------------------------------------------------
def _rec(pid, sid, t, pub, priv, sel=False):
    return dict(participant_id=pid, participant=f"p{pid}", submission_id=sid, created_at=t,
                public_perplexity=pub, private_perplexity=priv, selected=sel)


def test_public_leaderboard_best_entry_rank_and_ties():
    recs = [_rec(1, 1, 1.0, 5.0, 4.0), _rec(1, 2, 2.0, 3.0, 9.0), _rec(2, 3, 0.5, 3.0, 1.0),
            _rec(3, 4, 3.0, 7.0, 2.0)]
    rows = leaderboard.leaderboard(recs)
    assert [r["participant_id"] for r in rows] == [2, 1, 3]  # tie at 3.0 broken by earlier entry
    assert rows[1]["entries"] == 2 and rows[1]["last_submission"] == 2.0 and rows[1]["submission_id"] == 2
    assert [r["rank"] for r in rows] == [1, 2, 3]


def test_private_leaderboard_uses_selection():
    recs = [_rec(1, 1, 1.0, 5.0, 1.0), _rec(1, 2, 2.0, 3.0, 9.0), _rec(1, 3, 3.0, 4.0, 8.0, sel=True),
            _rec(2, 4, 1.0, 3.5, 5.0), _rec(2, 5, 2.0, 3.6, 6.0), _rec(2, 6, 3.0, 9.0, 0.5)]
    rows = leaderboard.leaderboard(recs, private=True, n_select=2)
    by = {r["participant_id"]: r for r in rows}
    assert by[1]["score"] == 8.0  # only the selected entry counts, not the better unselected one
    assert by[2]["score"] == 5.0  # nothing selected: the 2 best public entries
    assert rows[0]["participant_id"] == 2
