"""One buffer per State and one for the tables: what a kernel call from Python passes.

Numba checks the type of every argument of a call, about 0.1 µs an array. A step that took the
State's 18 arrays and the tables' 10 one by one spent 3 µs on that alone, several times the move
itself at B = 1. So a State keeps all its arrays as views into one byte buffer (field after
field, each block C-contiguous and 8-byte aligned), the tables likewise, and the kernels called
from Python take the buffers and rebuild the views inside (:func:`state_views`,
:func:`table_views`), which costs a few instructions.

Each buffer begins with its ``dims``, an int64 header: the sizes the shapes are made of, then the
byte offset of every block (and, for a State, the buffer's length). Python computes it
(:func:`state_dims`, :func:`pack_tables`); the compiled unpackers read it;
``tests/test_compiled_engine.py`` checks that both see the same arrays."""

from __future__ import annotations

import functools
import math

import numpy as np

from ._jit import helper
from .tables import NUM_PARAMS, KernelTables

# --- the State ------------------------------------------------------------------------------------
# (name, dtype, shape in the sizes B, S1 = squares + sentinel, H = history capacity, L = bit lines,
# N = board side, P = piece slots). The order is State.arrays()'s.
STATE_FIELDS = (
    ("board", np.int8, ("B", "S1")),
    ("to_move", np.int8, ("B",)),
    ("start_side", np.int8, ("B",)),
    ("king_sq", np.intp, ("B",)),
    ("chain", np.intp, ("B",)),
    ("turn", np.int32, ("B",)),
    ("key", np.uint64, ("B",)),
    ("history", np.uint64, ("B", "H")),
    ("last_irreversible", np.int32, ("B",)),
    ("seen_keys", np.uint64, ("B", "2H")),
    ("seen_counts", np.int32, ("B", "2H")),
    ("repeats", np.int16, ("B",)),
    ("lines", np.uint32, ("B", "L")),
    ("occupancy", np.uint32, ("B", 2, "N")),
    ("pieces", np.intp, ("B", 2, "P")),
    ("moves", np.uint32, ("B", "P", 4)),
    ("winner", np.int8, ("B",)),
    ("reason", np.int8, ("B",)),
)
STATE_FIELD_NAMES = tuple(name for name, _, _ in STATE_FIELDS)
# Index of each field in State.arrays() and in the tuple state_views returns.
(I_BOARD, I_TO_MOVE, I_START, I_KING, I_CHAIN, I_TURN, I_KEY, I_HIST, I_LASTIRR, I_SEENK, I_SEENC,
 I_REPEATS, I_LINES, I_OCC, I_PIECES, I_MOVES, I_WINNER, I_REASON) = range(len(STATE_FIELDS))
STATE_SIZES = ("B", "S1", "H", "L", "N", "P")
_ALIGN = 8
_ITEMSIZES = tuple(np.dtype(dtype).itemsize for _, dtype, _ in STATE_FIELDS)
STATE_HEADER = len(STATE_SIZES) + len(STATE_FIELDS) + 1   # int64 entries of a State's dims


def _block(nbytes: int) -> int:
    return -(-nbytes // _ALIGN) * _ALIGN


def state_shapes(sizes: dict) -> list[tuple]:
    """The shape of every State field for the given sizes (``STATE_SIZES`` keys)."""
    value = dict(sizes, **{"2H": 2 * sizes["H"]})
    return [tuple(value[d] if isinstance(d, str) else d for d in shape)
            for _, _, shape in STATE_FIELDS]


@functools.lru_cache(maxsize=256)
def state_dims(b: int, s1: int, h: int, nl: int, n: int, p: int) -> np.ndarray:
    """The dims header of a State buffer: the six sizes, every field's byte offset, then the
    buffer's length in bytes (read-only: computed once per layout)."""
    shapes = state_shapes(dict(B=b, S1=s1, H=h, L=nl, N=n, P=p))
    offsets, at = [], 8 * STATE_HEADER
    for itemsize, shape in zip(_ITEMSIZES, shapes):
        offsets.append(at)
        at += _block(math.prod(shape) * itemsize)
    dims = np.array([b, s1, h, nl, n, p, *offsets, at], dtype=np.int64)
    dims.flags.writeable = False
    return dims


def new_state_buffer(dims: np.ndarray) -> np.ndarray:
    """A zeroed State buffer laid out by ``dims``, the header written."""
    buffer = np.zeros(dims[-1], dtype=np.uint8)
    buffer[:8 * STATE_HEADER] = dims.view(np.uint8)
    return buffer


def header_of(buffer: np.ndarray) -> np.ndarray:
    """The dims header of a State buffer (a view)."""
    return buffer[:8 * STATE_HEADER].view(np.int64)


def state_arrays(buffer: np.ndarray) -> tuple:
    """The State's arrays as numpy views into ``buffer``, in ``STATE_FIELDS`` order."""
    return tuple(np.ndarray(shape, dtype, buffer, offset)
                 for shape, dtype, offset in _views_spec(tuple(header_of(buffer).tolist())))


@functools.lru_cache(maxsize=256)
def _views_spec(d: tuple) -> tuple:
    shapes = state_shapes(dict(zip(STATE_SIZES, d)))
    return tuple((shape, np.dtype(dtype), d[6 + i])
                 for i, ((_, dtype, _), shape) in enumerate(zip(STATE_FIELDS, shapes)))


@helper
def state_views(buf):
    """The compiled twin of :func:`state_arrays`: the 18 arrays of the State in ``buf``. A call,
    not inlined: the views are built by code compiled once, not repeated in every kernel. Call
    it from serial kernels only (compiled as the engine's, without reference counting)."""
    dims = buf[:8 * STATE_HEADER].view(np.int64)
    b, s1, h, nl, n, p = dims[0], dims[1], dims[2], dims[3], dims[4], dims[5]
    o = dims[6:]
    return (buf[o[0]:o[0] + b * s1].view(np.int8).reshape((b, s1)),
            buf[o[1]:o[1] + b].view(np.int8),
            buf[o[2]:o[2] + b].view(np.int8),
            buf[o[3]:o[3] + 8 * b].view(np.intp),
            buf[o[4]:o[4] + 8 * b].view(np.intp),
            buf[o[5]:o[5] + 4 * b].view(np.int32),
            buf[o[6]:o[6] + 8 * b].view(np.uint64),
            buf[o[7]:o[7] + 8 * b * h].view(np.uint64).reshape((b, h)),
            buf[o[8]:o[8] + 4 * b].view(np.int32),
            buf[o[9]:o[9] + 16 * b * h].view(np.uint64).reshape((b, 2 * h)),
            buf[o[10]:o[10] + 8 * b * h].view(np.int32).reshape((b, 2 * h)),
            buf[o[11]:o[11] + 2 * b].view(np.int16),
            buf[o[12]:o[12] + 4 * b * nl].view(np.uint32).reshape((b, nl)),
            buf[o[13]:o[13] + 8 * b * n].view(np.uint32).reshape((b, 2, n)),
            buf[o[14]:o[14] + 16 * b * p].view(np.intp).reshape((b, 2, p)),
            buf[o[15]:o[15] + 16 * b * p].view(np.uint32).reshape((b, p, 4)),
            buf[o[16]:o[16] + b].view(np.int8),
            buf[o[17]:o[17] + b].view(np.int8))


# --- the tables -----------------------------------------------------------------------------------
# (field of KernelTables, shape in the sizes S1, K = N-1, N, C = piece codes).
TABLE_HEADER = 4 + len(KernelTables._fields)   # int64 entries: S1, K, N, C, the offsets
TABLE_LAYOUT = {
    "params": (np.int64, (NUM_PARAMS,)), "flags": (np.uint8, ("S1",)),
    "nbr": (np.int64, ("S1", 8)), "dest": (np.int64, ("S1", 4, "K")),
    "line": (np.int64, ("S1", 16)), "allowed": (np.int64, (2, "C", "S1", 4)),
    "capture": (np.uint8, (2, "C", "C")), "zobrist": (np.uint64, ("C", "S1")),
    "edge_rows": (np.int64, ("N",)), "jumper": (np.uint8, ("C",)),
}


def pack_tables(tables: KernelTables) -> tuple[np.ndarray, KernelTables]:
    """Copy ``tables`` into one buffer: ``(buffer, views)``; ``views`` is a KernelTables of numpy
    views into the buffer (what the search agents pass on). The header: S1, K, N, C, then the
    byte offset of every table."""
    s1, c = tables.flags.shape[0], tables.jumper.shape[0]
    k, n = tables.dest.shape[2], tables.edge_rows.shape[0]
    sizes = {"S1": s1, "K": k, "N": n, "C": c}
    arrays = []
    for name in KernelTables._fields:
        arr = np.ascontiguousarray(getattr(tables, name))
        dtype, shape = TABLE_LAYOUT[name]
        want = tuple(sizes[d] if isinstance(d, str) else d for d in shape)
        if arr.shape != want or arr.dtype != dtype:
            raise ValueError(f"kernel table {name} is {arr.dtype} {arr.shape}, expected "
                             f"{np.dtype(dtype)} {want}")
        arrays.append(arr)
    offsets, at = [], 8 * TABLE_HEADER
    for arr in arrays:
        offsets.append(at)
        at += _block(arr.nbytes)
    buffer = np.zeros(at, dtype=np.uint8)
    buffer[:8 * TABLE_HEADER].view(np.int64)[:] = [s1, k, n, c, *offsets]
    views = []
    for arr, start in zip(arrays, offsets):
        view = buffer[start:start + arr.nbytes].view(arr.dtype).reshape(arr.shape)
        view[...] = arr
        views.append(view)
    return buffer, KernelTables(*views)


@helper
def table_views(buf):
    """The compiled twin of :func:`pack_tables`'s views: the KernelTables in ``buf`` (from serial
    kernels only, as :func:`state_views`)."""
    dims = buf[:8 * TABLE_HEADER].view(np.int64)
    s1, k, n, c = dims[0], dims[1], dims[2], dims[3]
    o = dims[4:]
    return KernelTables(
        buf[o[0]:o[0] + 8 * NUM_PARAMS].view(np.int64),
        buf[o[1]:o[1] + s1].view(np.uint8),
        buf[o[2]:o[2] + 64 * s1].view(np.int64).reshape((s1, 8)),
        buf[o[3]:o[3] + 32 * s1 * k].view(np.int64).reshape((s1, 4, k)),
        buf[o[4]:o[4] + 128 * s1].view(np.int64).reshape((s1, 16)),
        buf[o[5]:o[5] + 64 * c * s1].view(np.int64).reshape((2, c, s1, 4)),
        buf[o[6]:o[6] + 2 * c * c].view(np.uint8).reshape((2, c, c)),
        buf[o[7]:o[7] + 8 * c * s1].view(np.uint64).reshape((c, s1)),
        buf[o[8]:o[8] + 8 * n].view(np.int64),
        buf[o[9]:o[9] + c].view(np.uint8))

