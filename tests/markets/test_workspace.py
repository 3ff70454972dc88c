"""The per-thread arena of the equilibrium kernels (:mod:`markets.workspace`): the same memory from
call to call, never shared between threads, and answers that do not depend on what an earlier call
left in it."""

import gc
import threading

import numba
import numpy as np
import pytest

from markets import equilibrium, kernels, workspace

from .conftest import random_beliefs


def test_arena_is_reused_grown_capped_and_released():
    workspace.release()
    a = workspace.arena(1000)
    b = workspace.arena(800)
    assert a.shape == (1000,) and b.shape == (800,)
    assert np.shares_memory(a, b)
    c = workspace.arena(5000)  # grows: new memory
    assert c.shape == (5000,) and not np.shares_memory(a, c)
    assert workspace.kept_bytes() == 5000 * 8
    assert workspace.arena(workspace.KEEP_MAX_BYTES // 8 + 1).shape == (0,)  # too big: nothing kept
    assert workspace.kept_bytes() == 5000 * 8
    workspace.release()
    assert workspace.kept_bytes() == 0


def test_all_threads_together_keep_at_most_the_process_bound(monkeypatch):
    """A thread's arena counts against the process-wide bound until the thread ends; past the bound
    a call gets an empty arena (the kernels allocate per chunk) and nothing more is kept."""
    workspace.release()
    base = workspace.process_kept_bytes()
    monkeypatch.setattr(workspace, "PROCESS_KEEP_MAX_BYTES", base + 100_000 * 8)
    done, go = threading.Event(), threading.Event()

    def hold():
        assert workspace.arena(80_000).shape == (80_000,)
        done.set()
        go.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    assert done.wait(10)
    assert workspace.process_kept_bytes() == base + 80_000 * 8
    assert workspace.arena(30_000).shape == (0,)  # 80,000 + 30,000 floats: past the bound
    assert workspace.kept_bytes() == 0
    assert workspace.arena(20_000).shape == (20_000,)  # within it
    go.set()
    t.join()
    gc.collect()
    assert workspace.process_kept_bytes() == base + 20_000 * 8  # the ended thread's arena is freed
    workspace.release()
    assert workspace.process_kept_bytes() == base


def test_threads_get_their_own_arena():
    seen = {}

    def grab(name):
        seen[name] = workspace.arena(4096)

    threads = [threading.Thread(target=grab, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not np.shares_memory(seen[0], seen[1])


@pytest.mark.parametrize("utils", [10.0, [2.0, 10.0, 30.0, "log"] * 3, "log"])
def test_answers_do_not_depend_on_what_the_arena_held(utils, rng):
    """One-order (solve_iso_block), mixed (solve_items) and all-logarithmic (start_prices, the
    closed form) markets: the same answer from a fresh arena, after another market of another shape
    filled it, and with the arena poisoned by NaN."""
    A = 12
    lp = random_beliefs(rng, 5, A, 300)
    W = rng.uniform(0.2, 1.0, A)
    workspace.release()
    first = equilibrium(lp, utils, W, tol=1e-12)
    equilibrium(random_beliefs(rng, 3, 20, 500), 2.0, tol=1e-12)  # another shape fills the arena
    workspace.arena(workspace.kept_bytes() // 8)[:] = np.nan
    again = equilibrium(lp, utils, W, tol=1e-12)
    assert first.all_converged and again.all_converged
    np.testing.assert_array_equal(again.log_prices, first.log_prices)
    np.testing.assert_array_equal(again.n_iter, first.n_iter)


def test_concurrent_calls_in_threads_agree_with_sequential(rng):
    utils = [2.0, 10.0, 30.0, "log"] * 3
    A = len(utils)
    markets = [(random_beliefs(rng, 4, A, 400), rng.uniform(0.2, 1.0, A)) for _ in range(4)]
    want = [equilibrium(lp, utils, W, tol=1e-12).log_prices for lp, W in markets]
    got = [None] * len(markets)

    def run(j):
        for _ in range(3):
            got[j] = equilibrium(markets[j][0], utils, markets[j][1], tol=1e-12).log_prices

    threads = [threading.Thread(target=run, args=(j,)) for j in range(len(markets))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("utils", [10.0, [2.0, 10.0, 30.0, "log"] * 3, "log"])
def test_one_chunk_per_thread_same_answers_at_any_thread_count(utils, rng):
    """The parallel drivers split the items into one chunk per Numba thread and each chunk's items
    reuse its buffers (``markets.kernels.equilibrium._n_chunks``): with one thread every item runs
    in the buffers the item before it left, and the answers are those of two threads (two chunks),
    bit for bit; the arena holds one chunk's buffers per thread."""
    A, n, K = 12, 7, 300
    lp = random_beliefs(rng, n, A, K)
    W = rng.uniform(0.2, 1.0, A)
    before = numba.get_num_threads()
    try:
        got = {}
        for t in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(t)
            workspace.release()
            got[t] = equilibrium(lp, utils, W, tol=1e-12)
            if utils != "log":
                assert workspace.kept_bytes() <= t * (4 * A * K) * 8 + 4 * A * K * 8  # <= t chunks (+ slack)
        first = got[1]
        assert first.all_converged
        for r in got.values():
            np.testing.assert_array_equal(r.log_prices, first.log_prices)
            np.testing.assert_array_equal(r.n_iter, first.n_iter)
    finally:
        numba.set_num_threads(before)
    assert kernels.items_arena_size(n, A, K, 1e-9, 1) == 4 * A * K  # one chunk: Pg, Q, B, floored beliefs
    assert kernels.items_arena_size(n, A, K, 1e-9, 3) == 3 * 4 * A * K
    assert kernels.items_arena_size(2, A, K, 1e-9, 8) == 2 * 4 * A * K  # never more chunks than items
