"""Bit counts as single machine instructions: LLVM's ``ctpop`` and ``cttz`` intrinsics.

numba has no popcount of its own, and LLVM did not recognise the shift-and-mask popcount (nor the
de Bruijn lowest-bit lookup) as one instruction, so move counting spent ~12 operations per packed
mask; these compile to ``popcnt`` and ``tzcnt`` where the CPU has them (and to LLVM's portable
expansion elsewhere). ``numba.extending.intrinsic`` is numba's documented way to emit LLVM IR.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic


@intrinsic
def ctpop(typingctx, x):
    """The number of set bits of the int64 ``x`` (as int64)."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return types.int64(types.int64), codegen


@intrinsic
def cttz(typingctx, x):
    """The number of trailing zero bits of the int64 ``x``, which must not be 0 (as int64)."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    return types.int64(types.int64), codegen


@intrinsic
def store_bytes(typingctx, arr, offset, value):
    """Store the int ``value`` (uint64: 8 bytes, uint32: 4) at byte ``offset`` of the C-contiguous
    int8 array ``arr``, unaligned, little-endian: one machine store for what would otherwise be
    eight (or four) byte stores. The caller keeps ``offset`` and the bytes after it inside ``arr``."""
    if not (isinstance(arr, types.Array) and arr.layout == "C" and arr.dtype == types.int8
            and value in (types.uint64, types.uint32) and isinstance(offset, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        at = builder.gep(ary.data, [args[1]])
        target = builder.bitcast(at, ir.IntType(signature.args[2].bitwidth).as_pointer())
        builder.store(args[2], target, align=1)
        return context.get_dummy_value()

    return types.void(arr, offset, value), codegen
