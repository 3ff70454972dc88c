"""The validated model margin of the warm-started working-set Newton (:mod:`solvers.methods.newton`).

After a full step whose decrease its model predicted (ratio in ``VALIDATED_RATIO``), the model
decrease counts twice, not ten times, against the tolerance. On a quadratic whose model Hessian is
``s`` times the true one, a full step decreases ``f`` by ``(2 - 1/s)`` times the predicted amount, so
a validated model has ``0.8 <= s <= 1.49`` and twice its decrease still bounds ``f - f*`` (``s <= 2``). These
tests check that algebra, that a validated model saves a step and still meets the tolerance, and that
a model off by a factor three is never validated (the margin of ten applies)."""

import numpy as np
import pytest

import solvers
from solvers.methods import newton as nw


class ScaledModelQuadratic:
    """``f(x) = ½ (x - c)ᵀ A (x - c) + 1`` on the simplex, interior optimum ``c``; ``hessian`` returns
    ``s A`` (a model off by the factor ``s``)."""

    constraint = "simplex"

    def __init__(self, A, c, s, idx=None):
        self.A, self.c, self.s = A, c, s
        self.idx = np.arange(c.size) if idx is None else idx
        self.dim = self.idx.size
        self.n_terms = 4000

    def _full(self, x):
        z = np.zeros(self.c.size)
        z[self.idx] = x
        return z

    def value_and_grad(self, x):
        r = self._full(x) - self.c
        Ar = self.A @ r
        return 0.5 * float(r @ Ar) + 1.0, Ar[self.idx]

    def value(self, x):
        return self.value_and_grad(x)[0]

    def hessian(self, x, items=None, dtype=None):
        return self.s * self.A[np.ix_(self.idx, self.idx)]

    def restrict(self, idx):
        return ScaledModelQuadratic(self.A, self.c, self.s, self.idx[np.asarray(idx)])

    def project(self, x):
        return solvers.simplex.project_simplex(x)


def _problem(s, d=30, seed=0):
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(d, d))
    A = B @ B.T / d + 0.5 * np.eye(d)
    c = rng.dirichlet(np.full(d, 5.0))
    x0 = 0.7 * c + 0.3 * rng.dirichlet(np.full(d, 5.0))  # a warm start inside the simplex
    return ScaledModelQuadratic(A, c, s), x0


def _solve(pb, x0, tol, monkeypatch=None, never_validate=False):
    if never_validate:
        monkeypatch.setattr(nw, "VALIDATED_RATIO", (np.inf, np.inf))
    return solvers.minimize(pb, "newton", x0=x0, tol=tol, warm_x0=True, working_set=True, ws_min=1)


@pytest.mark.parametrize("s", [0.7, 0.8, 1.0, 1.2, 1.45, 1.55, 1.9, 3.0])
def test_full_step_decrease_is_2_minus_1_over_s_times_the_prediction(s):
    """The identity behind the rule, on the quadratic: predicted ``G/(2s)``, obtained
    ``G (2s - 1)/(2 s²)`` with ``G = gᵀA⁻¹g`` (unconstrained step, well inside the simplex)."""
    pb, x0 = _problem(s)
    f, g = pb.value_and_grad(x0)
    d, slope, dec = nw._model_step(pb.hessian(x0), g, x0, True)
    assert np.all(x0 + d > 0)  # the QP step is the unconstrained one
    actual = f - pb.value(x0 + d)
    assert actual / dec == pytest.approx(2.0 - 1.0 / s, rel=1e-9)
    lo, hi = nw.VALIDATED_RATIO
    assert (lo <= actual / dec <= hi) == (0.8 <= s <= 1.49)  # 2 - 1/s in [0.75, 1.33]
    # a validated model's decrease, doubled, bounds f - f* = G/2 (f* = 1)
    if lo <= actual / dec <= hi:
        assert nw.GROW_VALIDATED_MARGIN * dec >= f - 1.0


@pytest.mark.parametrize("s", [0.85, 1.2, 1.4])
def test_a_validated_model_stops_no_later_and_meets_the_tolerance(s, monkeypatch):
    """Over a sweep of tolerances the run with validation is never longer than the one without, is
    shorter at some, and always ends within the tolerance of ``f* = 1``."""
    pb, x0 = _problem(s, seed=1)
    shorter = 0
    for tol in np.logspace(-12, -5, 15):
        r = _solve(pb, x0, tol)
        assert r.converged and r.extra.get("warm_start")
        assert r.fun - 1.0 <= tol * r.fun, (tol, r.fun - 1.0)
        with monkeypatch.context() as m:
            slow = _solve(pb, x0, tol, m, never_validate=True)
        assert slow.converged and slow.fun - 1.0 <= tol * slow.fun
        assert r.n_iter <= slow.n_iter, (tol, r.n_iter, slow.n_iter)
        shorter += r.n_iter < slow.n_iter
    assert shorter >= 2, shorter


def test_a_model_three_times_too_curved_is_never_validated(monkeypatch):
    """Its steps decrease f by 5/3 of the prediction: outside the range, so the run is the one with
    validation switched off, step for step, and it still meets the tolerance."""
    tol = 1e-9
    pb, x0 = _problem(3.0, seed=2)
    r = _solve(pb, x0, tol)
    slow = _solve(pb, x0, tol, monkeypatch, never_validate=True)
    assert r.n_iter == slow.n_iter and r.fun == slow.fun
    assert r.converged and r.fun - 1.0 <= tol * r.fun


class CountingQuadratic(ScaledModelQuadratic):
    """The quadratic with its Hessians counted."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.n_hessians = 0

    def hessian(self, x, items=None, dtype=None):
        self.n_hessians += 1
        return super().hessian(x, items, dtype)


def _plain(s, tol, seed, monkeypatch=None):
    """Plain (no working set) Newton from the warm start; with ``monkeypatch``: validation off."""
    pb, x0 = _problem(s, seed=seed)
    pb = CountingQuadratic(pb.A, pb.c, s)
    if monkeypatch is not None:
        monkeypatch.setattr(nw, "VALIDATED_RATIO", (np.inf, np.inf))
    r = solvers.minimize(pb, "newton", x0=x0, tol=tol, working_set=False)
    return r, pb.n_hessians


@pytest.mark.parametrize("s", [0.85, 1.2, 1.4])
def test_plain_newton_certifies_with_a_validated_model_and_forms_fewer_hessians(s, monkeypatch):
    """Plain Newton (every item's Hessian, no working set): after a full step that its model predicted,
    the same model certifies the next point with twice its decrease instead of a new Hessian. Over a
    sweep of tolerances it never forms more Hessians or takes more steps than with validation off,
    forms fewer at most tolerances, and never stops further from ``f* = 1`` than the run that forms
    every Hessian; a model below the curvature (``s < 1``: its decrease over-estimates ``f - f*``)
    always meets the tolerance."""
    fewer = 0
    for tol in np.logspace(-12, -4, 17):
        r, nh = _plain(s, tol, seed=3)
        with monkeypatch.context() as m:
            slow, nh_slow = _plain(s, tol, seed=3, monkeypatch=m)
        assert r.converged and slow.converged
        assert nh <= nh_slow and r.n_iter <= slow.n_iter, (tol, nh, nh_slow)
        assert r.fun - 1.0 <= max(tol * r.fun, slow.fun - 1.0), (tol, r.fun - 1.0, slow.fun - 1.0)
        if s < 1:
            assert r.fun - 1.0 <= tol * r.fun
        fewer += nh < nh_slow
    assert fewer >= 12, fewer


def test_plain_newton_with_a_model_three_times_too_curved_forms_every_hessian(monkeypatch):
    """Never validated (its steps decrease f by 5/3 of the prediction): the same Hessians, iterates and
    end point as with validation off. (That end point is up to 3x the tolerance from ``f*``: the
    plain path takes a fresh model's decrease as the gap, as it did before; the warm-started growth
    counts an unvalidated model's decrease ten times for this reason.)"""
    for tol in (1e-10, 1e-7):
        r, nh = _plain(3.0, tol, seed=4)
        with monkeypatch.context() as m:
            slow, nh_slow = _plain(3.0, tol, seed=4, monkeypatch=m)
        assert nh == nh_slow and r.n_iter == slow.n_iter and r.fun == slow.fun
        assert r.converged and r.fun - 1.0 <= 3.0 * tol * r.fun


def _plain_from(pb, x0, tol, **opts):
    return solvers.minimize(pb, "newton", x0=x0, tol=tol, working_set=False, **opts)


def test_a_borrowed_model_takes_the_first_step_and_claims_nothing_unvalidated():
    """``model0`` (a neighbouring problem's model) replaces the first Hessian. A good one (the problem's
    own) leads to a solve that forms fewer Hessians and meets the tolerance; a model so curved that
    its decrease is ~0 at a point far from the optimum does not make the solve stop there (it would
    claim convergence as a fresh model: ``model decrease far below tolerance``); one giving no
    descent direction is dropped for a formed Hessian. Every run ends within the tolerance of f* = 1."""
    tol = 1e-9
    base, x0 = _problem(1.2, seed=5)
    own = base.hessian(x0)
    runs = {}
    for name, model in [("none", None), ("own", own), ("huge", 1e9 * own), ("ascent", -own)]:
        pb = CountingQuadratic(base.A, base.c, 1.2)
        r = _plain_from(pb, x0, tol, **({} if model is None else {"model0": model}))
        assert r.converged and r.fun - 1.0 <= tol * r.fun, (name, r.fun - 1.0)
        runs[name] = (pb.n_hessians, r.n_iter)
    assert runs["own"][0] < runs["none"][0], runs
    assert runs["ascent"] == runs["none"], runs  # dropped at once: the same run as without it
    assert runs["huge"][1] > runs["none"][1] - 1  # its tiny steps are taken, not stopped at


def test_return_model_only_when_asked():
    pb, x0 = _problem(1.0, seed=6)
    r = _plain_from(pb, x0, 1e-10)
    assert "model" not in r.extra
    r = _plain_from(pb, x0, 1e-10, return_model=True)
    M = r.extra["model"]
    assert M.shape == (pb.dim, pb.dim) and np.all(np.isfinite(M)) and np.allclose(M, M.T)


def test_a_borrowed_model_of_the_wrong_shape_or_not_finite_is_an_input_error():
    pb, x0 = _problem(1.0, seed=7)
    for bad in (np.eye(pb.dim + 1), np.full((pb.dim, pb.dim), np.nan)):
        with pytest.raises(solvers.errors.InputError, match="model0"):
            _plain_from(pb, x0, 1e-8, model0=bad)
