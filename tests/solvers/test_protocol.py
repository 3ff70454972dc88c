"""The solver protocol: declared capabilities, the registry's checks, the auto priority, the callback rule."""

import numpy as np
import pytest

import solvers
from solvers.errors import InputError
from solvers.problem import CAPABILITIES, capability, offers
from solvers.problems.linear_models import LinearModel
from solvers.problems.loglinear import ConditionalLogLinear
from solvers.problems.mixture import MixtureLikelihood
from solvers.problems.softmax_regression import MultinomialLogistic
from solvers.registry import _REGISTRY, AUTO_PRIORITY, register


def test_every_need_is_a_declared_capability_and_undeclared_names_are_refused():
    for s in _REGISTRY.values():
        assert set(s.needs) <= set(CAPABILITIES), s.name
    with pytest.raises(InputError, match="not a declared problem capability") as e:
        register("nope", needs=("hessain",), tol=1e-8, max_iter=10)
    assert e.value.field == "needs" and "nope" not in _REGISTRY
    with pytest.raises(InputError, match="not a declared"):
        offers(object(), "linear_term")
    with pytest.raises(InputError, match="not a declared"):
        capability(object(), "Q")
    assert capability(object(), "l1", 0.0) == 0.0


def test_every_solver_declares_the_stop_options_once_with_its_own_defaults_and_checks_them():
    import inspect

    from solvers.monitor import Stop

    mix = MixtureLikelihood(np.ones((3, 2)))
    for s in _REGISTRY.values():
        params = inspect.signature(s.fn).parameters
        assert list(params)[:2] == ["problem", "x0"], s.name
        assert set(Stop.__annotations__) <= set(params), s.name
        assert not any(p.kind is p.VAR_KEYWORD for p in params.values()), s.name
        assert params["tol"].default >= 0 and params["max_iter"].default >= 1, s.name
        with pytest.raises(TypeError, match="unexpected keyword argument 'no_such_option'"):
            s.fn(mix, no_such_option=1)
        with pytest.raises(InputError) as e:
            s.fn(mix, tol=-1.0)
        assert e.value.field == "tol", s.name
        with pytest.raises(InputError) as e:
            s.fn(mix, max_iter=2.5)
        assert e.value.field == "max_iter", s.name
    assert inspect.signature(_REGISTRY["newton"].fn).parameters["tol"].default == 1e-10
    assert inspect.signature(_REGISTRY["admm"].fn).parameters["max_iter"].default == 10000


def test_unknown_solver_is_an_input_error_on_method():
    with pytest.raises(InputError, match="unknown solver") as e:
        solvers.minimize(MixtureLikelihood(np.ones((3, 2))), "no_such_solver")
    assert e.value.field == "method"


def test_auto_rules_follow_the_declared_priority():
    assert list(AUTO_PRIORITY) == sorted(AUTO_PRIORITY, key=AUTO_PRIORITY.get)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    yb = np.where(X[:, 0] > 0, 1.0, -1.0)
    assert solvers.choose(MultinomialLogistic(X, rng.integers(0, 3, 60), l2=0.1)) == "lbfgs"  # rule 10, not newton (40)
    assert solvers.choose(MultinomialLogistic(X, rng.integers(0, 3, 60), l2=0.1, l1=0.01)) == "saga"
    assert solvers.choose(LinearModel(X, yb, "hinge", l2=0.1)) == "sdca"  # rule 20
    assert solvers.choose(LinearModel(X, yb, "logistic", l2=0.1)) == "lbfgs"
    lp = np.log(rng.dirichlet(np.ones(3), size=(50, 5)))
    assert solvers.choose(ConditionalLogLinear.from_log_probs(lp, rng.integers(0, 3, 50))) == "newton"  # rule 40


@pytest.mark.parametrize("method", ["newton", "lbfgs", "em", "projected_gradient", "bm", "sbm", "gd", "saga", "sgd"])
def test_a_truthy_callback_return_stops_every_solver_and_none_does_not(method):
    rng = np.random.default_rng(1)
    lp = np.log(rng.dirichlet(np.ones(3), size=(80, 4)))
    y = rng.integers(0, 3, 80)
    pb = (MixtureLikelihood if method == "em" else ConditionalLogLinear).from_log_probs(lp, y)
    opts = {"step": 0.1} if method in ("saga", "sgd") else {}
    seen = []
    r = solvers.minimize(
        pb,
        method,
        tol=0.0 if method in ("gd", "saga", "sgd") else 1e-300,
        max_iter=5,
        callback=lambda x: (seen.append(1), np.True_)[1],
        **opts,
    )
    assert r.message == "stopped by callback" and len(seen) == 1 and not r.converged
    seen.clear()
    r = solvers.minimize(
        pb,
        method,
        tol=0.0 if method in ("gd", "saga", "sgd") else 1e-300,
        max_iter=3,
        callback=lambda x: seen.append(1),
        **opts,
    )
    assert r.message != "stopped by callback" and len(seen) >= 1


def test_drivers_read_only_declared_members_of_a_problem():
    """Every ``problem.<member>`` a driver or compiled path reads is required or declared in CAPABILITIES."""
    import pathlib
    import re

    import solvers as pkg

    root = pathlib.Path(pkg.__file__).parent
    required = {"dim", "n_terms", "value", "grad", "value_and_grad"}
    files = [*(root / "methods").glob("*.py"), *(root / "kernels_incremental").glob("*.py"), root / "monitor.py"]
    read = {(m, f.name) for f in files for m in re.findall(r"\bproblem\.([A-Za-z_]\w*)", f.read_text())}
    assert {(m, f) for m, f in read if m not in CAPABILITIES and m not in required} == set()
