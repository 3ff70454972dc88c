"""Fit a pool on a validation set, then reuse it on new predictions: /v1/pools.

Fits a log pool and a Rényi pool with a γ sweep (the validation curve comes back with it),
predicts with both on a test set, lists the stored pools and deletes them.
"""

import numpy as np
from _common import parse_args, synthetic

from app.client import AgoraClient

args = parse_args(__doc__)
lp, y = synthetic(900, 6, 5, seed=2)
val, test = slice(0, 600), slice(600, None)
with AgoraClient(args.url, api_key=args.api_key) as c:
    # upload the validation predictions once (.npy) and refer to them by id
    aid = c.upload_array(lp[val])
    log_pool = c.create_pool("log", aid, y[val], name="example log pool")
    print("log pool weights:", np.round(log_pool["weights"], 3), "solver:", log_pool["fit"].get("method"))
    renyi = c.create_pool("renyi", aid, y[val], gamma=[0.01, 0.03, 0.1, 0.3, 1.0], name="example renyi sweep")
    print("renyi: best gamma", renyi["gamma"], "weights", np.round(renyi["weights"], 3))
    curve = renyi["validation_curve"]
    if curve:
        print("validation curve keys:", sorted(curve))
    for pool in (log_pool, renyi):
        agg, metrics = c.predict(pool["id"], lp[test], labels=y[test])
        print(f"{pool['method']:6s} test log loss {metrics['log_loss']:.4f}  accuracy {metrics['accuracy']:.3f}")
    print("stored pools:", [p["id"] for p in c.list_pools()][:5])
    for pool in (log_pool, renyi):
        c.delete_pool(pool["id"])
