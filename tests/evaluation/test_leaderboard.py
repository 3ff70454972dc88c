"""Public and private leaderboards: best entry, ties, the final selection."""

from __future__ import annotations

from evaluation import leaderboard


def _rec(pid, sid, t, pub, priv, sel=False):
    return dict(
        participant_id=pid,
        participant=f"p{pid}",
        submission_id=sid,
        created_at=t,
        public_perplexity=pub,
        private_perplexity=priv,
        selected=sel,
    )


def test_public_leaderboard_best_entry_rank_and_ties():
    recs = [_rec(1, 1, 1.0, 5.0, 4.0), _rec(1, 2, 2.0, 3.0, 9.0), _rec(2, 3, 0.5, 3.0, 1.0), _rec(3, 4, 3.0, 7.0, 2.0)]
    rows = leaderboard.leaderboard(recs)
    assert [r["participant_id"] for r in rows] == [2, 1, 3]  # tie at 3.0 broken by earlier entry
    assert rows[1]["entries"] == 2 and rows[1]["last_submission"] == 2.0 and rows[1]["submission_id"] == 2
    assert [r["rank"] for r in rows] == [1, 2, 3]


def test_private_leaderboard_uses_selection():
    recs = [
        _rec(1, 1, 1.0, 5.0, 1.0),
        _rec(1, 2, 2.0, 3.0, 9.0),
        _rec(1, 3, 3.0, 4.0, 8.0, sel=True),
        _rec(2, 4, 1.0, 3.5, 5.0),
        _rec(2, 5, 2.0, 3.6, 6.0),
        _rec(2, 6, 3.0, 9.0, 0.5),
    ]
    rows = leaderboard.leaderboard(recs, private=True, n_select=2)
    by = {r["participant_id"]: r for r in rows}
    assert by[1]["score"] == 8.0  # only the selected entry counts, not the better unselected one
    assert by[2]["score"] == 5.0  # nothing selected: the 2 best public entries
    assert rows[0]["participant_id"] == 2
