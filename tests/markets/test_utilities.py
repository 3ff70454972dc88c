"""Optimal investments (Eq. 2.30-2.31, Table 2.4) against a direct numerical maximisation."""

import numpy as np
import pytest
from scipy.optimize import minimize

from markets.utilities import GENERIC, Exponential, Isoelastic, Logarithmic, Utility, make_utility

from .conftest import random_beliefs


def _argmax_investment(util, p, c, w):
    """Solve Eq. (2.30) directly: maximise sum_k P_k U(r_k / c_k) s.t. sum_k r_k = W (SLSQP)."""
    K = p.size
    r0 = w * c

    def f(r):
        return -float(np.sum(p * util.value(r / c)))

    bounds = None if isinstance(util, Exponential) else [(1e-12, None)] * K
    cons = ({"type": "eq", "fun": lambda r: r.sum() - w},)
    out = minimize(f, r0, method="SLSQP", bounds=bounds, constraints=cons, options={"ftol": 1e-15, "maxiter": 500})
    return out.x


@pytest.mark.parametrize("util", [Exponential(), Logarithmic(), Isoelastic(2.0), Isoelastic(0.5), Isoelastic(7.0)])
def test_closed_form_investment_maximises_expected_utility(util, rng):
    for _ in range(3):
        p = rng.dirichlet(np.ones(5))
        c = rng.dirichlet(np.ones(5))
        w = 0.3
        r = util.investment(np.log(p), np.log(c), w)
        assert abs(r.sum() - w) < 1e-14
        ref = _argmax_investment(util, p, c, w)
        np.testing.assert_allclose(r, ref, atol=2e-6)
        # and it is at least as good as the numerical optimum
        assert (
            util.expected_utility(r, np.log(p), np.log(c)) >= util.expected_utility(ref, np.log(p), np.log(c)) - 1e-12
        )


class _GenericIso(Utility):
    """An isoelastic utility given only through U, U' and (U')^{-1}: exercises Eq. (2.31)."""

    def __init__(self, eta):
        self.eta = eta

    def value(self, w):
        return (w ** (1 - self.eta) - 1) / (1 - self.eta)

    def marginal(self, w):
        return w ** (-self.eta)

    def inverse_marginal(self, y):
        return y ** (-1.0 / self.eta)


class _GenericExp(Exponential):
    """The exponential utility known only through U, U' and (U')^{-1}: its closed-form investment
    is replaced by the generic Eq. (2.31)."""

    kind = GENERIC
    eta = float("nan")
    investment = Utility.investment


@pytest.mark.parametrize(
    "generic,closed",
    [(_GenericIso(3.0), Isoelastic(3.0)), (_GenericExp(), Exponential()), (_GenericIso(1.7), Isoelastic(1.7))],
)
def test_general_eq_2_31_matches_closed_forms(generic, closed, rng):
    lp = random_beliefs(rng, 20, 1, 6)[:, 0, :]
    lc = random_beliefs(rng, 20, 1, 6)[:, 0, :]
    w = rng.uniform(0.1, 2.0, 20)
    r_gen = Utility.investment(generic, lp, lc, w)
    r_cf = closed.investment(lp, lc, w)
    np.testing.assert_allclose(r_gen, r_cf, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(r_gen.sum(axis=1), w, rtol=1e-12)


def test_table_2_4_exponential_formula_is_a_typo(rng):
    """The table's exponential investment spends W but violates the first-order condition (2.31)
    and does not clear the market at the table's own equilibrium; the derived one does both."""
    A, K = 4, 5
    lp = random_beliefs(rng, 1, A, K)[0]
    W = np.full(A, 1.0 / A)
    lc = lp.mean(axis=0)
    lc -= np.log(np.exp(lc).sum())  # the log-pool equilibrium of Table 2.4
    c = np.exp(lc)
    a = lp - lc
    table = W[:, None] / K + c * a - (c * a).sum(axis=1, keepdims=True) / K
    ours = Exponential().investment(lp, lc[None, :], W)
    np.testing.assert_allclose(ours.sum(axis=0), c, atol=1e-14)  # clears
    np.testing.assert_allclose(table.sum(axis=1), W, atol=1e-14)  # table spends W ...
    assert np.max(np.abs(table.sum(axis=0) - c)) > 1e-3  # ... but does not clear
    # first-order condition of (2.30): P_k U'(r_k/c_k) / c_k equal across k
    foc = lambda r: np.exp(lp) * np.exp(-r / c) / c
    f_ours, f_tab = foc(ours), foc(table)
    assert np.max(np.ptp(np.log(f_ours), axis=1)) < 1e-12
    assert np.max(np.ptp(np.log(f_tab), axis=1)) > 1e-3


def test_make_utility_specs():
    assert isinstance(make_utility("log"), Logarithmic)
    assert isinstance(make_utility("exponential"), Exponential)
    assert make_utility(4).eta == 4.0
    assert isinstance(make_utility(1.0), Logarithmic)
    for bad in (0, -1.0, float("nan"), float("inf"), "iso", "banana", True, None):
        with pytest.raises(ValueError, match="eta|utility"):
            make_utility(bad)


def test_make_agents_builds_one_utility_per_distinct_spec():
    """A list of specs gives one object per distinct number or name (no per-agent construction),
    with the right kinds and orders; a bad spec anywhere in the list still names the field."""
    from markets import make_agents
    from markets.utilities import EXPONENTIAL, ISOELASTIC
    from solvers.errors import InputError

    specs = [2.0, 2, "log", np.float64(2.0), "exp", 10.0, "log", 1.0]
    agents = make_agents(specs, np.ones(len(specs)))
    u = agents.utilities
    assert u[0] is u[1] is u[3] and u[2] is u[6] and u[0] is not u[5]
    assert isinstance(u[7], Logarithmic) and isinstance(u[5], Isoelastic) and isinstance(u[4], Exponential)
    np.testing.assert_array_equal(agents.kind, [ISOELASTIC] * 4 + [EXPONENTIAL] + [ISOELASTIC] * 3)
    np.testing.assert_array_equal(agents.inv_eta, [0.5, 0.5, 1.0, 0.5, 0.0, 0.1, 1.0, 1.0])
    one = make_agents(10.0, np.ones(1000))
    assert len({id(x) for x in one.utilities}) == 1 and np.all(one.inv_eta == 0.1)
    for bad in ([2.0, -1.0], [2.0, "iso3"], [2.0, True], [2.0, float("nan")]):
        with pytest.raises(InputError):
            make_agents(bad, np.ones(2))


def test_plain_specs_match_one_make_utility_per_agent():
    """The vectorised path for lists of names and numbers (:func:`markets.agents._plain_specs`) gives each
    agent the utility :func:`make_utility` gives its spec (class and eta), one shared object per distinct
    value, on 1,000 specs of every plain type; a list with a :class:`Utility` in it takes the loop and
    agrees; a bad spec among them is still named by its agent."""
    from markets import make_agents
    from markets.agents import _plain_specs
    from solvers.errors import InputError

    rng = np.random.default_rng(3)
    pool = [2, 2.0, np.float64(2.0), np.float32(0.1), 0.1, np.int64(7), 1, 1.0, "log", "LOG", "Exp", "logarithmic"]
    specs = [pool[i] for i in rng.integers(0, len(pool), 1000)] + list(np.exp(rng.uniform(0, 3, 500)))
    assert _plain_specs(specs) is not None
    for with_instance in (False, True):
        s = specs + [Isoelastic(3.0)] if with_instance else specs
        agents = make_agents(s)
        if with_instance:  # a Utility in the list: the loop
            assert _plain_specs(s) is None
        for spec, u in zip(s, agents.utilities):
            ref = make_utility(spec)
            assert type(u) is type(ref) and (u.eta == ref.eta or np.isinf(ref.eta))
        key = [
            (True, x) if type(x) is str else (False, float(x)) if not isinstance(x, Utility) else (None, id(x))
            for x in s
        ]
        for i in rng.integers(0, len(s), (300, 2)):
            same = key[i[0]] == key[i[1]] and not isinstance(s[i[0]], Utility)
            assert (agents.utilities[i[0]] is agents.utilities[i[1]]) == same
    for bad, at in (([2.0] * 5 + [np.bool_(True)], 5), ([2.0, 3.0, 0.0], 2), (["log", "exp", "nope"], 2)):
        with pytest.raises(InputError) as ei:
            make_agents(bad)
        assert ei.value.agent == at
