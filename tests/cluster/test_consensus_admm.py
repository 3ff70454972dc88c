"""Consensus ADMM (seed 002 Alg. 9-10) in-process: the centralized optimum, the rules, bad input.

The runs on a real multi-process Dask cluster are in ``test_on_dask.py``.
"""

import numpy as np
import pytest
import scipy.optimize as so

from cluster import graphs as g
from cluster.consensus_admm import Shard, beta_grid, consensus_admm
from solvers.errors import InputError
from tests.input_errors import assert_names


def _least_squares(n_nodes=6, D=5, m=20, seed=0):
    rng = np.random.default_rng(seed)
    xt = rng.normal(size=D)
    shards = []
    for _ in range(n_nodes):
        S = rng.normal(size=(m, D))
        shards.append((S, S @ xt + 0.1 * rng.normal(size=m)))
    S = np.vstack([s[0] for s in shards])
    l = np.concatenate([s[1] for s in shards])
    return shards, np.linalg.lstsq(S, l, rcond=None)[0]


def _logistic(n_nodes=4, D=4, m=30, ridge=0.5, seed=1):
    rng = np.random.default_rng(seed)
    xt = rng.normal(size=D)
    shards = []
    for _ in range(n_nodes):
        S = rng.normal(size=(m, D))
        shards.append(Shard(S, np.sign(S @ xt + rng.normal(size=m)), "logistic", ridge))
    S = np.vstack([s.S for s in shards])
    l = np.concatenate([s.l for s in shards])
    a = ridge * n_nodes

    def fun(x):
        z = l * (S @ x)
        sig = 0.5 * (1 - np.tanh(0.5 * z))
        return np.logaddexp(0, -z).sum() + 0.5 * a * x @ x, -S.T @ (l * sig) + a * x

    def hess(x):
        sig = 0.5 * (1 - np.tanh(0.5 * l * (S @ x)))
        return S.T @ ((sig * (1 - sig))[:, None] * S) + a * np.eye(D)

    ref = so.minimize(fun, np.zeros(D), jac=True, hess=hess, method="trust-exact", options={"gtol": 1e-13})
    return shards, ref.x


@pytest.mark.parametrize("name", g.TOPOLOGIES)
@pytest.mark.parametrize("beta", [5.0, "adaptive", "he", "sqrt"])
def test_every_topology_and_rule_reaches_the_least_squares_optimum(name, beta):
    shards, x_star = _least_squares()
    res = consensus_admm(g.topology(name, 6), shards, beta=beta, max_rounds=3000, tol=1e-9)
    assert res.converged, (res.message, res.extra["r"][-1], res.extra["s"][-1])
    np.testing.assert_allclose(res.extra["node_values"], np.broadcast_to(x_star, (6, 5)), atol=1e-7)
    # the reported objective is sum_i f_i at the (agreeing) node vectors
    assert res.fun == pytest.approx(sum(np.sum((S @ x_star - l) ** 2) for S, l in shards), rel=1e-8)


def test_logistic_consensus_equals_the_centralized_newton_optimum():
    shards, x_star = _logistic()
    res = consensus_admm(g.complete_bipartite(2, 2), shards, beta="adaptive", max_rounds=500, tol=1e-11)
    assert res.converged
    np.testing.assert_allclose(res.x, x_star, atol=1e-9)


def test_residuals_decrease_linearly_and_the_orders_agree_at_the_optimum():
    shards, x_star = _least_squares(n_nodes=8)
    G = g.ring(8)
    a = consensus_admm(G, shards, beta=5.0, max_rounds=400, tol=1e-10)
    b = consensus_admm(G, shards, beta=5.0, max_rounds=400, tol=1e-10, order="right-first")
    r = np.array(a.extra["r"])
    assert r[-1] < 1e-6 * r[0]  # linear convergence (Thm 13): a million-fold drop in a few hundred rounds
    np.testing.assert_allclose(a.x, x_star, atol=1e-8)
    np.testing.assert_allclose(b.x, x_star, atol=1e-8)
    assert a.extra["floats_per_round"] == 2 * 5 * G.n_edges


def test_alg10_initial_beta_is_eq150_and_sqrt_rule_is_eq152():
    shards, _ = _least_squares(n_nodes=4)
    G = g.master_slave(4)  # master 0 on the left, 3 slaves of degree 1 on the right
    a = consensus_admm(G, shards, beta="adaptive", max_rounds=1)
    L2 = max(np.linalg.eigvalsh(2 * S.T @ S)[-1] for S, _ in shards[1:])
    assert a.extra["beta"][0] == pytest.approx(L2 / 1.0)  # Prop. 4: max right degree 1
    s = consensus_admm(G, shards, beta="sqrt", max_rounds=1)
    mu1 = np.linalg.eigvalsh(2 * shards[0][0].T @ shards[0][0])[0]
    assert s.extra["beta"][0] == pytest.approx(np.sqrt(mu1 * L2))


def test_beta_grid_picks_the_best_final_residual():
    shards, _ = _least_squares(n_nodes=4)
    best, runs = beta_grid(g.ring(4), shards, [0.1, 3.0, 300.0], max_rounds=30)
    final = [max(r.extra["r"][-1], r.extra["s"][-1]) for r in runs]
    assert best == [0.1, 3.0, 300.0][int(np.argmin(final))]
    assert min(final) < max(final)


def test_a_worker_without_data_in_a_role_that_needs_it():
    shards, _ = _least_squares(n_nodes=4)
    shards[2] = (np.zeros((0, 5)), np.zeros(0))  # f ≡ 0
    G = g.ring(4)  # node 2 is on the left (even), nodes 1, 3 on the right
    with pytest.raises(InputError) as e:
        consensus_admm(G, shards, beta="sqrt", max_rounds=5)
    assert e.value.field == "shards[2]" and "f ≡ 0" in e.value.reason
    # Alg. 10 needs the right side: a data-less left node is fine, a data-less right node is not
    consensus_admm(G, shards, beta="adaptive", max_rounds=5)
    shards[1] = (np.zeros((0, 5)), np.zeros(0))
    assert_names("shards[1]", consensus_admm, G, shards, beta="adaptive", max_rounds=5)
    # a fixed beta needs no constants: consensus ADMM still solves it (data-less masters, §5.2)
    res = consensus_admm(G, shards, beta=2.0, max_rounds=3000, tol=1e-9)
    assert res.converged


def test_bad_arguments_name_themselves():
    shards, _ = _least_squares(n_nodes=4)
    G = g.ring(4)
    for kw, field in (
        ({"beta": -1.0}, "beta"),
        ({"beta": "fast"}, "beta"),
        ({"max_rounds": 0}, "max_rounds"),
        ({"order": "random"}, "order"),
        ({"q_th": 1.0}, "q_th"),
        ({"loss": "hinge"}, "loss"),
    ):
        assert_names(field, consensus_admm, G, shards, **kw)
    assert_names("shards", consensus_admm, G, shards[:3])
    assert_names("shards[3]", consensus_admm, G, [*shards[:3], (np.ones((3, 4)), np.ones(3))])
    assert_names(
        "shards[3]", consensus_admm, G, [*shards[:3], Shard(np.ones((2, 5)), np.array([0.0, 1.0]), "logistic")]
    )
