"""Positions: from a position string to a checked board, and from a board to everything the
engine derives from it (line masks, occupancy, piece slots, Zobrist key).

These run once per new game (and in :func:`~tafl_env.engine.audit.audit`), never per move, so
they are plain numpy: the step keeps the same values up to date incrementally.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidPositionError
from ..notation import EMPTY, KING, OFFBOARD, parse_position, square_name
from .tables import SIDE_OF, Tables


def parse_board(tables: Tables, position: str) -> tuple[np.ndarray, int]:
    """Position string → (board with the sentinel cell, king square or S); RULES.md §6.6 checks."""
    n, s = tables.n, tables.s
    cells = parse_position(position, n)
    kings = (cells == KING).nonzero()[0]
    if len(kings) > 1:
        raise InvalidPositionError(
            f"position {position!r} has {len(kings)} kings "
            f"({', '.join(square_name(int(k), n) for k in kings)}); at most one is allowed")
    bad = np.flatnonzero((cells != EMPTY) & (cells != KING) & tables.restricted[:s])
    if len(bad):
        raise InvalidPositionError(
            f"position {position!r} has a non-king piece on the restricted square "
            f"{square_name(int(bad[0]), n)}")
    board = np.empty(s + 1, dtype=np.int8)
    board[:s] = cells
    board[s] = OFFBOARD
    return board, (int(kings[0]) if len(kings) else s)


def line_bits(tables: Tables, board: np.ndarray) -> np.ndarray:
    """(R, 4N+1) uint32 empty-square masks of every column and row, plain and reversed, then 0."""
    n, s = tables.n, tables.s
    r = board.shape[0]
    empty = (board[:, :s] == EMPTY).reshape(r, n, n).astype(np.int64)   # [game, rank, file]
    plain = 1 << np.arange(n, dtype=np.int64)
    out = np.zeros((r, tables.num_lines), dtype=np.uint32)
    out[:, :n] = np.einsum("grf,r->gf", empty, plain)                   # columns, bit = rank
    out[:, n:2 * n] = np.einsum("grf,r->gf", empty, plain[::-1])        # reversed
    out[:, 2 * n:3 * n] = np.einsum("grf,f->gr", empty, plain)          # rows, bit = file
    out[:, 3 * n:4 * n] = np.einsum("grf,f->gr", empty, plain[::-1])
    return out


def occupancy(tables: Tables, board: np.ndarray) -> np.ndarray:
    """(2, N) uint32: each side's pieces as one N-bit int per rank (bit = file)."""
    n = tables.n
    sides = SIDE_OF[board[: tables.s]].reshape(n, n)
    weights = (1 << np.arange(n)).astype(np.int64)
    return np.stack([(sides == side).astype(np.int64) @ weights for side in (0, 1)]).astype(np.uint32)


def piece_slots(tables: Tables, board: np.ndarray, min_slots: int = 0) -> np.ndarray:
    """(2, P) squares of each side's pieces, jumping pieces first, then by square; S fills
    empty slots. P is the larger of ``min_slots`` and the bigger side's count."""
    cells = board[: tables.s]
    sides = SIDE_OF[cells]
    jumper = tables.jumper[cells]
    lists = [np.concatenate([((sides == side) & jumper).nonzero()[0],
                             ((sides == side) & ~jumper).nonzero()[0]]) for side in (0, 1)]
    slots = max(min_slots, len(lists[0]), len(lists[1]))
    out = np.full((2, slots), tables.s, dtype=np.intp)
    for side, squares in enumerate(lists):
        out[side, : len(squares)] = squares
    return out


def full_key(tables: Tables, board: np.ndarray, to_move: np.ndarray) -> np.ndarray:
    """(R,) Zobrist keys of boards (R, S+1) and sides to move, computed from scratch."""
    keys = tables.zobrist[board.astype(np.intp), np.arange(tables.s + 1)]
    k = np.bitwise_xor.reduce(keys, axis=1)
    return k ^ np.where(to_move == 1, tables.side_key, np.uint64(0))
