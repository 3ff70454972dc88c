"""A competition from both sides: the organiser creates it (invitation only, Ladder scores),
participants join with their codes and upload, the organiser aggregates every submission, pins
the final run and reads Table 2.3.

agora serve &                       # or: make run
AGORA_API_KEY=<a key with scope write> python examples/competition.py
"""

from datetime import UTC, datetime, timedelta

import numpy as np
from _common import parse_args, synthetic

from app.client import AgoraClient, AgoraError

args = parse_args(__doc__)
n_items, n_agents, k = 300, 4, 3
lp, y = synthetic(n_items, n_agents, k, seed=7)
ids = np.arange(n_items, dtype=np.int64) + 2**60  # item ids are exact 64-bit integers
deadline = (datetime.now(UTC) + timedelta(days=7)).isoformat()

with AgoraClient(args.url, api_key=args.api_key) as org:
    comp = org.create_competition(
        "example cup",
        k,
        y,
        deadline,
        item_ids=ids,
        join_policy="invite",
        score_mechanism="ladder",
        score_step=0.01,
        daily_cap=5,
    )
    cid = comp["id"]
    print("competition", cid, "deadline", comp["deadline"], "scores shown by", comp["score_mechanism"])
    codes = org.invite(cid, n_agents, note="the example's participants")
    try:
        org.join(cid, "no code")
    except AgoraError as exc:
        print("joining without an invitation:", exc.status)

    for a in range(n_agents):
        token = org.join(cid, f"agent{a}", invitation=codes[a])["token"]
        with AgoraClient(args.url, api_key=token) as me:
            items = me.competition_items(cid)
            sub = me.submit(cid, items, lp[:, a], description=f"synthetic agent {a}")
            print(f"agent{a}: shown public perplexity {sub['public_perplexity']:.2f}")

    for row in org.leaderboard(cid)["rows"]:
        print(f"  rank {row['rank']}  {row['participant']:7s}  {row['score']:.2f}")
    run = org.aggregate_competition(cid, methods=["average", "linear", "log"])
    org.pin_aggregation(cid, run["id"])
    print("run", run["id"], "used", len(run["result"]["used"]), "left out", len(run["result"]["left_out"]))
    for row in run["result"]["rows"]:
        print(f"  {row['label']:18s} public {row['public_perplexity']:.3f}  private {row['private_perplexity']:.3f}")
