"""The submission map (issue 19): families planted in a generated competition are recovered."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest

from evaluation.grouping import group_families, grouping_effect, planted_competition
from evaluation.split import public_private_split
from evaluation.submission_map import log_loss_residuals, residual_correlation, submission_map
from solvers.errors import InputError


@pytest.mark.parametrize("seed", [0, 1])
def test_planted_families_are_recovered_and_lone_submissions_stay_alone(seed):
    lp, y, planted = planted_competition(n_items=2000, seed=seed)
    m = submission_map(lp, y)
    assert sorted(m["families"]) == sorted(planted)
    lone = {f[0] for f in planted if len(f) == 1}
    assert len(lone) == 6 and all([a] in m["families"] for a in lone)
    # every within-family pair is an edge with a clearly positive partial correlation
    w = {tuple(e["pair"]): e["weight"] for e in m["edges"]}
    for f in planted:
        for i in f:
            for j in f:
                if i < j:
                    assert w.get((i, j), 0.0) > 0.2


def test_residuals_and_weights_against_references():
    lp, y, _ = planted_competition(n_items=500, family_sizes=(3,), n_lone=2, seed=3)
    R = log_loss_residuals(lp, y)
    loss = -np.log(np.take_along_axis(np.exp(lp), y[:, None, None], axis=2)[:, :, 0])
    np.testing.assert_allclose(R, loss - loss.mean(axis=1, keepdims=True), atol=1e-9)
    np.testing.assert_allclose(R.sum(axis=1), 0.0, atol=1e-9)
    # the partial correlations are those of Eq 6.5's optimum (off-diagonal penalty) found by cvxpy
    m = submission_map(lp, y)
    C, p = residual_correlation(R), R.shape[1]
    T = cp.Variable((p, p), symmetric=True)
    off = np.ones((p, p)) - np.eye(p)
    cp.Problem(cp.Minimize(cp.trace(C @ T) - cp.log_det(T) + m["lam"] * cp.sum(cp.abs(cp.multiply(off, T))))).solve()
    Theta = T.value
    d = np.sqrt(np.diag(Theta))
    P = -Theta / np.outer(d, d)
    for e in m["edges"]:
        i, j = e["pair"]
        assert e["weight"] == pytest.approx(P[i, j], abs=1e-3)


@pytest.mark.parametrize(
    ("log_probs", "y", "field"),
    [
        (np.zeros((10, 4)), np.zeros(10, dtype=int), "log_probs"),  # not 3-d
        (np.full((10, 4, 3), np.nan), np.zeros(10, dtype=int), "log_probs"),
        (np.log(np.full((10, 2, 3), 1 / 3)), np.zeros(10, dtype=int), "log_probs"),  # 2 submissions
        (np.log(np.full((10, 4, 3), 1 / 3)), np.zeros(9, dtype=int), "y"),
    ],
)
def test_bad_input_names_the_field(log_probs, y, field):
    with pytest.raises(InputError) as err:
        submission_map(log_probs, y)
    assert err.value.field == field


def test_group_families_averages_probabilities():
    lp, y, planted = planted_competition(n_items=50, family_sizes=(3,), n_lone=2, seed=5)
    g = group_families(lp, planted)
    assert g.shape == (50, 3, lp.shape[2])
    np.testing.assert_allclose(np.exp(g[:, 0]), np.exp(lp[:, :3]).mean(axis=1), rtol=1e-6)
    np.testing.assert_allclose(g[:, 1:], lp[:, 3:], atol=1e-9)


def test_grouping_planted_near_copies_moves_the_private_log_loss_little():
    """What the measurement (docs/graphical-models.md) found on planted families: one agent per family
    leaves both pools' private log loss within 0.005 nats of the ungrouped fit."""
    lp, y, planted = planted_competition(n_items=4000, seed=0)
    res = grouping_effect(lp, y, public_private_split(len(y), 0.5, 0))
    assert sorted(res["families"]) == sorted(planted)
    for row in res["rows"]:
        assert abs(row["grouped"] - row["all"]) < 0.005
