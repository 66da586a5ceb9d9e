"""What numba lacks, written as LLVM IR: bit counts as single machine instructions (LLVM's
``ctpop`` and ``cttz``), an unaligned wide store, and an array view that costs no checks.

numba has no popcount of its own, and LLVM did not recognise the shift-and-mask popcount (nor the
de Bruijn lowest-bit lookup) as one instruction, so move counting spent ~12 operations per packed
mask; these compile to ``popcnt`` and ``tzcnt`` where the CPU has them (and to LLVM's portable
expansion elsewhere). ``numba.extending.intrinsic`` is numba's documented way to emit LLVM IR.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array


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


@intrinsic
def array_at(typingctx, buf, offset, shape, dtype):
    """The C-contiguous array of ``dtype`` (a numpy scalar type) and ``shape`` (a tuple of ints)
    whose data start at byte ``offset`` of the C-contiguous uint8 array ``buf``: pointer
    arithmetic and the array's fields, nothing checked. The caller keeps the array inside ``buf``
    and uses it only while ``buf`` lives (it holds no reference: kernels build views of their
    arguments). numba's ``buf[a:b].view(t).reshape(s)`` checks bounds, size and contiguity: the
    18 views of a State cost 0.5 µs a kernel call that way, a tenth of a one-game random step."""
    if not (isinstance(buf, types.Array) and buf.dtype == types.uint8 and buf.layout == "C"
            and isinstance(offset, types.Integer) and isinstance(shape, types.UniTuple)
            and isinstance(shape.dtype, types.Integer) and isinstance(dtype, types.NumberClass)):
        return None
    element, ndim = dtype.instance_type, shape.count
    result = types.Array(element, ndim, "C")

    def codegen(context, builder, signature, args):
        source = make_array(signature.args[0])(context, builder, args[0])
        data_type = context.get_data_type(element)
        data = builder.bitcast(builder.gep(source.data, [args[1]]), data_type.as_pointer())
        sizes = [context.cast(builder, size, shape.dtype, types.intp)
                 for size in cgutils.unpack_tuple(builder, args[2], ndim)]
        stride = context.get_constant(types.intp, context.get_abi_sizeof(data_type))
        itemsize, strides = stride, []
        for size in reversed(sizes):
            strides.insert(0, stride)
            stride = builder.mul(stride, size)
        view = make_array(result)(context, builder)
        populate_array(view, data=data, shape=sizes, strides=strides, itemsize=itemsize,
                       meminfo=None)
        return view._getvalue()

    return result(buf, offset, shape, dtype), codegen
