"""Perft as a compiled depth-first search (DESIGN.md ``tafl perft``).

The search keeps one game per ply in a small State (row i is the position after i actions), so
its memory is a few kilobytes per ply at any depth; the last ply is not expanded, its count is
the number of legal actions of each position (pass counts, a finished game has none).
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidOptionError
from ._jit import kernel
from .layout import I_CHAIN, I_MOVES, state_views, table_views
from .movegen import count_moves
from .rows import copy_full, list_actions, step_row
from .step import INFO_WIDTH, SCRATCH

MAX_PERFT_DEPTH = 32
"""Deepest perft accepted; far beyond what finishes (perft grows by the branching factor, 10-200
per ply)."""

MAX_PERFT_ESTIMATE = 10**12
"""Perft refuses a depth whose estimated count (first-ply count to the power of the depth)
exceeds this: hours of work at tens of millions of sequences per second."""


@kernel
def perft_search(buf, depth, actions, count, next_index, info, scratch, tbuf):
    """perft(depth >= 2) of the game in row 0; rows 1 .. depth-1 are the search's plies.

    Work arrays: ``actions`` (depth, num_actions), ``count`` and ``next_index`` (depth,), ``info``
    (INFO_WIDTH,) and ``scratch`` (SCRATCH,), all int64."""
    tb = table_views(tbuf)
    S = state_views(buf)
    chain, moves = S[I_CHAIN], S[I_MOVES]
    count[0] = list_actions(S, tb, 0, actions[0])
    total = 0
    ply = 0
    while ply >= 0:
        if next_index[ply] == count[ply]:
            ply -= 1
            continue
        a = actions[ply, next_index[ply]]
        next_index[ply] += 1
        child = ply + 1
        copy_full(S, ply, S, child)
        step_row(S, tb, child, a, info, scratch)
        if child == depth - 1:
            total += count_moves(moves, chain, child)
        else:
            ply = child
            count[ply] = list_actions(S, tb, ply, actions[ply])
            next_index[ply] = 0
    return total


def perft(engine, state, depth: int) -> int:
    """perft(depth) of the single game in ``state`` (a batch of one)."""
    if depth > MAX_PERFT_DEPTH:
        raise InvalidOptionError(f"perft depth {depth} is too deep: at most {MAX_PERFT_DEPTH}")
    if depth == 0:
        return 1
    first = int(engine.count_legal(state)[0])
    if depth == 1 or first == 0:
        return first
    estimate = float(first) ** depth
    if estimate > MAX_PERFT_ESTIMATE:
        raise InvalidOptionError(
            f"perft depth {depth} would count about {estimate:.1e} action sequences "
            f"({first} legal actions now, to the power {depth}): hours of work; "
            f"refusing above {MAX_PERFT_ESTIMATE:.0e}, choose a smaller depth")
    stack = state.take(np.zeros(depth, dtype=np.intp))
    stack.grow_history(int(state.turn[0]) + depth + 2)
    work = (np.empty((depth, engine.num_actions), dtype=np.int64), np.zeros(depth, dtype=np.int64),
            np.zeros(depth, dtype=np.int64), np.empty(INFO_WIDTH, dtype=np.int64),
            np.empty(SCRATCH, dtype=np.int64))
    return int(perft_search(stack.buffer, depth, *work, engine.packed_tables))
