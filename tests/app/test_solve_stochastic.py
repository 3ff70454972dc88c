"""/v1/solve runs the stochastic-smoothing and stochastic Frank-Wolfe solvers of seed 002 by name, and
refuses an unknown option with a 422 naming it."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.problems.cvm_svm import CVMDual
from solvers.problems.smoothable import SmoothableLinearModel


def test_solve_ansgd_and_msfw_through_the_service(client):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4)) / 2
    y = np.sign(X @ np.ones(4) + 0.1 * rng.normal(size=60))
    hinge = {"X": X.tolist(), "y": y.tolist(), "loss": "hinge", "l2": 0.1}

    def solve(problem: str, method: str, data: dict, options: dict):
        return client.post("/v1/solve", json={"problem": problem, "method": method, "data": data, "options": options})

    r = solve("SmoothableLinearModel", "ansgd", hinge, {"max_iter": 5, "schedule": "practical", "seed": 1})
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["fun"] == pytest.approx(SmoothableLinearModel(X, y, "hinge", l2=0.1).value(np.array(d["x"])))
    assert len(d["trace"]["objective"]) == 6
    r = solve("CVMDual", "msfw", {"X": X.tolist(), "y": y.tolist(), "C": 1.0, "sigma": 1.0}, {"max_iter": 3})
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["fun"] == pytest.approx(CVMDual(X, y, C=1.0, sigma=1.0).value(np.array(d["x"])), rel=1e-10)
    r = solve("SmoothableLinearModel", "ansgd", hinge, {"stepsize": 1.0})
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "options.stepsize"
