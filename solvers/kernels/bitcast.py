"""Reinterpret a float64's bits as an int64 and back, inside compiled loops.

The vectorised :mod:`solvers.kernels.fastexp` and :mod:`solvers.kernels.fastlog` build and read
IEEE exponent fields. A NumPy ``view`` does that only for whole arrays, which split each kernel into
three loops over a scratch array; these two intrinsics are LLVM's ``bitcast`` (no instruction at
all), so the kernels are one loop that LLVM still vectorises.
"""

from __future__ import annotations

from numba import types
from numba.extending import intrinsic


@intrinsic
def as_int64(typingctx, x):
    """The bits of the float64 ``x`` as an int64."""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int64))

    return types.int64(types.float64), codegen


@intrinsic
def as_float64(typingctx, x):
    """The int64 ``x``'s bits as a float64."""
    if x != types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))

    return types.float64(types.int64), codegen
