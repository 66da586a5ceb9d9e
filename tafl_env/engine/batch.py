"""The batched kernels: one call runs a per-game kernel over a range of games of a State.

They take the State as its one buffer (``State.buffer``) and the engine's tables likewise
(``Engine.packed_tables``) and rebuild the arrays inside (:mod:`.layout`): numba checks every
argument of a call, about 0.1 µs an array, which at B = 1 cost more than the move.

The kernels that a big batch calls (step, random rollouts, masks) work on the games ``lo ..
hi-1``: the engine spreads a batch of thousands over several threads by calling the same kernel
on separate ranges from Python threads (the kernels release the GIL; :func:`._jit.run_threaded`).
One build of every kernel serves one game and a thread's share of thousands.

The step checks the whole batch before it changes anything: an illegal action, or a history
with no room for one more turn, returns early with the state untouched, so the caller can raise
an error (or grow the history) and never sees a half-applied step.
"""

from __future__ import annotations

import numpy as np

from ._jit import helper, kernel, leaf
from .layout import I_CHAIN, I_MOVES, I_PIECES, I_REASON, I_TO_MOVE, state_views, table_views
from .movegen import count_moves, random_move, random_move_of, write_mask
from .state import RUNNING
from .step import (INFO_CONTINUATION, INFO_JUMP, INFO_TURN_ENDED, INFO_WIDTH, NEED_ROOM, OK,
                   SCRATCH, action_slot, next_random, step_game)
from .tables import P_S
from .turns import judge_fresh, record_seen


@leaf
def _mask_views(buf):
    """The five arrays move listing reads: to_move, chain, pieces, moves, reason."""
    v = state_views(buf)
    return v[I_TO_MOVE], v[I_CHAIN], v[I_PIECES], v[I_MOVES], v[I_REASON]


@kernel
def start_games(buf, tbuf):
    """Record the first position of fresh games, generate their moves, and end those whose side
    to move has none."""
    (board, to_move, start_side, king_sq, chain, turn, key, history, last_irreversible, seen_keys,
     seen_counts, repeats, lines, occupancy, pieces, moves, winner, reason) = state_views(buf)
    tb = table_views(tbuf)
    for g in range(len(key)):
        record_seen(seen_keys, seen_counts, g, key[g])
        judge_fresh(to_move, chain, lines, board, pieces, moves, winner, reason, tb, g)


@kernel
def masks(buf, out, rows, tbuf, lo, hi):
    """The legal masks of games ``lo .. hi-1``, game g's into row ``rows[g]`` of ``out``."""
    to_move, chain, pieces, moves, _ = _mask_views(buf)
    tb = table_views(tbuf)
    for g in range(lo, hi):
        write_mask(to_move, chain, pieces, moves, tb, g, out, rows[g])


@kernel
def counts(buf, out):
    _, chain, _, moves, _ = _mask_views(buf)
    for g in range(len(chain)):
        out[g] = count_moves(moves, chain, g)


@kernel
def random_actions(buf, uniforms, out, tbuf):
    to_move, chain, pieces, moves, _ = _mask_views(buf)
    tb = table_views(tbuf)
    for g in range(len(out)):
        out[g] = random_move(to_move, chain, pieces, moves, tb, g, uniforms[g])[0]


@kernel
def legal(buf, actions, out, tbuf):
    to_move, chain, pieces, moves, reason = _mask_views(buf)
    tb = table_views(tbuf)
    for g in range(len(out)):
        out[g] = action_slot(to_move, chain, pieces, moves, reason, tb, g, actions[g]) != -1


@helper
def _check(to_move, chain, turn, history, pieces, moves, reason, tb, actions, slots, lo, hi):
    """Find the slot of the action of every running game ``lo .. hi-1`` (``slots[g - lo]``);
    returns ``OK``, the first game whose action is illegal, or ``NEED_ROOM`` when some history
    is full."""
    room = True
    for g in range(lo, hi):
        slots[g - lo] = -1
        if reason[g] != RUNNING:
            continue
        slot = action_slot(to_move, chain, pieces, moves, reason, tb, g, actions[g])
        if slot == -1:
            return g
        slots[g - lo] = slot
        if turn[g] + 1 >= history.shape[1]:
            room = False
    return OK if room else NEED_ROOM


@kernel
def step(buf, actions, info, work, tbuf, lo, hi, apply):
    """Check the actions of games ``lo .. hi-1``, then, if ``apply`` and all are legal, play them;
    returns ``OK`` or why nothing was applied. ``work``: int64 work array of at least
    ``hi - lo + SCRATCH`` entries (the action slots, then the step's scratch: one argument,
    since each costs the call ~0.1 µs)."""
    (board, to_move, start_side, king_sq, chain, turn, key, history, last_irreversible, seen_keys,
     seen_counts, repeats, lines, occupancy, pieces, moves, winner, reason) = state_views(buf)
    tb = table_views(tbuf)
    slots, scratch = work[:hi - lo], work[hi - lo:]
    code = _check(to_move, chain, turn, history, pieces, moves, reason, tb, actions, slots, lo, hi)
    if code != OK or not apply:
        return code
    for g in range(lo, hi):
        slot = slots[g - lo]
        if slot == -1:   # a finished game
            for c in range(6):
                info[g, c] = tb.params[P_S]
            info[g, INFO_JUMP] = 0
            info[g, INFO_CONTINUATION] = 0
            info[g, INFO_TURN_ENDED] = 0
            continue
        step_game(board, to_move, start_side, king_sq, chain, turn, key, history,
                  last_irreversible, seen_keys, seen_counts, repeats, lines, occupancy, pieces,
                  moves, winner, reason, tb, g, actions[g], slot, info[g], scratch)
    return OK


@helper
def _play_row(board, to_move, start_side, king_sq, chain, turn, key, history, last_irreversible,
              seen_keys, seen_counts, repeats, lines, occupancy, pieces, moves, winner, reason,
              tb, rng, max_steps, played, g, info, scratch):
    if rng[g] == 0:   # xorshift stays at 0: any other fixed seed will do
        rng[g] = np.uint64(0x9E3779B97F4A7C15)
    total = count_moves(moves, chain, g)
    while played[g] < max_steps and reason[g] == RUNNING and turn[g] + 1 < history.shape[1]:
        a, slot = random_move_of(to_move, chain, pieces, moves, tb, g, next_random(rng, g), total)
        total = step_game(board, to_move, start_side, king_sq, chain, turn, key, history,
                  last_irreversible, seen_keys, seen_counts, repeats, lines, occupancy, pieces,
                  moves, winner, reason, tb, g, a, slot, info, scratch)
        played[g] += 1


@kernel
def play_random(buf, rng, max_steps, played, work, tbuf, lo, hi):
    """Random legal actions in every game ``lo .. hi-1`` until it ends, ``played[g]`` reaches
    ``max_steps`` or its history is full; returns whether some game stopped for room (grow it and
    call again). ``work``: int64 work array of ``INFO_WIDTH + SCRATCH`` entries (a step's info,
    then its scratch)."""
    (board, to_move, start_side, king_sq, chain, turn, key, history, last_irreversible, seen_keys,
     seen_counts, repeats, lines, occupancy, pieces, moves, winner, reason) = state_views(buf)
    tb = table_views(tbuf)
    info, scratch = work[:INFO_WIDTH], work[INFO_WIDTH:]
    full = False
    for g in range(lo, hi):
        _play_row(board, to_move, start_side, king_sq, chain, turn, key, history,
                  last_irreversible, seen_keys, seen_counts, repeats, lines, occupancy, pieces,
                  moves, winner, reason, tb, rng, max_steps, played, g, info, scratch)
        if played[g] < max_steps and reason[g] == RUNNING:
            full = True
    return full
