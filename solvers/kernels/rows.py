"""Row access without a view, for kernels that loop over the rows of a matrix inside a loop over items.

Slicing a row out of a 2-D array in compiled code (``E[i]``, ``Qi[k]``, ``L[j, i]``) makes a view, and
numba counts references to every view: an atomic increment when it is made and an atomic decrement when
it dies, which its reference-count pruning does not remove across the calls the row is passed to. A
Rényi kernel that does this for every agent of every item spent 28 % of its samples in
``NRT_incref``/``NRT_decref`` on the aggregate of 500 items of 10 agents and 64 classes (``perf``,
session 34; 6 % in a weight fit at 5,000 × 269 × 64), and making the per-agent power pass index the
rows instead took 1.25 → 0.98 µs an item (``benchmarks/results/session34.md`` §1).

:func:`at` and :func:`put` read and write element ``y`` of row ``i`` of a 2-D array, or element ``y``
of a 1-D array (``i`` then ignored), so one compiled loop serves both (the helpers are inlined into
it: the loops LLVM vectorised over a view's elements vectorise the same over a row's).
"""

from __future__ import annotations

from numba.extending import overload


def at(x, i, y):
    """``x[i, y]`` of a 2-D array, ``x[y]`` of a 1-D one (compiled code only)."""
    raise NotImplementedError("compiled code only")


def put(x, i, y, v):
    """``x[i, y] = v`` of a 2-D array, ``x[y] = v`` of a 1-D one (compiled code only)."""
    raise NotImplementedError("compiled code only")


@overload(at, inline="always")
def _at(x, i, y):
    if x.ndim == 1:
        return lambda x, i, y: x[y]
    if x.ndim == 2:
        return lambda x, i, y: x[i, y]
    return None


@overload(put, inline="always")
def _put(x, i, y, v):
    if x.ndim == 1:

        def put1(x, i, y, v):
            x[y] = v

        return put1
    if x.ndim == 2:

        def put2(x, i, y, v):
            x[i, y] = v

        return put2
    return None
