"""The sum of a vector in any order, vectorised, for compiled loops.

numba compiles ``for v in x: s += v`` (iteration over the array) to a scalar loop even with the
re-associating fast-math flag: each add waits on the last, about 0.47 ns an element here (AMD EPYC,
session 43), where the indexed loop ``for k in range(n): s += x[k]`` under the same flags vectorises
and runs at 0.03 ns an element in L1 (both measured over a row of 1,024 in a compiled loop). The
validation's row normaliser and the market's check summed rows the first way.

Not ``inline="always"``: numba inlines such a function in its own IR, where the caller's fast-math flags
(not these) then apply, and the sum is scalar again; LLVM still inlines the call, keeping its flags.

NaN and infinities propagate; the order of the additions is LLVM's (several partial sums), so the
result may differ from a serial sum in the last bits.
"""

from __future__ import annotations

from numba import njit


@njit(cache=True, fastmath={"reassoc", "nsz", "contract"}, error_model="numpy")
def vsum(x):
    """``sum(x)`` of a 1-D array, re-associated (vectorised)."""
    s = 0.0
    for k in range(x.shape[0]):
        s += x[k]
    return s
