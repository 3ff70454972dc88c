"""The fan-out's fits against the serial competition aggregation (in-process; the Dask run is in test_on_dask)."""

import numpy as np
import pytest

from benchmarks.logpool_families import make_family
from cluster.fanout import gamma_sweep, leave_one_out
from evaluation.aggregation import aggregate_submissions
from solvers.errors import InputError


def test_fan_out_matches_the_serial_aggregation():
    lp, y = make_family("gaussian-logit", 800, 4, 5, seed=4)
    args = (lp[:400], y[:400], lp[400:], y[400:])
    serial = aggregate_submissions(*args, etas=(2.0, 5.0), methods=("log", "renyi"))
    sweep = gamma_sweep(*args, (5.0, 2.0))
    assert [p["eta"] for p in sweep] == [2.0, 5.0]
    for p, q in zip(sweep, [r for r in serial["gamma_sweep"] if r["eta"] != 1.0]):
        # cold starts against the serial sweep's warm starts: equal to the sweep's solver tolerance
        assert p["public_perplexity"] == pytest.approx(q["public_perplexity"], rel=1e-4)
    gains = leave_one_out(*args)
    assert serial["loo_mode"] == "refit"
    np.testing.assert_allclose(gains, [c["loo_gain"] for c in serial["credit"]], atol=1e-8)
    with pytest.raises(InputError):
        gamma_sweep(*args, (0.0,))
