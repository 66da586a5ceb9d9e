"""Perft as a compiled depth-first search (DESIGN.md ``tafl perft``).

The search keeps one game per ply in a small State (row i is the position after i actions), so
its memory is a few kilobytes per ply at any depth; the last ply is not expanded, its count is
the number of legal actions of each position (pass counts, a finished game has none).
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidOptionError
from ._jit import helper, kernel
from .movegen import count_moves, lowest_bit
from .step import INFO_WIDTH, SCRATCH, action_slot, step_game
from .tables import P_K, P_PASS, KernelTables

MAX_PERFT_DEPTH = 32
"""Deepest perft accepted; far beyond what finishes (perft grows by the branching factor, 10-200
per ply)."""

MAX_PERFT_ESTIMATE = 10**12
"""Perft refuses a depth whose estimated count (first-ply count to the power of the depth)
exceeds this: hours of work at tens of millions of sequences per second."""


@helper
def _list_actions(to_move, chain, pieces, moves, tb, g, out):
    """Write the legal actions of game ``g`` into ``out``; returns how many."""
    k = tb.params[P_K]
    side = to_move[g]
    count = 0
    for i in range(moves.shape[1]):
        for d in range(4):
            x = np.int64(moves[g, i, d])
            while x:
                out[count] = (pieces[g, side, i] * 4 + d) * k + lowest_bit(x)
                count += 1
                x &= x - 1
    if chain[g] >= 0:
        out[count] = tb.params[P_PASS]
        count += 1
    return count


@helper
def _copy_row(a, dst, src):
    for i in range(a.shape[1]):
        a[dst, i] = a[src, i]


@kernel
def perft_search(board, to_move, start_side, king_sq, chain, turn, key, history,
                 last_irreversible, seen_keys, seen_counts, repeats, lines, occupancy, pieces,
                 moves, winner, reason, depth, actions, count, next_index, info, scratch, *tables):
    """perft(depth >= 2) of the game in row 0; rows 1 .. depth-1 are the search's plies.

    Work arrays: ``actions`` (depth, num_actions), ``count`` and ``next_index`` (depth,), ``info``
    (INFO_WIDTH,) and ``scratch`` (SCRATCH,), all int64."""
    tb = KernelTables(*tables)
    count[0] = _list_actions(to_move, chain, pieces, moves, tb, 0, actions[0])
    total = 0
    ply = 0
    while ply >= 0:
        if next_index[ply] == count[ply]:
            ply -= 1
            continue
        a = actions[ply, next_index[ply]]
        next_index[ply] += 1
        child = ply + 1
        _copy_row(board, child, ply)
        _copy_row(history, child, ply)
        _copy_row(seen_keys, child, ply)
        _copy_row(seen_counts, child, ply)
        _copy_row(lines, child, ply)
        for side in range(2):
            for i in range(occupancy.shape[2]):
                occupancy[child, side, i] = occupancy[ply, side, i]
            for i in range(pieces.shape[2]):
                pieces[child, side, i] = pieces[ply, side, i]
        for i in range(moves.shape[1]):
            for d in range(4):
                moves[child, i, d] = moves[ply, i, d]
        to_move[child] = to_move[ply]
        start_side[child] = start_side[ply]
        king_sq[child] = king_sq[ply]
        chain[child] = chain[ply]
        turn[child] = turn[ply]
        key[child] = key[ply]
        last_irreversible[child] = last_irreversible[ply]
        repeats[child] = repeats[ply]
        winner[child] = winner[ply]
        reason[child] = reason[ply]
        slot = action_slot(to_move, chain, pieces, moves, reason, tb, child, a)
        step_game(board, to_move, start_side, king_sq, chain, turn, key, history,
                  last_irreversible, seen_keys, seen_counts, repeats, lines, occupancy, pieces,
                  moves, winner, reason, tb, child, a, slot, info, scratch)
        if child == depth - 1:
            total += count_moves(moves, chain, child)
        else:
            ply = child
            count[ply] = _list_actions(to_move, chain, pieces, moves, tb, ply, actions[ply])
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
    return int(perft_search(*stack.arrays(), depth, *work, *engine.kernel_tables))
