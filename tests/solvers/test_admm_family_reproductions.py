"""Short versions of the ADMM-family reproductions (reproductions/table3_3_rpca.py, ouyang_e3_lasso.py); the
full runs are under ``make reproduce`` (``slow``). Each assertion is what the full run found (see the .md
files): the claims of the seeds that hold here, and the ones that do not, stated as measured."""

from __future__ import annotations

import numpy as np
import pytest

from tests.reproduction_scripts import load_reproduction

t33 = load_reproduction("table3_3_rpca")
e3 = load_reproduction("ouyang_e3_lasso")


def _passes(rows):
    return {r["method"]: r["passes"] for r in rows}


def test_table3_3_short_every_convergent_method_reaches_the_same_objective():
    res = t33.run(20, 40, 2, 120)
    rows = t33.table(res)
    p = _passes(rows)
    for r in rows:
        if r["method"] == "SP-BCD1 printed sigma=1/m":
            assert r["final_res"] > 1.0  # P of Eq. 3.54 indefinite: SP-BCD diverges with the printed sigma = 1
            continue
        assert r["passes"] is not None, r  # target 1e-8 on residual and objective within 120 passes
        assert r["objective"] == pytest.approx(res["F"], rel=1e-8)
    # Table 3.3's ordering at its ends: Gauss-Seidel ADMM needs the fewest passes, PDCP more than it and SP-BCD
    assert p["GSADMM"] == min(v for v in p.values() if v is not None)
    assert p["PDCP"] > max(p["SP-BCD1"], p["SP-BCD3"])


def test_e3_short_diabetes():
    data = e3.datasets(quick=True)
    r = e3.curves(data["diabetes z-scored"], [50, 350, 1400], seeds=2)
    c = r["curves"]
    # rows of norm ~3 with eta_1 = 1: the ADMM penalty damps the x-step (eta/(1 + beta eta) <= 1/beta),
    # FOBOS's does not: stochastic ADMM far ahead of FOBOS, online ADMM (exact sample step) ahead of both
    assert np.all(c["stochastic_admm"]["gap"].mean(0) < c["fobos"]["gap"].mean(0) / 10)
    assert np.all(c["online_admm"]["gap"].mean(0) < c["stochastic_admm"]["gap"].mean(0))
    assert c["online_admm"]["mse"][:, -1].mean() < 1.05 * r["mse_opt"]
    r = e3.curves(data["diabetes |a_i| <= 1"], [350, 1400], seeds=2)
    end = {m: v["gap"][:, -1].mean() for m, v in r["curves"].items()}
    # bounded rows: the three are within a factor 1.5 (the seed's "slightly better" for stochastic ADMM does
    # not hold: FOBOS's larger effective step is ahead)
    assert max(end.values()) < 1.5 * min(end.values())
    assert end["fobos"] <= end["stochastic_admm"]
    # Thm 8's eta_k = 1/(mu k) with the data's small mu: FOBOS's first steps overflow, the ADMMs' are damped
    rates = e3.schedule_rates(data["diabetes |a_i| <= 1"], 8, 1)
    assert rates[("fobos", "strong")][0] == np.inf
    for m in ("stochastic_admm", "online_admm"):
        assert rates[(m, "strong")][0] < 0.02
        assert rates[(m, "convex")][1] < -0.5  # the 1/sqrt(k) rule's average decays at least at Thm 7's rate


@pytest.mark.slow
def test_table3_3_full():
    res = t33.run(**{k: v for k, v in t33.FULL.items()})
    rows = t33.table(res)
    p = _passes(rows)
    assert p["GSADMM"] == min(v for v in p.values() if v is not None)
    for label in ("ADMM", "PDCP", "SP-BCD1", "SP-BCD2", "SP-BCD3"):
        assert p[label] is not None, label


@pytest.mark.slow
def test_e3_full_runs():
    res = e3.run(quick=False, seeds=3)
    for r in res.values():
        for m in e3.METHODS:
            assert r["curves"][m]["gap"].mean(0)[-1] < r["curves"][m]["gap"].mean(0)[0]
