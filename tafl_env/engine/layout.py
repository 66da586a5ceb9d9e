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

from ._bits import array_at
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
    """The compiled twin of :func:`state_arrays`: the 18 arrays of the State in ``buf``, built
    without checks (:func:`._bits.array_at`: the header was written, and every view checked to
    lie inside the buffer, by :func:`state_arrays` when the State was made). A call, not inlined:
    the views are built by code compiled once, not repeated in every kernel. Call it from
    serial kernels only (compiled as the engine's, without reference counting)."""
    d = array_at(buf, 0, (STATE_HEADER,), np.int64)
    b, s1, h, nl, n, p = d[0], d[1], d[2], d[3], d[4], d[5]
    return (array_at(buf, d[6], (b, s1), np.int8),
            array_at(buf, d[7], (b,), np.int8),
            array_at(buf, d[8], (b,), np.int8),
            array_at(buf, d[9], (b,), np.intp),
            array_at(buf, d[10], (b,), np.intp),
            array_at(buf, d[11], (b,), np.int32),
            array_at(buf, d[12], (b,), np.uint64),
            array_at(buf, d[13], (b, h), np.uint64),
            array_at(buf, d[14], (b,), np.int32),
            array_at(buf, d[15], (b, 2 * h), np.uint64),
            array_at(buf, d[16], (b, 2 * h), np.int32),
            array_at(buf, d[17], (b,), np.int16),
            array_at(buf, d[18], (b, nl), np.uint32),
            array_at(buf, d[19], (b, 2, n), np.uint32),
            array_at(buf, d[20], (b, 2, p), np.intp),
            array_at(buf, d[21], (b, p, 4), np.uint32),
            array_at(buf, d[22], (b,), np.int8),
            array_at(buf, d[23], (b,), np.int8))


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
    d = array_at(buf, 0, (TABLE_HEADER,), np.int64)
    s1, k, n, c = d[0], d[1], d[2], d[3]
    return KernelTables(
        array_at(buf, d[4], (NUM_PARAMS,), np.int64),
        array_at(buf, d[5], (s1,), np.uint8),
        array_at(buf, d[6], (s1, 8), np.int64),
        array_at(buf, d[7], (s1, 4, k), np.int64),
        array_at(buf, d[8], (s1, 16), np.int64),
        array_at(buf, d[9], (2, c, s1, 4), np.int64),
        array_at(buf, d[10], (2, c, c), np.uint8),
        array_at(buf, d[11], (c, s1), np.uint64),
        array_at(buf, d[12], (n,), np.int64),
        array_at(buf, d[13], (c,), np.uint8))
