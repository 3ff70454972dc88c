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


def test_split_etas_cuts_the_sorted_etas_into_contiguous_chains_of_least_largest_cost():
    from cluster.fanout import split_etas

    # by count, the later chains (run down from a large eta, the cheaper end) the longer among equal splits
    assert split_etas((30.0, 2.0, 10.0, 5.0), 2) == [[2.0, 5.0], [10.0, 30.0]]
    assert split_etas((1.5, 3.0, 6.0, 12.0, 25.0, 50.0, 100.0), 2) == [[1.5, 3.0, 6.0], [12.0, 25.0, 50.0, 100.0]]
    assert split_etas((1.0, 2.0, 3.0, 4.0, 5.0), 3) == [[1.0], [2.0, 3.0], [4.0, 5.0]]
    assert split_etas((1.0, 2.0, 3.0), 5) == [[1.0], [2.0], [3.0]]  # at most one chain per eta
    # by cost: an expensive last gamma (the fixed point at gamma = 0.01) gets a chain of its own
    assert split_etas((1.0, 2.0, 3.0, 4.0), 2, costs=[1, 1, 1, 5]) == [[1.0, 2.0, 3.0], [4.0]]
    # every contiguous cut into 3 chains of 6 random costs: none has a smaller largest chain
    costs = np.random.default_rng(0).uniform(0.5, 3.0, 6)
    parts = split_etas(range(1, 7), 3, costs=costs)
    assert [e for p in parts for e in p] == [float(e) for e in range(1, 7)]
    best = min(max(costs[:i].sum(), costs[i:j].sum(), costs[j:].sum()) for i in range(1, 5) for j in range(i + 1, 6))
    edges = np.cumsum([0, *map(len, parts)])
    assert max(costs[a:b].sum() for a, b in zip(edges[:-1], edges[1:])) == pytest.approx(best, rel=1e-15)
    for bad, field in (({"n_chains": 0}, "sweep_chains"), ({"n_chains": 2, "costs": [1, 2]}, "costs")):
        with pytest.raises(InputError) as e:
            split_etas((1.0, 2.0, 3.0), **bad)
        assert e.value.field == field


def test_two_chains_in_process_start_the_second_from_the_pools_own_start_and_go_down():
    from cluster.fanout import warm_chain, warm_sweep

    lp, y = make_family("gaussian-logit", 800, 4, 5, seed=4)
    args = (lp[:400], y[:400], lp[400:], y[400:])
    serial = warm_sweep(*args, (2.0, 5.0, 10.0))
    chains = warm_sweep(*args, (2.0, 5.0, 10.0), chains=2)  # [2] up from w0, [5, 10] down from 10
    cold = gamma_sweep(*args, (10.0,))  # one cold-started point
    assert chains[:1] == serial[:1] and chains[2:] == cold
    # eta = 5 warm from eta = 10's weights: the serial point (warm from eta = 2's) to the solver's tolerance
    assert chains[1]["public_perplexity"] == pytest.approx(serial[1]["public_perplexity"], rel=1e-5)
    down = warm_chain(*args, [5.0, 10.0], None, down=True)  # the same chain, points in the order given
    assert [p[0].gamma for p in down] == [0.2, 0.1]
    assert [p[1] for p in down] == [chains[1]["public_perplexity"], chains[2]["public_perplexity"]]


def test_later_chains_start_from_the_log_pools_weights_where_their_own_start_is_a_log_pool_fit():
    from aggregators.registry import make_pool
    from cluster.fanout import later_start, warm_chain, warm_sweep

    w = [0.5, 0.5]
    assert later_start([5.0, 10.0], w) is w  # gamma = 0.1 <= LIMIT_START_GAMMA: the own start is a log-pool fit
    assert later_start([2.0, 4.0], w) is w  # gamma = 0.25, the limit itself
    assert later_start([2.0, 3.0], w) is None  # gamma = 1/3: the pool's own start is not the log pool's
    assert later_start([5.0, 10.0], None) is None
    lp, y = make_family("gaussian-logit", 800, 4, 5, seed=4)
    args = (lp[:400], y[:400], lp[400:], y[400:])
    etas = (2.0, 5.0, 10.0)
    w_top = [float(x) for x in make_pool("log").fit(args[0], args[1]).weights_]
    serial = warm_sweep(*args, etas)
    own = warm_sweep(*args, etas, chains=2)  # [5, 10] from the pool's own start
    chains = warm_sweep(*args, etas, chains=2, w_top=w_top)  # [2] up from w0, [5, 10] down from the log pool
    assert chains[:1] == serial[:1]
    down = warm_chain(*args, [5.0, 10.0], w_top, down=True)  # the later chain, exactly
    assert [p[1] for p in down] == [r["public_perplexity"] for r in chains[1:]]
    assert [list(p[0].weights_) for p in down] == [r["weights"] for r in chains[1:]]
    # the points are the serial sweep's, and the own-start chain's, to the solver's tolerance on the
    # public objective (a start changes nothing else); the private perplexity, not minimised, moves more
    # on this flat optimum (measured against the serial sweep 1.3e-4, the same from either start)
    for a, b, c in zip(chains[1:], serial[1:], own[1:]):
        for ref, private in ((b, 1e-3), (c, 1e-4)):
            assert a["public_perplexity"] == pytest.approx(ref["public_perplexity"], rel=1e-5)
            assert a["private_perplexity"] == pytest.approx(ref["private_perplexity"], rel=private)
