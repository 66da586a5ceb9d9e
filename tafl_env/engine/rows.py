"""Games as rows of a work State, compiled: copies between rows and a step on one row, for
searches that keep one game per ply or per node (perft here, the agents' greedy and MCTS).

A State travels into the kernels as the tuple ``State.arrays()``; the ``I_*`` constants
(:mod:`.layout`) index it.
Rows are copied "lightly" (board, pieces, moves, lines, scalars and the one history entry a step
adds): the history prefix of every work row is written once per call, and the repetition tables
are kept in step by undoing the one record a completed turn adds (:func:`restore_seen`), so a
copy costs about as much as the step itself at any game length.
"""

from __future__ import annotations

import numpy as np

from ._jit import helper, kernel, leaf
from .layout import (I_BOARD, I_CHAIN, I_HIST, I_KEY, I_KING, I_LASTIRR, I_LINES,  # noqa: F401
                     I_MOVES, I_OCC, I_PIECES, I_REASON, I_REPEATS, I_SEENC, I_SEENK, I_START,
                     I_TO_MOVE, I_TURN, I_WINNER)
from .movegen import lowest_bit
from .step import action_slot, step_game
from .tables import P_K, P_PASS
from .turns import seen_slot



@leaf
def copy_light(S, src, dst):
    """Copy game ``src`` to row ``dst`` of the same State, except the repetition tables and the
    history before ``turn[src]``."""
    board, lines, occ, pieces, moves = S[I_BOARD], S[I_LINES], S[I_OCC], S[I_PIECES], S[I_MOVES]
    for i in range(board.shape[1]):
        board[dst, i] = board[src, i]
    for i in range(lines.shape[1]):
        lines[dst, i] = lines[src, i]
    for side in range(2):
        for i in range(occ.shape[2]):
            occ[dst, side, i] = occ[src, side, i]
        for i in range(pieces.shape[2]):
            pieces[dst, side, i] = pieces[src, side, i]
    for i in range(moves.shape[1]):
        for d in range(4):
            moves[dst, i, d] = moves[src, i, d]
    S[I_TO_MOVE][dst] = S[I_TO_MOVE][src]
    S[I_START][dst] = S[I_START][src]
    S[I_KING][dst] = S[I_KING][src]
    S[I_CHAIN][dst] = S[I_CHAIN][src]
    t = S[I_TURN][src]
    S[I_TURN][dst] = t
    S[I_KEY][dst] = S[I_KEY][src]
    S[I_HIST][dst, t] = S[I_HIST][src, t]
    S[I_LASTIRR][dst] = S[I_LASTIRR][src]
    S[I_REPEATS][dst] = S[I_REPEATS][src]
    S[I_WINNER][dst] = S[I_WINNER][src]
    S[I_REASON][dst] = S[I_REASON][src]


@leaf
def copy_seen(S, src, dst):
    keys, counts = S[I_SEENK], S[I_SEENC]
    for i in range(keys.shape[1]):
        keys[dst, i] = keys[src, i]
        counts[dst, i] = counts[src, i]


@helper
def copy_full(A, a, B, b):
    """Copy game ``a`` of State ``A`` into row ``b`` of State ``B`` (same history width and slots)."""
    board, lines, occ, pieces, moves = B[I_BOARD], B[I_LINES], B[I_OCC], B[I_PIECES], B[I_MOVES]
    for i in range(board.shape[1]):
        board[b, i] = A[I_BOARD][a, i]
    for i in range(lines.shape[1]):
        lines[b, i] = A[I_LINES][a, i]
    for side in range(2):
        for i in range(occ.shape[2]):
            occ[b, side, i] = A[I_OCC][a, side, i]
        for i in range(pieces.shape[2]):
            pieces[b, side, i] = A[I_PIECES][a, side, i]
    for i in range(moves.shape[1]):
        for d in range(4):
            moves[b, i, d] = A[I_MOVES][a, i, d]
    B[I_TO_MOVE][b] = A[I_TO_MOVE][a]
    B[I_START][b] = A[I_START][a]
    B[I_KING][b] = A[I_KING][a]
    B[I_CHAIN][b] = A[I_CHAIN][a]
    B[I_TURN][b] = A[I_TURN][a]
    B[I_KEY][b] = A[I_KEY][a]
    B[I_LASTIRR][b] = A[I_LASTIRR][a]
    B[I_REPEATS][b] = A[I_REPEATS][a]
    B[I_WINNER][b] = A[I_WINNER][a]
    B[I_REASON][b] = A[I_REASON][a]
    for i in range(A[I_TURN][a] + 1):
        B[I_HIST][b, i] = A[I_HIST][a, i]
    for i in range(B[I_SEENK].shape[1]):
        B[I_SEENK][b, i] = A[I_SEENK][a, i]
        B[I_SEENC][b, i] = A[I_SEENC][a, i]


@leaf
def step_row(S, tb, g, a, info, scratch):
    """Play the legal action ``a`` in row ``g`` (a whole step of the engine)."""
    slot = action_slot(S[I_TO_MOVE], S[I_CHAIN], S[I_PIECES], S[I_MOVES], S[I_REASON], tb, g, a)
    step_game(S[0], S[1], S[2], S[3], S[4], S[5], S[6], S[7], S[8], S[9], S[10], S[11], S[12],
              S[13], S[14], S[15], S[16], S[17], tb, g, a, slot, info, scratch)


@leaf
def restore_seen(S, src, dst):
    """After a step in row ``dst`` (a light copy of ``src``, whose tables it shared), make its
    repetition tables equal to ``src``'s again: undo the one record of a completed turn, or copy
    them back where a capture cleared them."""
    t = S[I_TURN][dst]
    if t == S[I_TURN][src]:
        return                         # a berserk chain is pending: nothing recorded
    if S[I_LASTIRR][dst] == t and S[I_LASTIRR][src] != t:
        copy_seen(S, src, dst)         # the capture cleared the tables
        return
    slot = seen_slot(S[I_SEENK], S[I_SEENC], dst, S[I_KEY][dst])
    S[I_SEENC][dst, slot] -= 1         # the last insertion: removing it restores the table exactly


@leaf
def seen_count(S, g, key):
    """How often ``key`` occurs in row ``g``'s repetition table."""
    return S[I_SEENC][g, seen_slot(S[I_SEENK], S[I_SEENC], g, key)]   # 0: not there


@leaf
def list_actions(S, tb, g, out):
    """Write the legal actions of row ``g`` into ``out`` (pass last); returns how many."""
    k = tb.params[P_K]
    side = S[I_TO_MOVE][g]
    pieces, moves = S[I_PIECES], S[I_MOVES]
    count = 0
    for i in range(moves.shape[1]):
        for d in range(4):
            x = np.int64(moves[g, i, d])
            while x:
                out[count] = (pieces[g, side, i] * 4 + d) * k + lowest_bit(x)
                count += 1
                x &= x - 1
    if S[I_CHAIN][g] >= 0:
        out[count] = tb.params[P_PASS]
        count += 1
    return count


@kernel
def load_rows(A, a, B, rows):
    """Copy game ``a`` of ``A`` into each of ``B``'s rows ``0 .. rows-1`` (a search's work rows)."""
    for b in range(rows):
        copy_full(A, a, B, b)
