"""The per-thread reuse of the Rényi kernels' scratch arrays (:func:`aggregators.renyi_kernels._reused`):
a reused workspace must change no result, whatever the previous call in the thread left in it."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from scipy.special import logsumexp

from aggregators import renyi_kernels as rk
from aggregators.renyi_fixed_point import solve_fixed_point
from aggregators.renyi_gradient import renyi_loglik_grad


def _data(n, a, k, seed):
    rng = np.random.default_rng(seed)
    lp = rng.normal(size=(n, a, k)) * 2.0
    lp -= logsumexp(lp, axis=2, keepdims=True)
    return lp, rng.dirichlet(np.ones(a)), rng.integers(0, k, n)


def _run(lp, w, gam, labels, hessian):
    fp = solve_fixed_point(lp, w, gam, tol=1e-10, hessian=hessian)
    _, grad, *_ = renyi_loglik_grad(lp, labels, w, gam, want=("w", "gamma"), solved=fp.log_q, hessian=hessian)
    return fp.log_q, fp.sweeps, grad["w"], grad["gamma"]


# shapes outside the 16-item block kernel, each Hessian solve, the fast and the stable form, and a
# weight of zero (the solve reads the active agents in place; the adjoint builds H from them)
CASES = [
    (7, 40, 64, 0.5, "cg"),
    (5, 12, 96, 0.3, "woodbury"),
    (6, 20, 24, 0.7, "dense"),
    (4, 30, 48, 5e-4, "cg"),
]


@pytest.mark.parametrize("n, a, k, g, hessian", CASES)
def test_a_reused_workspace_gives_what_a_fresh_one_gives(monkeypatch, n, a, k, g, hessian):
    lp, w, labels = _data(n, a, k, 1)
    w[3] = 0.0
    w /= w.sum()
    gam = np.full(a, g)
    monkeypatch.setattr(rk, "REUSE_MAX_BYTES", 0)
    fresh = _run(lp, w, gam, labels, hessian)
    monkeypatch.setattr(rk, "REUSE_MAX_BYTES", 64 * 2**20)
    # fill the thread's workspaces with another problem of the same shape first (other data, other
    # weights, sharper agents), then solve this one twice
    other, w2, l2 = _data(n, a, k, 2)
    _run(other * 3.0 - logsumexp(other * 3.0, axis=2, keepdims=True), w2, gam, l2, hessian)
    for _ in range(2):
        again = _run(lp, w, gam, labels, hessian)
        for x, y in zip(fresh, again, strict=True):
            np.testing.assert_array_equal(x, y)


def test_threads_keep_their_own_workspace():
    lp, w, labels = _data(6, 40, 64, 3)
    jobs = [(lp, w, np.full(40, g), labels) for g in (0.2, 0.5, 0.8)]
    want = [_run(*job, "cg") for job in jobs]
    got: dict[int, list] = {}

    def work(i):
        got[i] = [_run(*jobs[i % 3], "cg") for _ in range(5)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, runs in got.items():
        for run in runs:
            for x, y in zip(want[i % 3], run, strict=True):
                np.testing.assert_array_equal(x, y)


def test_the_workspace_is_kept_only_up_to_its_limit(monkeypatch):
    made = []

    def make():
        made.append(1)
        return (np.empty(4),)

    monkeypatch.setattr(rk, "_scratch", threading.local())
    assert rk._reused("solve", (1,), make, 32) is rk._reused("solve", (1,), make, 32)
    assert len(made) == 1
    rk._reused("solve", (2,), make, 32)  # another shape replaces it
    rk._reused("solve", (1,), make, 32)
    assert len(made) == 3
    rk._reused("solve", (3,), make, rk.REUSE_MAX_BYTES + 1)  # too big: made every time, not kept
    rk._reused("solve", (3,), make, rk.REUSE_MAX_BYTES + 1)
    assert len(made) == 5
