"""The end of a turn, compiled: handing the move over, repetition, no legal move and the move cap
(RULES.md §3.9, §3.10, §6.1, §6.4).

Repetition counts positions since the last capture. Each game keeps the keys recorded since then
in a small open-addressing hash table (``State.seen_keys`` / ``State.seen_counts``, twice the
history's size, so never more than half full): recording a position and counting its
occurrences costs the same at turn 10 as at turn 100,000.
"""

from __future__ import annotations

import numpy as np

from ._jit import helper, kernel, leaf
from .movegen import generate_moves
from .state import DRAW, NO_MOVES, REPETITION, RUNNING, TRUNCATED
from .tables import P_MAX_TURNS, P_REPETITION, P_SIDE_KEY

REPETITION_DRAW, REPETITION_IGNORE = 1, 2   # P_REPETITION codes (tables.REPETITION_CODES)


@leaf
def finish(winner, reason, moves, g, who, why):
    """End game ``g`` with this winner and reason, if it is still running."""
    if reason[g] == RUNNING:
        winner[g] = who
        reason[g] = why
        moves[g, :, :] = 0


@leaf
def seen_slot(seen_keys, seen_counts, g, key):
    """The slot of ``key`` in game ``g``'s table, or the empty slot where it would go (linear
    probing from the key's low bits; the table is never more than half full)."""
    size = seen_keys.shape[1]
    slot = np.int64(key & np.uint64(size - 1))
    while seen_counts[g, slot] != 0 and seen_keys[g, slot] != key:
        slot = (slot + 1) & (size - 1)
    return slot


@leaf
def record_seen(seen_keys, seen_counts, g, key):
    """Count one more occurrence of ``key`` in game ``g``'s table; returns the new count."""
    slot = seen_slot(seen_keys, seen_counts, g, key)
    seen_keys[g, slot] = key
    seen_counts[g, slot] += 1
    return seen_counts[g, slot]


@kernel
def rebuild_seen(history, turn, last_irreversible, seen_keys, seen_counts):
    """Fill empty tables from the history (after the tables were resized)."""
    for g in range(history.shape[0]):
        for t in range(min(last_irreversible[g], turn[g]), turn[g] + 1):
            record_seen(seen_keys, seen_counts, g, history[g, t])


@kernel
def repetition_winner(start_side, history, turn, key, g, mode):
    """Who wins game ``g``, whose position ``Qk`` (k = turn) just occurred for the third time.

    Let j be the turn of its second occurrence and p = k - j. The repetition began at the first
    turn s from which every position recurs p turns later; the side that made turn s began it and
    loses (§3.9: that side moves in Q(s-1)), or it is a draw where the rules say so.
    """
    if mode == REPETITION_DRAW:
        return DRAW
    k = turn[g]
    seen = 0
    j = 0
    for t in range(k + 1):
        if history[g, t] == key[g]:
            seen += 1
            if seen == 2:
                j = t
                break
    p = k - j
    last_broken = 0
    for i in range(1, j + 1):
        if history[g, i - 1] != history[g, i - 1 + p]:
            last_broken = i
    starter = start_side[g] ^ (last_broken & 1)   # the side to move in Q(s-1), s = last_broken + 1
    return 1 - starter


@leaf
def end_turn(board, to_move, start_side, king_sq, chain, turn, key, history, last_irreversible,
             seen_keys, seen_counts, repeats, lines, occupancy, pieces, moves, winner, reason,
             tb, g):
    """Hand the move over in game ``g`` and judge repetition, no legal move and the move cap;
    returns the number of legal actions of the side to move (0 once the game is over).

    The caller guarantees room in the history for one more turn. Finished games (this move won)
    record the position too, so that every game's history ends with its last position.
    """
    chain[g] = -1
    turn[g] += 1
    to_move[g] ^= 1
    key[g] ^= np.uint64(tb.params[P_SIDE_KEY])
    t = turn[g]
    history[g, t] = key[g]
    if last_irreversible[g] == t:   # a capture: no earlier position can recur
        seen_counts[g, :] = 0
    count = record_seen(seen_keys, seen_counts, g, key[g])
    if reason[g] != RUNNING:
        repeats[g] = 1
        return 0
    repeats[g] = count
    mode = tb.params[P_REPETITION]
    if count >= 3 and mode != REPETITION_IGNORE:
        finish(winner, reason, moves, g, repetition_winner(start_side, history, turn, key, g, mode),
               REPETITION)
        return 0
    total = generate_moves(board, to_move, lines, pieces, moves, tb, g)
    if total == 0:
        finish(winner, reason, moves, g, 1 - to_move[g], NO_MOVES)
        return 0
    max_turns = tb.params[P_MAX_TURNS]
    if max_turns > 0 and t >= max_turns:
        finish(winner, reason, moves, g, DRAW, TRUNCATED)
        return 0
    return total


@helper
def judge_fresh(to_move, chain, lines, board, pieces, moves, winner, reason, tb, g):
    """Generate the moves of a fresh game ``g`` and end it if the side to move has none."""
    chain[g] = -1
    if not generate_moves(board, to_move, lines, pieces, moves, tb, g):
        finish(winner, reason, moves, g, 1 - to_move[g], NO_MOVES)

