"""Pool predictions without storing anything: POST /v1/aggregate with several methods.

agora serve &                       # or: make run
python examples/aggregate.py
"""

import numpy as np
from _common import parse_args, synthetic

from app.client import AgoraClient

args = parse_args(__doc__)
lp, y = synthetic(200, 5, 4, seed=1)
with AgoraClient(args.url, api_key=args.api_key) as c:
    print("server:", c.health())
    for method, params in [
        ("average", {}),
        ("linear", {"weights": [0.1, 0.1, 0.2, 0.3, 0.3]}),
        ("log", {"weights": [0.1, 0.1, 0.2, 0.3, 0.3]}),
        ("renyi", {"gamma": 0.1}),
    ]:
        agg, info = c.aggregate(lp, method=method, info=True, **params)
        ll = agg[np.arange(len(y)), y].mean()
        print(f"{method:8s} mean log-likelihood of the truth {ll:+.4f}   floored entries {info['n_floored']}")
