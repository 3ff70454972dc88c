"""SP-BCD, SPDC and AdaSPDC against cvxpy / closed forms, the P >= 0 step check, and their bad input."""

import cvxpy as cp
import numpy as np
import pytest

import solvers
from solvers.errors import InputError
from solvers.methods.spbcd import step_sizes, steps_psd
from solvers.problems.erm import ERM
from solvers.problems.rpca import RPCA
from solvers.prox import L1, ElasticNet, SquaredL2

CLARABEL = {"solver": "CLARABEL", "tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12}


def lasso_data(n=50, d=20, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, d))
    return A, A @ np.where(rng.random(d) < 0.3, 1.0, 0.0) + 0.1 * rng.normal(size=n)


@pytest.mark.parametrize(
    ("m", "block_size", "sampling"), [(1, 1, "perm-cyclic"), (5, 1, "uniform"), (2, 4, "perm-cyclic")]
)
def test_spbcd_lasso_matches_cvxpy(m, block_size, sampling):
    A, b = lasso_data()
    x = cp.Variable(20)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(A @ x - b) / 50 + 0.05 * cp.norm1(x)))
    prob.solve(**CLARABEL)
    r = solvers.minimize(
        ERM(A, b, L1(0.05)), "spbcd", m=m, block_size=block_size, sampling=sampling, tol=1e-12, max_iter=20000
    )
    assert r.converged, r.message
    assert r.fun == pytest.approx(prob.value, rel=1e-8)
    np.testing.assert_allclose(r.x, x.value, atol=1e-6)


@pytest.mark.parametrize("m", [1, 2, 3])
def test_spbcd_rpca_matches_cvxpy_and_the_thesis_rule_is_psd(m):
    pb = RPCA.generate(8, 10, 2, seed=4)
    X = [cp.Variable(pb.shape) for _ in range(3)]
    g2, g3 = pb.f.parts[1].lam, pb.f.parts[2].lam
    obj = 0.5 * cp.sum_squares(X[0]) + g2 * cp.sum(cp.abs(X[1])) + g3 * cp.normNuc(X[2])
    prob = cp.Problem(cp.Minimize(obj), [X[0] + X[1] + X[2] == pb.B])
    prob.solve(solver="CLARABEL")
    r = solvers.minimize(pb, "spbcd", m=m, tol=1e-11, max_iter=50000)
    assert r.converged, r.message
    assert pb.residual(r.x) < 1e-8 * np.linalg.norm(pb.B)
    assert r.fun == pytest.approx(prob.value, rel=1e-7)
    # Eq. 3.54: sigma = (m/q)/m = 1/3 with tau = 1 sits exactly on the PSD boundary for every m
    sad = pb.saddle_point()
    tau = np.ones(sad.dim)
    for S in ([0], [0, 2], [0, 1, 2])[:m]:
        val = steps_psd(*step_sizes(sad.A, sad.blocks, np.array(S), len(S), "thesis", tau, None)[1:], len(S), 3)
        assert val == pytest.approx(1.0, abs=1e-8)


@pytest.mark.parametrize("m", [1, 2])
def test_the_printed_rpca_sigma_breaks_p_psd_for_m_below_3(m):
    pb = RPCA.generate(4, 5, 1, seed=0)
    sad = pb.saddle_point()
    val = steps_psd(*step_sizes(sad.A, sad.blocks, np.arange(m), m, "printed", np.ones(sad.dim), None)[1:], m, 3)
    assert val == pytest.approx(3.0 / m)  # Schur complement (m^2/3 - m) I < 0 <=> q sigma tau = 3/m > 1
    with pytest.raises(InputError) as e:
        solvers.minimize(pb, "spbcd", m=m, step_rule="printed")
    assert e.value.field == "step_rule"
    # allowed on request (to compare with Table 3.3), and at m = 3 the printed rule is the thesis rule
    r = solvers.minimize(pb, "spbcd", m=m, step_rule="printed", check_steps=False, max_iter=3)
    assert r.n_iter == 3
    solvers.minimize(pb, "spbcd", m=3, step_rule="printed", max_iter=3)


@pytest.mark.parametrize("method", ["spdc", "adaspdc"])
@pytest.mark.parametrize("m", [1, 8])
def test_spdc_ridge_matches_the_closed_form(method, m):
    rng = np.random.default_rng(1)
    N, D, lam = 80, 20, 1e-2
    A = rng.normal(size=(N, D)) * (np.arange(1, D + 1) ** -0.5)
    b = A @ np.ones(D) + rng.normal(size=N)
    pb = ERM(A, b, SquaredL2(lam))
    x_star = np.linalg.solve(A.T @ A / N + lam * np.eye(D), A.T @ b / N)
    r = solvers.minimize(pb, method, m=m, tol=1e-12, max_iter=5000)
    assert r.converged, r.message
    assert r.fun == pytest.approx(pb.value(x_star), rel=1e-10)
    assert np.linalg.norm(r.x - x_star) <= np.sqrt(2 * r.trace.extra["gap"][-1] / lam) + 1e-12
    assert {"theta", "tau", "gap"} <= set(r.trace.extra)


@pytest.mark.parametrize("loss", ["smooth_hinge", "logistic"])
def test_adaspdc_classification_matches_cvxpy(loss):
    rng = np.random.default_rng(2)
    N, D, lam = 60, 8, 1e-2
    A = rng.normal(size=(N, D))
    y = np.where(A @ rng.normal(size=D) + 0.5 * rng.normal(size=N) > 0, 1.0, -1.0)
    x = cp.Variable(D)
    m = cp.multiply(y, A @ x)
    if loss == "logistic":
        data = cp.sum(cp.logistic(-m))
    else:  # smooth hinge (smoothing 1): Huber-like; as the minimum over the hinge slack of its Moreau envelope
        u = cp.Variable(N)
        data = cp.sum(cp.pos(1 - m - u) + 0.5 * cp.square(u))
    prob = cp.Problem(cp.Minimize(data / N + 0.5 * lam * cp.sum_squares(x)))
    prob.solve(**CLARABEL)
    r = solvers.minimize(ERM(A, y, SquaredL2(lam), loss=loss), "adaspdc", m=4, tol=1e-11, max_iter=5000)
    assert r.converged, r.message
    assert r.fun == pytest.approx(prob.value, rel=1e-8)


def test_adaspdc_beats_spdc_in_passes_on_spread_row_norms():
    """The seed's claim in miniature: per-coordinate steps pay when the |a_i| differ (Fig. 3.4 generator)."""
    rng = np.random.default_rng(3)
    N, D, lam = 200, 50, 1e-3
    A = rng.normal(size=(N, D)) * (np.arange(1, D + 1) ** -1.0)
    A *= rng.uniform(0.1, 2.0, size=(N, 1))
    pb = ERM(A, A @ np.ones(D) + rng.normal(size=N), SquaredL2(lam))
    p = {mth: solvers.minimize(pb, mth, tol=1e-8, max_iter=3000).n_passes for mth in ("spdc", "adaspdc")}
    assert p["adaspdc"] < p["spdc"], p


def test_bad_input_names_the_argument():
    A, b = lasso_data()
    with pytest.raises(InputError, match="not strongly convex") as e:
        solvers.minimize(ERM(A, b, L1(0.1)), "adaspdc")
    assert e.value.field == "problem"
    with pytest.raises(InputError) as e:
        solvers.minimize(ERM(A, b, ElasticNet(0.1, 1.0), mean=False), "spdc")
    assert e.value.field == "problem"
    with pytest.raises(InputError) as e:
        solvers.minimize(ERM(A, b, SquaredL2(0.1)), "adaspdc", m=51)
    assert e.value.field == "m"
    with pytest.raises(InputError) as e:
        solvers.minimize(RPCA.generate(4, 5, 1), "spbcd", m=4)
    assert e.value.field == "m" and "q = 3" in str(e.value)
    with pytest.raises(InputError) as e:
        solvers.minimize(ERM(A, b, L1(0.1)), "spbcd", step_rule="nope")
    assert e.value.field == "step_rule"
    with pytest.raises(InputError) as e:
        solvers.minimize(ERM(A, b, L1(0.1)), "admm", rho=0.0)
    assert e.value.field == "rho"
    A0 = A.copy()
    A0[7] = 0.0  # a zero data row: an all-zero column of K (R_i = 0)
    with pytest.raises(InputError, match="R_i = 0") as e:
        solvers.minimize(ERM(A0, b, SquaredL2(0.1)), "adaspdc")
    assert e.value.field == "A" and e.value.location["row"] == 7
    with pytest.raises(InputError, match="all-zero column") as e:  # the same data through the saddle form
        solvers.minimize(ERM(A0, b, SquaredL2(0.1)), "spbcd")
    assert e.value.field == "K"
    with pytest.raises(InputError) as e:
        ERM(A, b[:-1], L1(0.1))
    assert e.value.field == "b"
