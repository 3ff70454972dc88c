"""Bad input to the graphical-model package: an InputError naming the argument, never a crash."""

import networkx as nx
import numpy as np
import pytest

from graphical.checks import as_adjacency, as_covariance, as_degree_weights
from graphical.degree_prior import ScaleFreePrior, scale_free_precision
from graphical.generators import precision_from_graph
from graphical.glasso import graphical_lasso
from graphical.reweighted import reweighted_l1
from solvers.errors import InputError
from tests.graphical.cases import BAD_COVARIANCES

GOOD = np.array([[1.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.0]])


@pytest.mark.parametrize("C,code", BAD_COVARIANCES)
@pytest.mark.parametrize("fit", [graphical_lasso, reweighted_l1, scale_free_precision])
def test_bad_covariance_is_named(C, code, fit):
    with pytest.raises(InputError) as e:
        fit(C, 0.1)
    assert e.value.field == "covariance" and e.value.code == code


def test_bad_covariance_reports_where():
    C = GOOD.copy()
    C[2, 0] = 0.5
    with pytest.raises(InputError) as e:
        as_covariance(C)
    assert {e.value.location["row"], e.value.location["column"]} == {0, 2}


def test_psd_but_singular_covariance_is_accepted():
    v = np.array([1.0, 2.0, 3.0])
    assert as_covariance(np.outer(v, v)).shape == (3, 3)


@pytest.mark.parametrize(
    "h",
    [
        [0.0, 1.0, 0.5, 0.7],  # decreasing step: not non-decreasing
        [0.0, 1.0, 3.0, 4.0],  # increments grow: not concave
        np.arange(6.0) ** 2,  # convex
        [0.0, np.nan, 1.0],
        [0.0],
    ],
)
def test_untractable_prior_is_rejected(h):
    with pytest.raises(InputError) as e:
        ScaleFreePrior(0.5, np.asarray(h, dtype=float), 3)
    assert e.value.field == "prior"
    with pytest.raises(InputError):
        scale_free_precision(GOOD, 0.5, prior=np.asarray(h, dtype=float))


def test_tractable_prior_needs_enough_values():
    with pytest.raises(InputError) as e:
        ScaleFreePrior(0.5, [0.0, 1.0], 4)
    assert e.value.field == "prior"
    np.testing.assert_allclose(as_degree_weights([0.0, 1.0, 1.5, 1.75]), [1.0, 0.5, 0.25])


def test_graph_with_self_loop_is_rejected():
    G = nx.path_graph(4)
    G.add_edge(2, 2)
    with pytest.raises(InputError) as e:
        as_adjacency(G)
    assert e.value.field == "graph" and e.value.code == "self_loop" and e.value.location["node"] == 2
    A = np.eye(3)
    with pytest.raises(InputError) as e:
        precision_from_graph(A)
    assert e.value.field == "graph" and e.value.code == "self_loop"


@pytest.mark.parametrize(
    "A,code",
    [
        (np.triu(np.ones((3, 3)), 1), "not_symmetric"),
        (np.ones((2, 3)), "bad_shape"),
        ([[0, np.nan], [np.nan, 0]], "nan"),
    ],
)
def test_bad_adjacency(A, code):
    with pytest.raises(InputError) as e:
        as_adjacency(A)
    assert e.value.field == "graph" and e.value.code == code


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"lam": -0.1}, "lam"),
        ({"lam": np.nan}, "lam"),
        ({"lam": 0.1, "rho": 0.0}, "rho"),
        ({"lam": 0.1, "tol": 0}, "tol"),
    ],
)
def test_bad_scalars(kwargs, field):
    lam = kwargs.pop("lam")
    with pytest.raises(InputError) as e:
        graphical_lasso(GOOD, lam, **kwargs)
    assert e.value.field == field


def test_bad_prior_options():
    with pytest.raises(InputError) as e:
        scale_free_precision(GOOD, 0.5, prior="cubic")
    assert e.value.field == "kind"
    with pytest.raises(InputError) as e:
        scale_free_precision(GOOD, -1.0)
    assert e.value.field == "alpha"
    with pytest.raises(InputError) as e:
        reweighted_l1(GOOD, 0.1, kind="group")
    assert e.value.field == "kind"
