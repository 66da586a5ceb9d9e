"""Applying an action to one game, compiled: the move (slide or jump), captures, the king,
escape, encirclement, berserk chains and the turn's end (RULES.md §3, §5, §6). The batched
kernels in :mod:`.batch` run it over many games."""

from __future__ import annotations

import numpy as np

from ..notation import EMPTY, KING, KNIGHT
from ._jit import inlined, leaf
from .captures import chain_moves, custodial_captures, encircled, king_captured
from .movegen import PASS_SLOT, find_slot, popcount
from .state import (ATTACKER_WINS, DEFENDER_WINS, ENCIRCLED, ESCAPED, KING_CAPTURED, RUNNING)
from .tables import F_ESCAPE, P_BERSERK, P_JUMPS, P_K, P_N, P_NUM_ACTIONS, P_PASS, P_S
from .turns import end_turn, finish

# Columns of the step's info buffer (StepInfo): the six captured squares, then three flags.
INFO_JUMP, INFO_CONTINUATION, INFO_TURN_ENDED, INFO_WIDTH = 6, 7, 8, 9
SCRATCH = 64   # entries of step_game's int64 work array (captures, chains, encirclement rows)
OK, NEED_ROOM = -1, -2   # batched kernels' return codes; >= 0 is the first illegal game


@leaf
def action_slot(to_move, chain, pieces, moves, reason, tb, g, a):
    """The slot of the piece that legal action ``a`` moves in game ``g``, ``PASS_SLOT`` for a
    legal pass, -1 if ``a`` is not legal (finished games: never)."""
    if reason[g] != RUNNING or a < 0 or a >= tb.params[P_NUM_ACTIONS]:
        return -1
    if a == tb.params[P_PASS]:
        return PASS_SLOT if chain[g] >= 0 else -1
    k = tb.params[P_K]
    origin = a // (4 * k)
    d = (a // k) % 4
    slot = find_slot(pieces, g, to_move[g], origin)
    if slot < 0 or (np.int64(moves[g, slot, d]) >> (a % k)) & 1 == 0:
        return -1
    return slot


@leaf
def _toggle(lines, occupancy, tb, g, sq, side):
    """Flip the line and occupancy bits of ``sq``, which just emptied or filled (``side``'s piece)."""
    for j in range(4):
        lines[g, tb.line[sq, 8 + j]] ^= np.uint32(tb.line[sq, 12 + j])
    n = tb.params[P_N]
    occupancy[g, side, sq // n] ^= np.uint32(1 << (sq % n))


@leaf
def _remove(board, key, lines, occupancy, pieces, tb, g, sq, side):
    """Take the piece of ``side`` on ``sq`` off the board (a capture)."""
    key[g] ^= tb.zobrist[board[g, sq], sq]
    board[g, sq] = EMPTY
    pieces[g, side, find_slot(pieces, g, side, sq)] = tb.params[P_S]
    _toggle(lines, occupancy, tb, g, sq, side)


@inlined
def step_game(board, to_move, start_side, king_sq, chain, turn, key, history, last_irreversible,
              seen_keys, seen_counts, repeats, lines, occupancy, pieces, moves, winner, reason,
              tb, g, a, slot, info, scratch):
    """Play the legal action ``a`` (moving the piece in ``slot``) in running game ``g``.

    ``info`` (a row of ``INFO_WIDTH``) receives the captured squares and the flags (see
    ``INFO_*``); ``scratch`` is an int64 work array of ``SCRATCH`` entries. Returns the number of
    legal actions in the game afterwards (0 once it is over), which a rollout needs next.
    """
    s = tb.params[P_S]
    for c in range(6):
        info[c] = s
    info[INFO_JUMP] = 0
    info[INFO_CONTINUATION] = chain[g] >= 0
    info[INFO_TURN_ENDED] = 1
    if slot == PASS_SLOT:
        return end_turn(board, to_move, start_side, king_sq, chain, turn, key, history,
                        last_irreversible, seen_keys, seen_counts, repeats, lines, occupancy,
                        pieces, moves, winner, reason, tb, g)
    k = tb.params[P_K]
    origin = a // (4 * k)
    d = (a // k) % 4
    dist = a % k + 1
    to = tb.dest[origin, d, dist - 1]
    side = to_move[g]
    enemy = 1 - side
    piece = board[g, origin]
    board[g, origin] = EMPTY
    board[g, to] = piece
    pieces[g, side, slot] = to
    _toggle(lines, occupancy, tb, g, origin, side)
    _toggle(lines, occupancy, tb, g, to, side)
    key[g] ^= tb.zobrist[piece, origin] ^ tb.zobrist[piece, to]
    captured_any = False

    if tb.params[P_JUMPS] != 0 and dist == 2:
        mid = tb.nbr[origin, d]
        if board[g, mid] != EMPTY:
            info[INFO_JUMP] = 1
            if piece == KNIGHT:   # the knight's jump always takes the jumped soldier (§5)
                _remove(board, key, lines, occupancy, pieces, tb, g, mid, enemy)
                info[0] = mid
                captured_any = True

    victims = scratch[0:4]
    if custodial_captures(board, tb, g, piece, to, victims):
        for c in range(4):
            victim = victims[c]
            if victim != s:
                _remove(board, key, lines, occupancy, pieces, tb, g, victim, enemy)
                info[1 + c] = victim
        captured_any = True

    escaped = False
    if piece == KING:
        king_sq[g] = to
        escaped = (tb.flags[to] & F_ESCAPE) != 0
    king = king_sq[g]
    if king_captured(board, tb, g, piece, to, side, king):
        _remove(board, key, lines, occupancy, pieces, tb, g, king, 1)
        info[5] = king
        king_sq[g] = s
        captured_any = True
        finish(winner, reason, moves, g, ATTACKER_WINS, KING_CAPTURED)
    if escaped:
        finish(winner, reason, moves, g, DEFENDER_WINS, ESCAPED)
    if side == 0 and reason[g] == RUNNING and encircled(occupancy, tb, g, scratch[16:40],
                                                        scratch[40:64]):
        finish(winner, reason, moves, g, ATTACKER_WINS, ENCIRCLED)

    if captured_any:
        last_irreversible[g] = turn[g] + 1
        if tb.params[P_BERSERK] != 0 and reason[g] == RUNNING:
            continuations = scratch[4:8]
            if chain_moves(board, lines, tb, g, side, to, king_sq[g], continuations, scratch[8:12]):
                moves[g, :, :] = 0
                total = 1   # pass
                for c in range(4):
                    moves[g, slot, c] = continuations[c]
                    total += popcount(continuations[c])
                chain[g] = to
                info[INFO_TURN_ENDED] = 0
                return total
    return end_turn(board, to_move, start_side, king_sq, chain, turn, key, history,
                    last_irreversible, seen_keys, seen_counts, repeats, lines, occupancy, pieces,
                    moves, winner, reason, tb, g)


@leaf
def next_random(rng, g):
    """xorshift64* step of game ``g``'s generator; a float uniform in [0, 1)."""
    x = rng[g]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    rng[g] = x
    return np.float64((x * np.uint64(2685821657736338717)) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


