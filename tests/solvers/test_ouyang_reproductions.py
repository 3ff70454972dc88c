"""The reproductions of seed 002's experiments (reproductions/ouyang_*.py): short cells in the normal
suite, the full runs under ``make reproduce`` (``slow``). Each assertion is a claim of the seed that
holds on these data, or a sanity bound; the claims that do not hold here are in docs/stochastic-methods.md."""

from __future__ import annotations

import numpy as np
import pytest

from tests.reproduction_scripts import load_reproduction

e1 = load_reproduction("ouyang_e1_least_squares")
e2 = load_reproduction("ouyang_e2_ansgd")
t5 = load_reproduction("ouyang_table5_sfw")


def test_e1_short_sgd_beats_one_gd_iteration_when_noisy_and_ties_after_epochs():
    sig = 1e-1
    gd, sgd = np.mean([e1.test_error(2000, sig, 1, s) for s in range(3)], axis=0)
    assert sgd < gd / 10  # "SGD beats GD for all N > 500 in the noisy case"
    assert sgd < 1.5 * sig**2  # one epoch reaches the noise floor
    gd, sgd = np.mean([e1.test_error(2000, 1e-3, 20, s) for s in range(3)], axis=0)
    assert 0.5 < gd / sgd < 2  # "at sigma = 1e-3 and >= 10 epochs, GD and SGD are close"


def _ansgd_gap_to_best(r: dict) -> float:
    """ANSGD's final training objective over the best of the four methods' (1 = the best)."""
    final = {k: v["train"][:, -1].mean() for k, v in r.items()}
    return final["ANSGD"] / min(final.values())


def test_e2_short_breast_cancer_ansgd_within_10_percent_of_the_best_method():
    # the seed's "ANSGD's objective falls faster everywhere" does NOT hold here (docs/stochastic-methods.md);
    # what holds on the classification sets: ANSGD is within 10 % of the best tuned baseline
    data = e2.datasets(quick=True)["breast_cancer"]
    for mode in ("convex", "strongly_convex"):
        r = e2.run("breast_cancer", data, mode, epochs=8, seeds=3)
        assert _ansgd_gap_to_best(r) < 1.10, mode
        assert all(v["acc"][:, -1].mean() > 0.93 for v in r.values())


def test_table5_short_sfw_msfw_smo_and_pegasos_match_svc_accuracy():
    for name in ("breast_cancer", "digits (<5 vs >=5)"):
        r = t5.run_set(*t5.load(name, quick=True))
        svc = r["SVC (SMO-wss2, L1)"]["acc"]
        for k in ("SFW 2ep", "MSFW 1ep", "MSFW 2ep", "SMO-L2 (LibSVM, CVM dual)"):
            assert r[k]["acc"] >= svc - 0.015, (name, k, r[k]["acc"], svc)
        assert r["Pegasos 1ep"]["acc"] >= svc - 0.02, name  # one epoch of Pegasos: 96.05 / 96.94 % here
        assert r["MSFW 2ep"]["acc"] > r["SGD-linear"]["acc"]
        # the first epoch of the 2-epoch run is read at its end: a shorter time
        assert r["SFW 1ep"]["seconds"] < r["SFW 2ep"]["seconds"]


@pytest.mark.slow
def test_e1_full_sgd_beats_gd_for_every_noisy_n_above_500():
    res = e1.run(e1.NS, 10)
    for fig in ("Fig 4 (sigma 1e-3)", "Fig 4 (sigma 1e-1)"):
        e = res[(fig, 1)]
        big = np.array(e1.NS) > 500
        assert np.all(e[big, 1] < e[big, 0]), fig


@pytest.mark.slow
def test_e2_full_strongly_convex_untuned_ansgd_within_2_percent_of_the_best_tuned_baseline():
    res = e2.compute(False, 20, 10)  # the recorded run: the seed's 20 epochs x 10 seeds
    for key, r in res.items():
        if key.endswith("strongly_convex") and not key.startswith("diabetes"):
            assert _ansgd_gap_to_best(r) < 1.02, key  # recorded: 1.001-1.010
    for key in ("breast_cancer / convex", "alpha-like / convex"):
        assert _ansgd_gap_to_best(res[key]) < 1.10, key  # recorded: 1.070, 1.007 (real-sim-like: 1.215)


@pytest.mark.slow
def test_table5_full_msfw_two_epochs_within_1p5_points_of_svc_on_the_seed_sized_small_sets():
    # the recorded run's three smallest generated / bundled stand-ins (a9a-, ijcnn1-, covtype-like take an hour)
    for name, (_, r) in t5.compute(False, only="svmguide1,w3a,usps01").items():
        svc = r["SVC (SMO-wss2, L1)"]["acc"]
        assert r["MSFW 2ep"]["acc"] >= svc - 0.015, name
        assert r["SMO-L2 (LibSVM, CVM dual)"]["acc"] >= svc - 0.015, name
