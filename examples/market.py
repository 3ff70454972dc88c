"""Run a machine-learning market: stateless equilibrium, then a stored market trained on labelled
data (Algorithm 2.4), its wealth history, and its predictions: /v1/markets."""

import numpy as np
from _common import parse_args, synthetic

from app.client import AgoraClient

args = parse_args(__doc__)
lp, y = synthetic(400, 4, 3, seed=3)
with AgoraClient(args.url, api_key=args.api_key) as c:
    prices, summary = c.equilibrium(lp[:3], utilities=2.0, wealth=[0.4, 0.3, 0.2, 0.1], output="probs")
    print("isoelastic (eta=2) equilibrium prices:\n", np.round(prices, 4), "\nchecks:", summary["max_clearing_error"])
    m = c.create_market(4, utilities="log", mode="batch", max_epochs=100, name="example market")
    m = c.train_market(m["id"], lp[:300], y[:300])
    print("trained wealth:", np.round(m["wealth"], 4), "epochs:", m["trainings"][-1]["n_epochs"])
    hist = c.wealth_history(m["id"])
    print("wealth history:", hist.shape, "first row", np.round(hist[0], 3), "last row", np.round(hist[-1], 3))
    test_prices = c.market_predict(m["id"], lp[300:], output="log_probs")
    print("test log-likelihood of the truth:", test_prices[np.arange(100), y[300:]].mean())
    c.delete_market(m["id"])
