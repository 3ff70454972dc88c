"""Short versions of the Bayesian logistic regression and DRBM reproductions
(reproductions/samplers_blr.py, samplers_drbm.py; the full ones run under ``make reproduce``), and
the posterior-mean curve they plot."""

import numpy as np
import pytest

from samplers import LogisticRegression
from samplers.posterior_mean import posterior_mean_curve
from solvers.errors import InputError
from tests.reproduction_scripts import load_reproduction

blr = load_reproduction("samplers_blr")
drbm = load_reproduction("samplers_drbm")


def test_posterior_mean_curve_is_the_mean_of_the_later_draws():
    s = np.random.default_rng(0).standard_normal((100, 3))
    passes, values = posterior_mean_curve(s, 0.5, lambda m: float(m[0]), points=7, discard=0.25)
    ks = np.unique(np.geomspace(1, 100, 7).round().astype(int))
    np.testing.assert_allclose(passes, 0.5 * ks)
    np.testing.assert_allclose(values, [s[min(int(0.25 * k), k - 1) : k, 0].mean() for k in ks], rtol=1e-12)
    for kwargs, field in [(dict(samples=np.ones(3)), "samples"), (dict(samples=s, discard=1.0), "discard")]:
        with pytest.raises(InputError) as e:
            posterior_mean_curve(kwargs.pop("samples"), 1.0, float, **kwargs)
        assert e.value.field == field


def test_blr_short_ccadl_agrees_with_nuts():
    """SHORT (N = 3,000, D = 20): CCAdL (full covariance, h = 0.02, A = 10) against BlackJAX's NUTS:
    the posterior mean's test log-likelihood within 0.005 after 30 passes, and the 2-D marginal of
    dims 2 and 5 after 100 passes: means within 0.5 NUTS sd, ellipse area within a factor 1.6."""
    pytest.importorskip("blackjax")
    X, y, Xt, yt = blr.generated(3_000, 1_000, 20)
    setup = blr.Setup("generated", LogisticRegression(X, y), Xt, yt, 500, (0.02,), 30, 100)
    ref, info = blr.nuts_reference(setup.model, 400, 2_000)
    assert 3 < info["leapfrog"] < 64
    nuts_ll = setup.model.predictive_loglik(ref.mean(axis=0), Xt, yt)
    r = blr.run(setup, "ccadl", 0.02, 10.0, setup.passes)
    assert r.ok
    _, ll = blr.curve(setup, r)
    assert abs(ll[-1] - nuts_ll) < 0.005, (ll[-1], nuts_ll)
    assert ll[0] < nuts_ll - 0.01  # the curve starts away from it: the test can fail
    r = blr.run(setup, "ccadl", 0.02, 10.0, setup.long_passes)
    dist, area = blr.compare(*blr.marginal(r.samples[len(r.samples) // 5 :]), *blr.marginal(ref))
    assert dist < 0.5 and 1 / 1.6 < area < 1.6, (dist, area)


def test_drbm_short_digits_and_the_generated_set_has_table_42s_acoustic_size():
    """SHORT: CCAdL (diagonal covariance) on the DRBM of scikit-learn's digits (D = 1,510), h = 0.05,
    A = 1, 10 passes: the posterior mean's test error under 0.2 (chance is 0.9)."""
    Xa, ya, Xb, yb = drbm.data("digits")
    model = drbm.DRBM(Xa, ya, n_hidden=20)
    assert (model.n_data, model.dim) == (1347, 1510)
    r = drbm.run(model, "ccadl", 0.05, 1.0, 10)
    assert r.ok and abs(r.stats["xi"].mean() - 1.0) < 1.0
    _, err = posterior_mean_curve(r.samples, drbm.BATCH / model.n_data, lambda t: model.error(t, Xb, yb), discard=0.2)
    assert err[-1] < 0.2 and err[0] > 0.5, err
    Xg, yg, _, _ = drbm.data("generated")
    assert drbm.DRBM(Xg, yg, n_hidden=20).dim == 1083


def test_blr_marginals_short():
    """SHORT of reproductions/samplers_blr_marginals.py (the 10^6-draw 2-D marginals): N = 3,000,
    D = 20, 20,000 steps at h = 0.005, A = 10, against 2,000 NUTS draws: every chain's means within
    4.5 Monte Carlo standard errors (plus 0.05 sd of bias) of NUTS's; the thermostats' 95 % ellipses
    (SGNHT, CCAdL) within 20 % of NUTS's area (measured 0.93-0.99; SGLD and SGHMC run 1.23-1.28)."""
    pytest.importorskip("blackjax")
    marg = load_reproduction("samplers_blr_marginals")
    X, y, Xt, yt = blr.generated(3_000, 1_000, 20)
    setup = blr.Setup("generated", LogisticRegression(X, y), Xt, yt, 500, (0.005,), 0, 0)
    res = marg.run_marginals(setup, 20_000, 2_000)
    for method, row in res["rows"].items():
        assert "failed" not in row and row["kept"] == 1_600, (method, row)
        assert row["dist"] <= 4.5 * row["se"] + 0.05, (method, row)
    for method in ("sgnht", "ccadl"):
        assert 1 / 1.2 < res["rows"][method]["area"] < 1.2, res["rows"][method]


@pytest.mark.slow
def test_blr_marginals_full():
    """The full reproduction (reproductions/samplers_blr_marginals.md: 10^6 steps, 20,000 NUTS draws,
    about 47 min at load 15-22): on the generated set the thermostats (SGNHT, CCAdL) match NUTS's means
    within 4.5 MC standard errors and its ellipse area within 10 % (measured 0.014 sd, 0.94-0.95),
    while SGLD and SGHMC without a noise estimate run over 1.5x too wide (measured 1.84-1.89); on
    digits, where dim 2 mixes slowly (ESS 230-270 of 80,000), every mean within 4.5 s.e. + 0.05 sd and
    every area within 25 % (measured 0.85-1.02)."""
    pytest.importorskip("blackjax")
    marg = load_reproduction("samplers_blr_marginals")
    gen, dig = (marg.run_marginals(s, 1_000_000, 20_000)["rows"] for s in blr.setups(False))
    for m in ("sgnht", "ccadl"):
        assert gen[m]["dist"] <= 4.5 * gen[m]["se"] and 0.9 < gen[m]["area"] < 1.1, (m, gen[m])
    for m in ("sgld", "sghmc"):
        assert gen[m]["area"] > 1.5, (m, gen[m])
    for m, row in dig.items():
        assert row["dist"] <= 4.5 * row["se"] + 0.05 and 0.75 < row["area"] < 1.25, (m, row)
