"""Leaderboards: public (best public score per participant) and, after the deadline, private
(each participant's selected submissions, scored on the hidden part).

Pure functions over plain records, so the ranking rules are testable without a database. A record
is a mapping with ``participant_id``, ``participant``, ``submission_id``, ``created_at``,
``public_perplexity``, ``private_perplexity`` and ``selected``. Lower perplexity is better; ties
are broken by the earlier submission (the Kaggle convention).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping


def _group(records: Iterable[Mapping]) -> dict:
    by = defaultdict(list)
    for r in records:
        by[r["participant_id"]].append(r)
    return by


def final_selection(subs: list[Mapping], n_select: int) -> list[Mapping]:
    """The submissions that count for the private ranking: the participant's selected ones (at
    most ``n_select``, the latest selections win), or, when none is selected, their
    ``n_select`` best by public score (the decision taken where the issue is silent; Kaggle does
    the same)."""
    chosen = [s for s in subs if s.get("selected")]
    if chosen:
        chosen.sort(key=lambda s: s["created_at"], reverse=True)
        return chosen[:n_select]
    return sorted(subs, key=lambda s: (s["public_perplexity"], s["created_at"]))[:n_select]


def leaderboard(records: Iterable[Mapping], *, private: bool = False, n_select: int = 2) -> list[dict]:
    """Ranked rows: ``rank``, ``participant``, ``participant_id``, ``score`` (perplexity),
    ``submission_id`` (the scoring entry), ``entries`` and ``last_submission``.

    ``private=False`` ranks by the best public perplexity over all entries; ``private=True`` by
    the best private perplexity over :func:`final_selection`.
    """
    rows = []
    for pid, subs in _group(records).items():
        if private:
            pool = final_selection(subs, n_select)
            best = min(pool, key=lambda s: (s["private_perplexity"], s["created_at"]))
            score = best["private_perplexity"]
        else:
            best = min(subs, key=lambda s: (s["public_perplexity"], s["created_at"]))
            score = best["public_perplexity"]
        rows.append(
            {
                "participant_id": pid,
                "participant": best["participant"],
                "score": float(score),
                "submission_id": best["submission_id"],
                "scored_at": best["created_at"],
                "entries": len(subs),
                "last_submission": max(s["created_at"] for s in subs),
            }
        )
    rows.sort(key=lambda r: (r["score"], r["scored_at"]))
    for i, r in enumerate(rows, 1):
        r["rank"] = i
        del r["scored_at"]
    return rows
