"""Captures and the wins they bring, compiled: custodial capture, the king's capture,
encirclement and the berserk chain's continuations (RULES.md §3.3-§3.7, §5).

These functions read only the board (and the king's square), so the step uses them for the move
it makes and the chain rule uses them for moves it only considers: it plays the move on the board,
asks, and puts the board back.
"""

from __future__ import annotations

import numpy as np

from ..notation import COMMANDER, EMPTY, KING, KNIGHT
from ._jit import helper, leaf
from .movegen import bits_through_highest, piece_moves
from .tables import (F_ALWAYS_HOSTILE, F_CORNER, F_KING_HOSTILE, F_THRONE, IS_ATTACKER,
                     OPPOSITE, P_COMMANDER_ON_THRONE, P_COMMANDER_SANDWICH, P_ENCIRCLEMENT,
                     P_FULL_ROW, P_N, P_S, P_THRONE, P_THRONE_HOSTILE, P_TABLUT_KING)


@leaf
def custodial_captures(board, tb, g, piece, to, out):
    """Custodial captures (§3.3-§3.5) by ``piece`` that just landed on ``to``: ``out[d]`` is the
    captured square in direction d (north, east, south, west), or S; returns how many."""
    s = tb.params[P_S]
    throne_hostile = tb.params[P_THRONE_HOSTILE] != 0
    count = 0
    for d in range(4):
        n1 = tb.nbr[to, d]
        n2 = tb.nbr[to, 4 + d]
        p1 = board[g, n1]
        p2 = board[g, n2]
        out[d] = s
        if tb.capture[0, piece, p1] == 0:
            continue
        f2 = tb.flags[n2]
        if (tb.capture[1, piece, p2] != 0 or (f2 & F_ALWAYS_HOSTILE) != 0
                or (throne_hostile and p2 == EMPTY and (f2 & F_THRONE) != 0)):
            out[d] = n1
            count += 1
    return count


@leaf
def _hostile_to_king(board, tb, g, sq, king_four_sided):
    """Whether square ``sq`` closes in the king: an attacker, a hostile square, the empty throne
    where the throne is hostile; with ``king_four_sided`` the edge where it counts."""
    p = board[g, sq]
    f = tb.flags[sq]
    if IS_ATTACKER[p]:
        return True
    if (f & (F_KING_HOSTILE if king_four_sided else F_ALWAYS_HOSTILE)) != 0:
        return True
    return tb.params[P_THRONE_HOSTILE] != 0 and (f & F_THRONE) != 0 and p == EMPTY


@leaf
def king_captured(board, tb, g, piece, to, side, king):
    """Whether the attackers' move of ``piece`` to ``to`` captures the king on ``king`` (§3.6,
    the Tablut rule of §3.6 where set, and the commander sandwich of §5)."""
    s = tb.params[P_S]
    if side != 0 or king == s:
        return False
    mover_dir = -1
    for d in range(4):
        if tb.nbr[king, d] == to:
            mover_dir = d
            break
    if mover_dir < 0:
        return False
    throne = tb.params[P_THRONE]
    surrounded = True
    near_throne = king == throne
    for d in range(4):
        q = tb.nbr[king, d]
        if not _hostile_to_king(board, tb, g, q, True):
            surrounded = False
        if (tb.flags[q] & F_THRONE) != 0:
            near_throne = True
    opp = tb.nbr[king, OPPOSITE[mover_dir]]
    captured = surrounded
    if tb.params[P_TABLUT_KING] != 0 and not near_throne:
        captured = _hostile_to_king(board, tb, g, opp, False)
    if tb.params[P_COMMANDER_SANDWICH] != 0 and piece == COMMANDER:
        if board[g, opp] == COMMANDER or (tb.flags[opp] & F_CORNER) != 0:
            if tb.params[P_COMMANDER_ON_THRONE] != 0 or king != throne:
                captured = True
    return captured


@leaf
def encircled(occupancy, tb, g, reach, grown):
    """No defender can reach the edge through squares free of attackers (§3.7).

    A flood fill over ranks as N-bit ints from the open edge squares, stopped as soon as it
    touches a defender (not encircled) or stops growing (encircled). ``reach`` and ``grown`` are
    int64 work arrays of at least N entries.

    First the usual case, a few operations a rank: a defender with no attacker between it and
    the edge along its rank (the fill would reach it in a straight line) is not enclosed."""
    if tb.params[P_ENCIRCLEMENT] == 0:
        return False
    n = tb.params[P_N]
    full = tb.params[P_FULL_ROW]
    for r in range(n):
        attackers = np.int64(occupancy[g, 0, r])
        west = (attackers & -attackers) - 1        # files west of the first attacker (all: none)
        east = ~bits_through_highest(attackers) & full   # files east of the last attacker
        if np.int64(occupancy[g, 1, r]) & (west | east):
            return False
    for r in range(n):
        reach[r] = ~np.int64(occupancy[g, 0, r]) & full & tb.edge_rows[r]
        if reach[r] & occupancy[g, 1, r]:
            return False
    while True:
        changed = False
        for r in range(n):
            x = reach[r] | (reach[r] << 1) | (reach[r] >> 1)
            if r > 0:
                x |= reach[r - 1]
            if r < n - 1:
                x |= reach[r + 1]
            grown[r] = x & ~np.int64(occupancy[g, 0, r]) & full
        for r in range(n):
            if grown[r] != reach[r]:
                changed = True
                reach[r] = grown[r]
            if reach[r] & occupancy[g, 1, r]:
                return False
        if not changed:
            return True


@helper
def move_captures(board, tb, g, piece, side, origin, d, k, king, scratch):
    """Whether moving ``piece`` from ``origin`` k squares in direction d would capture (a
    custodial capture, the knight's jump or the king's capture; or bring the king into a corner,
    RULES §5.5: a corner, not any escape square, so that under edge escape a king's continuation
    to the edge still needs a capture): the move is played on the board, judged, and taken back.
    The chain rule asks it of continuations; greedy's threat check asks it of whole replies in
    Berserk, where only a capturing reply can open a chain. ``scratch``: 4 int64 entries."""
    land = tb.dest[origin, d, k - 1]
    if k == 2 and piece == KNIGHT and board[g, tb.nbr[origin, d]] != EMPTY:
        return True   # the knight's jump always takes the jumped soldier
    board[g, origin] = EMPTY
    board[g, land] = piece
    good = custodial_captures(board, tb, g, piece, land, scratch) > 0
    if not good and piece == KING and (tb.flags[land] & F_CORNER) != 0:
        good = True
    if not good:
        good = king_captured(board, tb, g, piece, land, side, king)
    board[g, land] = EMPTY
    board[g, origin] = piece
    return good


@helper
def chain_moves(board, lines, tb, g, side, square, king, out, scratch):
    """The berserk continuations (§5, §6.2) of the piece on ``square``: its moves that capture,
    or bring the king into a corner, packed into ``out[0:4]``; returns whether any.
    ``scratch`` is an int64 work array of 4 entries."""
    piece = board[g, square]
    piece_moves(board, lines, tb, g, side, square, out)
    found = False
    for d in range(4):
        x = np.int64(out[d])
        keep = 0
        k = 1
        while x:
            if x & 1 and move_captures(board, tb, g, piece, side, square, d, k, king, scratch):
                keep |= 1 << (k - 1)
            x >>= 1
            k += 1
        out[d] = keep
        if keep:
            found = True
    return found
