"""Short versions of the chapter 3 reproductions (seed 000 Fig. 3.4, Figs 3.5-3.6, Table 3.4); the full runs
are the scripts in ``reproductions/`` (``make reproduce``), written up beside them."""

import numpy as np
import pytest

from tests.reproduction_scripts import load_reproduction


def test_fig3_4_short_adaspdc_leads_and_every_method_converges():
    """N = D = 200, one seed, 60 passes: at lam = 1e-3 every method is within 1e-2 of the closed-form J* (100x below its start) and
    AdaSPDC within 1e-5; at lam = 1e-6 AdaSPDC is ahead of both SPDC variants (the seed's claim, l.1453)."""
    fig = load_reproduction("fig3_4_adaspdc_ridge")
    panels = fig.run(200, [1e-3, 1e-6], seeds=1, passes=60)
    easy, hard = panels["lam = 0.001"], panels["lam = 1e-06"]
    assert all(c[-1] < 1e-2 and c[-1] < 1e-2 * c[0] for c in easy.values()), {k: c[-1] for k, c in easy.items()}
    assert easy["AdaSPDC"][-1] < 1e-5
    assert all(c.min() >= -1e-12 for cur in panels.values() for c in cur.values())  # J* is the true minimum
    assert hard["AdaSPDC"][-1] < min(hard["SPDC"][-1], hard["SPDC non-uniform"][-1])
    assert "SPDC / AdaSPDC =" in fig.ratios(hard)


def test_fig3_5_3_6_short_logistic_on_breast_cancer():
    """Bundled breast-cancer data, logistic loss, lam = 1e-5, 30 passes: every method descends from its start,
    AdaSPDC ends ahead of uniform SPDC, and Newton's J* is certified by a duality gap <= 1e-10."""
    fig = load_reproduction("fig3_5_3_6_classification")
    panels, gaps = fig.run(["breast_cancer"], "logistic", [1e-5], seeds=1, passes=30)
    cur = panels["breast_cancer, lam = 1e-05"]
    assert all(c[-1] < 0.5 * c[0] for c in cur.values()), {k: (c[0], c[-1]) for k, c in cur.items()}
    assert cur["AdaSPDC"][-1] < cur["SPDC"][-1]
    assert abs(gaps[("breast_cancer", 1e-5)]) <= 1e-10


def test_table3_4_short_passes_to_the_same_objective():
    """Boyd's lasso at (300, 1000, 30): every solver reaches J* (gap-certified) to 1e-4 relative; FISTA needs
    fewer passes than ISTA (the O(1/k^2) rate against O(1/k)) and coordinate descent fewer than all."""
    tab = load_reproduction("table3_4_lasso")
    rows = tab.run(300, 1000, 30, max_passes=200, methods=["ISTA", "FISTA", "ADMM", "PDCP", "coordinate_descent"])
    by = {r["method"]: r for r in rows if "passes to 0.0001" in r}
    assert all(np.isfinite(r["passes to 0.0001"]) for r in by.values()), by
    assert by["FISTA"]["passes to 0.0001"] < by["ISTA"]["passes to 0.0001"]
    cd = by["coordinate_descent"]["passes to 1e-07"]
    assert all(cd < r["passes to 1e-07"] for k, r in by.items() if k != "coordinate_descent"), by
    f_star = rows[-1]["objective"]
    assert all(r["objective"] == pytest.approx(f_star, rel=1e-4) for r in by.values())
