"""Compile the per-item solvers without numba's reference counting (``NO_REFCOUNT``).

numba counts references to every array a compiled function binds: an atomic increment when an array
argument, a tuple of arrays or a view is bound to a name, an atomic decrement when the name dies. The
Rényi fixed point of one item passes a dozen scratch arrays through ten small kernels, so on an item of
10 agents and 64 classes it made about 125 increments and as many decrements (counted by a ``gdb``
breakpoint on ``NRT_incref``, session 34), 27-29 % of the aggregate's samples under ``perf``, and
about 6 % of a weight fit's at 5,000 × 269 × 64.

A function compiled with numba's ``_nrt=False`` option makes none; the functions it calls inherit the
option (numba's flag inheritance). That is safe exactly when nothing in the call tree allocates an array
or returns a new one, and numba enforces the first at compile time ("NRT required but not enabled");
the kernels given :data:`NO_REFCOUNT` (:func:`aggregators.renyi_kernels._solve_item` and the adjoints
of :mod:`aggregators.renyi_kernels` and :mod:`aggregators.renyi_fused`) work in their caller's
workspace and return numbers. Their callers keep counting (they allocate the workspaces and hold every
array for the call's duration, so the uncounted views inside cannot outlive their arrays).

The option is numba's private spelling (``CPUTargetOptions._nrt``, used by numba's own tests); where a
numba release no longer has it, :data:`NO_REFCOUNT` is empty and the kernels compile as before.
Measured on the aggregate of 5,000 near-duplicate items, 10 agents, 64 classes, γ = 0.5, one thread:
4.8-5.0 → 3.4 µs an item (``benchmarks/results/session34.md``).
"""

from __future__ import annotations

from numba.core.cpu import CPUTargetOptions

NO_REFCOUNT: dict = {"_nrt": False} if hasattr(CPUTargetOptions, "_nrt") else {}
"""Extra ``@njit`` options of a kernel that must make no reference counts (empty if numba lacks it)."""
