"""The isoelastic machine-learning market as one more aggregate of a competition's submissions.

Each submission is an agent with isoelastic utility (risk aversion ``eta``; seed 000 section 2.8:
its effective belief mixes with the price as the Rényi pool does with ``gamma = 1/eta``). The
market is trained on the validation part (batch epochs, wealth conserved) and its equilibrium
prices under the trained wealth are the aggregate on the private part. The final wealth is the
market's credit for each submission; ``wealth_history`` (epochs x agents) feeds the lab's plot.
"""

from __future__ import annotations

import numpy as np

from aggregators.metrics import perplexity
from markets.estimator import MarketPool

MAX_EPOCHS = 30
"""The default epoch cap; the organiser may set another per run (``market_max_epochs``)."""
MAX_EPOCHS_LIMIT = 5000
WEALTH_TOL = 1e-6


def fit_market(val_lp, val_y, test_lp, *, eta: float = 10.0, max_epochs: int = MAX_EPOCHS, progress=None):
    """Train on ``(val_lp, val_y)``, predict ``test_lp``; returns ``(test_log_probs, info)``.

    ``info`` holds the market's ``params``, its ``public_perplexity`` on the validation part, the
    final ``wealth``, the ``wealth_history`` and the fitted ``model`` (a ``MarketPool``; not JSON).
    """
    market = MarketPool(utilities=float(eta), max_epochs=int(max_epochs), wealth_tol=WEALTH_TOL).fit(
        val_lp, val_y, progress=progress
    )
    pred = market.predict(test_lp)
    val_pred = market.predict(val_lp)
    public = perplexity(val_pred, val_y)
    hist = np.asarray(market.wealth_history_, dtype=float)
    return pred, {
        "model": market,
        "params": {
            "utility": "isoelastic",
            "eta": float(eta),
            "epochs": int(market.n_epochs_),
            "converged": bool(market.converged_),
            "max_epochs": int(max_epochs),
        },
        "public_perplexity": public,
        "wealth": [float(w) for w in market.wealth_],
        "wealth_history": [[float(w) for w in row] for row in hist],
    }
