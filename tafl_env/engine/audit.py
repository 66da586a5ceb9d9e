"""Audit: recompute from the boards everything the step keeps incrementally, and list what
disagrees. The tests run it along random games of every variant."""

from __future__ import annotations

import numpy as np

from ..notation import KING
from .movegen import generate_moves
from .positions import full_key, line_bits, occupancy, piece_slots
from .state import RUNNING, State


def audit(engine, state: State) -> list[str]:
    """Problems found in ``state`` (empty: consistent). Checks keys, line masks, occupancy, piece
    slots, king squares, the cached legal moves (outside chains), repetition counts and the
    repetition tables against values derived from the boards and histories alone."""
    t = engine.tables
    s = t.s
    problems = []
    keys = full_key(t, state.board, state.to_move)
    if not np.array_equal(state.key, keys):
        problems.append(f"key differs in games {(state.key != keys).nonzero()[0].tolist()}")
    lines = line_bits(t, state.board)
    if not np.array_equal(state.lines, lines):
        problems.append("line masks differ from the board")
    for g in range(len(state)):
        if not np.array_equal(state.occupancy[g], occupancy(t, state.board[g])):
            problems.append(f"game {g}: occupancy differs from the board")
        slots = piece_slots(t, state.board[g])
        for side in (0, 1):
            have = sorted(int(x) for x in state.pieces[g, side] if x < s)
            want = sorted(int(x) for x in slots[side] if x < s)
            if have != want:
                problems.append(f"game {g}: side {side} piece slots {have} != board {want}")
        kings = (state.board[g, :s] == KING).nonzero()[0]
        king = int(kings[0]) if len(kings) else s
        if king != state.king_sq[g]:
            problems.append(f"game {g}: king_sq {state.king_sq[g]} != board {king}")
        if state.reason[g] != RUNNING:
            if state.moves[g].any():
                problems.append(f"game {g}: finished but has moves")
            continue
        if state.chain[g] < 0:
            fresh = state.moves.copy()
            generate_moves(state.board, state.to_move, lines, state.pieces, fresh, engine.kernel_tables, g)
            if not np.array_equal(fresh[g], state.moves[g]):
                problems.append(f"game {g}: cached moves differ from a fresh generation")
        turn = int(state.turn[g])
        # Inside a chain after a capture, last_irreversible already names the coming turn.
        start = min(int(state.last_irreversible[g]), turn)
        window = state.history[g, start: turn + 1]
        count = int((window == state.history[g, turn]).sum())
        if count != state.repeats[g]:
            problems.append(f"game {g}: repetition count {state.repeats[g]} != history {count}")
        if state.last_irreversible[g] > turn:
            continue   # the table is emptied when the turn ends
        table = {int(k): int(c) for k, c in zip(state.seen_keys[g], state.seen_counts[g]) if c}
        values, counts = np.unique(window, return_counts=True)
        if table != {int(v): int(c) for v, c in zip(values, counts)}:
            problems.append(f"game {g}: repetition table differs from the history")
    return problems
