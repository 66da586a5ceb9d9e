"""The greedy agent's scoring of one node, compiled (agents/greedy/agent.py documents the order of
preference and the evaluation; this module is its implementation).

A node is a row ``p`` of a work State; the rows after it are the search's scratch: ``p+1`` holds
each child in turn, ``p+2`` the opponent's reply being checked, ``p+3 ...`` the plies of a berserk
chain that reply opens. The opponent check is exact: the replies that may win are singled out by
sound filters (below) and played through the engine's own step, which judges them with every
rule; chains they open are searched to their end.

Filters, per child (the opponent ``o`` to move, the mover ``m``):

* escape: the king's own packed moves against the escape masks (exact, no step);
* king capture: only replies landing next to the king (found by scanning rays from the king's
  empty neighbours); the capture is judged on the board with the move made (the engine's
  ``king_captured``), and played through the step where a defender on the hostile throne next to
  the king might fall first;
* no legal move left to ``m``: with ``F`` = the ``m`` pieces that have two free step squares, a
  reply fills one square and captures at most 5 pieces outside Berserk: ``F >= 6`` is safe, else
  the replies that may capture are played (all replies where ``F == 0``);
* repetition (``starter_loses``): the key after a quiet reply is computed and looked up in the
  child's repetition table; a reply reaching a position seen twice is played (exact: a capture
  makes a repetition impossible);
* encirclement: the articulation filter of the Python agent (non-simple squares ``Ns``, the flood
  ``R`` that avoids them, two defenders in ``R`` more than 2 apart: no single move encircles),
  then a flood per candidate target, then the step;
* Berserk: no attackers' turn can win while fewer than three of the king's neighbours are
  attackers or special squares, none is a commander or a corner, and he has two free step squares
  (``_king_holds``). Otherwise the replies landing where a capture is possible (next to a piece
  of ``m`` with an anvil beyond, or next to the king) are judged on the board (the engine's
  ``move_captures``), and only the capturing ones are played and their chains searched: a reply
  that captures nothing opens no chain, and it fills one square (``F >= 1`` keeps ``m`` a move).
"""

from __future__ import annotations

import numpy as np

from tafl_env.engine._jit import helper, inlined, kernel, leaf
from tafl_env.engine.captures import king_captured, move_captures
from tafl_env.engine.layout import state_views, table_views
from tafl_env.engine.movegen import bits_through_highest, find_slot, lowest_bit, popcount
from tafl_env.engine.state import RUNNING
from tafl_env.engine.step import next_random
from tafl_env.engine.tables import (F_CORNER, F_THRONE, IS_ATTACKER, OPPOSITE, P_BERSERK,
                                    P_ENCIRCLEMENT, P_FULL_ROW, P_TABLUT_KING,
                                    P_K, P_N, P_PASS, P_REPETITION, P_S, P_SIDE_KEY,
                                    P_THRONE_HOSTILE, SIDE_OF)
from tafl_env.notation import COMMANDER, EMPTY, KING

from tafl_env.engine.rows import (I_BOARD, I_CHAIN, I_KEY, I_KING, I_MOVES, I_OCC, I_PIECES, I_REASON,
                   I_REPEATS, I_SEENC, I_TO_MOVE, I_WINNER, copy_full, copy_light, copy_seen,
                   list_actions, restore_seen, seen_count, step_row)
from .scoring import LOSS, NO_KING_E, UNSAFE, W_CAPTURE, WIN

RING_DR = np.array([1, 1, 0, -1, -1, -1, 0, 1])
RING_DF = np.array([0, 1, 1, 1, 0, -1, -1, -1])
RW_A, RW_D, RW_NS, RW_R, RW_OPEN, RW_DEF2, RW_CAPTURE, RW_ROWS = range(8)
# rows of the work array ``rw`` (one int64 of file bits per rank): the encirclement filter's, and
# RW_CAPTURE: the squares where a landing piece might capture (Berserk's threat check)


@leaf
def count_pieces(S, tb, g, side):
    s = tb.params[P_S]
    pieces = S[I_PIECES]
    n = 0
    for i in range(pieces.shape[2]):
        if pieces[g, side, i] != s:
            n += 1
    return n


@leaf
def _king_rays(S, tb, g, sq, d):
    """Distance bits the king on (or moving from) ``sq`` slides to in direction d (no jumps)."""
    x = np.int64(S[12][g, tb.line[sq, d]]) >> tb.line[sq, 4 + d]
    x &= ~(x + 1)
    return x & tb.allowed[1, KING, sq, d]


@inlined
def evaluate(S, tb, at, g, stamp, gen):
    """E of row ``g`` from the defenders' side (agents/greedy/agent.py, (d))."""
    s = tb.params[P_S]
    ks = S[I_KING][g]
    nd = count_pieces(S, tb, g, 1)
    na = count_pieces(S, tb, g, 0)
    if ks == s:
        return NO_KING_E
    gen[0] += 1
    mark = 2 * gen[0]
    esc1 = 0
    esc2 = 0
    for d in range(4):
        e = _king_rays(S, tb, g, ks, d) & at.esc_mask[ks, d]
        esc1 += popcount(e)
        while e:
            stamp[tb.dest[ks, d, lowest_bit(e)]] = mark
            e &= e - 1
    for d in range(4):
        x = _king_rays(S, tb, g, ks, d)
        while x:
            q = tb.dest[ks, d, lowest_bit(x)]
            x &= x - 1
            for h in range(3):   # not back towards the king: those squares are in r1
                d2 = (d + 3 + h) % 4
                e = _king_rays(S, tb, g, q, d2) & at.esc_mask[q, d2]
                while e:
                    t = tb.dest[q, d2, lowest_bit(e)]
                    e &= e - 1
                    if stamp[t] < mark:
                        stamp[t] = mark + 1
                        esc2 += 1
    adj = 0
    board = S[I_BOARD]
    for j in range(4):
        if SIDE_OF[board[g, tb.nbr[ks, j]]] == 0:
            adj += 1
    w = at.weights
    return (w[0] * esc1 + w[1] * esc2 - w[2] * at.escape_dist[ks] - w[3] * adj + w[4] * nd
            - w[5] * na)


# --- encirclement ------------------------------------------------------------------------------
@leaf
def _flood(rw, seed_row, open_row, n, full, edge_rows, stop_row):
    """Flood rw[seed_row] (seeded from the open edge squares) through rw[open_row]; returns
    whether it reached a square of rw[stop_row] (it stops there)."""
    for r in range(n):
        rw[seed_row, r] = edge_rows[r] & rw[open_row, r]
        if rw[seed_row, r] & rw[stop_row, r]:
            return True
    changed = True
    while changed:
        changed = False
        for r in range(n):
            x = rw[seed_row, r]
            y = x | (x << 1) | (x >> 1)
            if r > 0:
                y |= rw[seed_row, r - 1]
            if r < n - 1:
                y |= rw[seed_row, r + 1]
            y &= rw[open_row, r] & full
            if y != x:
                changed = True
                rw[seed_row, r] = y
                if y & rw[stop_row, r]:
                    return True
    return False


@helper
def enc_prefilter(S, tb, at, c, rw):
    """Attackers to move in row ``c``: 0 no single move can encircle, 1 the moves to a square of
    ``Ns`` (left in rw[RW_NS]) or next to a defender must be checked, 2 every move must be."""
    n = tb.params[P_N]
    full = tb.params[P_FULL_ROW]
    occ = S[I_OCC]
    # Shortcut: a ray along a rank from a defender to the edge with no attacker on it keeps that
    # defender in reach of the edge unless the move lands on the ray or next to the defender
    # (capturing it). Two rays whose squares and defenders' neighbours share nothing cannot both
    # be closed by one move (one landing square): rays 3 or more ranks apart, or in one rank the
    # first defender's ray west and the last one's east with the two 3 or more files apart.
    low, high = n, -1
    for r in range(n):
        attackers = np.int64(occ[c, 0, r])
        defenders = np.int64(occ[c, 1, r])
        if defenders == 0:
            continue
        first = defenders & -defenders
        upto = bits_through_highest(defenders)   # files up to the last defender
        west = attackers & (first - 1) == 0
        east = attackers & ~upto & full == 0
        if west and east and popcount(upto) - popcount(first - 1) >= 4:
            return 0                             # last file - first file >= 3
        if west or east:
            low, high = min(low, r), max(high, r)
            if high - low >= 3:
                return 0
    for r in range(n):
        rw[RW_A, r] = occ[c, 0, r]
        rw[RW_D, r] = occ[c, 1, r]
        rw[RW_NS, r] = 0
    for r in range(n):
        near = rw[RW_A, r]
        if r > 0:
            near |= rw[RW_A, r - 1]
        if r < n - 1:
            near |= rw[RW_A, r + 1]
        if near == 0:
            continue
        filled = rw[RW_A, r] | rw[RW_D, r]
        for f in range(n):
            if (filled >> f) & 1 or (((near << 1) >> f) & 7) == 0:
                continue
            p = 0
            for i in range(8):
                rr = r + RING_DR[i]
                ff = f + RING_DF[i]
                if rr < 0 or rr >= n or ff < 0 or ff >= n or ((rw[RW_A, rr] >> ff) & 1) == 0:
                    p |= 1 << i
            if at.simple[p] == 0:
                rw[RW_NS, r] |= np.int64(1) << f
    for r in range(n):
        rw[RW_OPEN, r] = ~rw[RW_A, r] & ~rw[RW_NS, r] & full
    _flood(rw, RW_R, RW_OPEN, n, full, tb.edge_rows, RW_NS)   # stop row: never reached (closed)
    # defenders reached by R: their spread in u = r+f and v = r-f
    umin, umax, vmin, vmax = 1 << 20, -(1 << 20), 1 << 20, -(1 << 20)
    hits = 0
    for r in range(n):
        x = rw[RW_R, r] & rw[RW_D, r]
        while x:
            f = lowest_bit(x)
            x &= x - 1
            hits += 1
            umin, umax = min(umin, r + f), max(umax, r + f)
            vmin, vmax = min(vmin, r - f), max(vmax, r - f)
    if hits:
        return 0 if max(umax - umin, vmax - vmin) > 2 else 1
    for r in range(n):
        rw[RW_OPEN, r] = ~rw[RW_A, r] & full
    if not _flood(rw, RW_R, RW_OPEN, n, full, tb.edge_rows, RW_D):
        return 2   # encircled already (no defender reaches the edge): check everything
    return 1


@helper
def may_encircle(tb, rw, to):
    """After enc_prefilter: with ``to`` closed (the origin kept closed, which only shrinks the
    reach), does no defender other than those next to ``to`` stay reachable from the edge?"""
    n = tb.params[P_N]
    full = tb.params[P_FULL_ROW]
    tr, tf = to // n, to % n
    for r in range(n):
        rw[RW_OPEN, r] = ~rw[RW_A, r] & full
        rw[RW_DEF2, r] = rw[RW_D, r]
    rw[RW_OPEN, tr] &= ~(np.int64(1) << tf)
    rw[RW_DEF2, tr] &= ~((np.int64(1) << tf) | (np.int64(1) << (tf + 1)) | ((np.int64(1) << tf) >> 1))
    if tr > 0:
        rw[RW_DEF2, tr - 1] &= ~(np.int64(1) << tf)
    if tr < n - 1:
        rw[RW_DEF2, tr + 1] &= ~(np.int64(1) << tf)
    return not _flood(rw, RW_R, RW_OPEN, n, full, tb.edge_rows, RW_DEF2)


# --- the opponent's replies --------------------------------------------------------------------
@helper
def chain_wins(S, tb, base, o, info, scratch, cacts, ccnt, cidx):
    """Row ``base`` has a berserk chain of ``o`` pending: can some continuation sequence (pass
    included) win for ``o``? A depth-first search on rows base+1 ...; the rows' repetition tables
    are not kept (a chain follows a capture, which clears them)."""
    nrows = S[I_BOARD].shape[0]
    ply = 0
    ccnt[0] = list_actions(S, tb, base, cacts[0])
    cidx[0] = 0
    while ply >= 0:
        if cidx[ply] == ccnt[ply]:
            ply -= 1
            continue
        a = cacts[ply, cidx[ply]]
        cidx[ply] += 1
        src = base + ply
        dst = src + 1
        copy_light(S, src, dst)
        step_row(S, tb, dst, a, info, scratch)
        if S[I_WINNER][dst] == o:
            return True
        if (S[I_CHAIN][dst] >= 0 and S[I_REASON][dst] == RUNNING and ply + 1 < cacts.shape[0]
                and dst + 1 < nrows):
            ply += 1
            ccnt[ply] = list_actions(S, tb, dst, cacts[ply])
            cidx[ply] = 0
    return False


@helper
def reply_wins(S, tb, c, r, a, o, info, scratch, cacts, ccnt, cidx):
    """Play ``o``'s reply ``a`` from row ``c`` in row ``r`` (whose tables equal ``c``'s): does it
    win at once (its chains searched to the end)?"""
    copy_light(S, c, r)
    step_row(S, tb, r, a, info, scratch)
    won = S[I_WINNER][r] == o
    if not won and S[I_CHAIN][r] >= 0 and S[I_REASON][r] == RUNNING:
        won = chain_wins(S, tb, r, o, info, scratch, cacts, ccnt, cidx)
    restore_seen(S, c, r)
    return won


@leaf
def _king_precheck(S, tb, c, origin, to, piece, ks):
    """An attackers' move landing next to the king: 1 it captures him, 0 it does not, 2 only the
    step can say (a defender on the hostile throne beside the king might be captured first)."""
    board = S[I_BOARD]
    board[c, origin] = EMPTY
    board[c, to] = piece
    cap = king_captured(board, tb, c, piece, to, 0, ks)
    board[c, to] = EMPTY
    board[c, origin] = piece
    if cap:
        return 1
    if tb.params[P_THRONE_HOSTILE] != 0:
        for j in range(4):
            q = tb.nbr[ks, j]
            if (tb.flags[q] & F_THRONE) != 0 and SIDE_OF[board[c, q]] == 1:
                return 2
    return 0


@helper
def _king_capture_replies(S, tb, c, r, info, scratch, cacts, ccnt, cidx, synced):
    """Attackers to move in row ``c`` (no Berserk): does a move landing next to the king capture
    him? Candidates come from rays cast from the king's empty neighbours."""
    s = tb.params[P_S]
    kk = tb.params[P_K]
    board, pieces, moves = S[I_BOARD], S[I_PIECES], S[I_MOVES]
    ks = S[I_KING][c]
    for j in range(4):
        t = tb.nbr[ks, j]
        if board[c, t] != EMPTY:
            continue
        for d2 in range(4):
            od = OPPOSITE[d2]
            for k in range(kk):
                q = tb.dest[t, d2, k]
                if q == s:
                    break
                code = board[c, q]
                if code == EMPTY:
                    continue
                for cand in range(2):
                    src, dist = (q, k) if cand == 0 else (tb.dest[t, d2, 1], 1)
                    if cand == 1 and (k != 0 or src == s or tb.jumper[board[c, src]] == 0):
                        break
                    if SIDE_OF[board[c, src]] != 0:
                        continue
                    slot = find_slot(pieces, c, 0, src)
                    if ((np.int64(moves[c, slot, od]) >> dist) & 1) == 0:
                        continue
                    v = _king_precheck(S, tb, c, src, t, board[c, src], ks)
                    if v == 1:
                        return True
                    if v == 2:
                        if not synced:
                            copy_seen(S, c, r)
                            synced = True
                        if reply_wins(S, tb, c, r, (src * 4 + od) * kk + dist, 0, info, scratch,
                                      cacts, ccnt, cidx):
                            return True
                break
    return False


@leaf
def _capture_squares(S, tb, c, o, ks, rw):
    """rw[RW_CAPTURE] := the empty squares where a piece of ``o`` might capture on landing in row
    ``c``: next to a piece of the other side with, beyond it, a piece of ``o`` or a special
    square (hostile, or a throne the mover may be leaving), and, for the attackers, next to the
    king. A superset: each reply landing there is then judged exactly (``move_captures``)."""
    s = tb.params[P_S]
    n = tb.params[P_N]
    board, pieces = S[I_BOARD], S[I_PIECES]
    for r in range(n):
        rw[RW_CAPTURE, r] = 0
    for i in range(pieces.shape[2]):
        q = pieces[c, 1 - o, i]
        if q == s:
            continue
        for d in range(4):
            t = tb.nbr[q, OPPOSITE[d]]
            if t == s or board[c, t] != EMPTY:
                continue
            anvil = tb.nbr[q, d]
            if anvil != s and (SIDE_OF[board[c, anvil]] == o or tb.flags[anvil] != 0):
                rw[RW_CAPTURE, t // n] |= np.int64(1) << (t % n)
    if o == 0 and ks != s:
        for d in range(4):
            t = tb.nbr[ks, d]
            if t != s and board[c, t] == EMPTY:
                rw[RW_CAPTURE, t // n] |= np.int64(1) << (t % n)


@leaf
def _king_holds(S, tb, c, ks):
    """Berserk, attackers to move in row ``c``: can no turn of theirs, berserk chain included,
    capture the king or leave the defenders without a move? The king falls four-sided or to the
    commander sandwich (no Tablut rule) only where at least three of his neighbours are attackers
    or special squares now (the chain moves one piece; a capture empties a square, which is then
    hostile only if special), or one is a commander or a corner; he is never taken custodially, so
    with two free step squares he keeps a move whatever the turn captures."""
    if tb.params[P_TABLUT_KING] != 0:
        return False
    board = S[I_BOARD]
    code = board[c, ks]
    closing = 0
    free = 0
    for d in range(4):
        q = tb.nbr[ks, d]
        p = board[c, q]
        if IS_ATTACKER[p] or tb.flags[q] != 0:
            closing += 1
        if p == COMMANDER or (tb.flags[q] & F_CORNER) != 0:
            return False
        if p == EMPTY and (tb.allowed[1, code, ks, d] & 1) != 0:
            free += 1
    return closing < 3 and free >= 2


@helper
def opp_can_win(S, tb, at, c, r, root_rep, info, scratch, cacts, ccnt, cidx, rw):
    """Row ``c`` (running, no chain pending): can the side to move win at once? Rows r, r+1 ...
    are scratch (see the module docstring for the filters)."""
    s = tb.params[P_S]
    n = tb.params[P_N]
    kk = tb.params[P_K]
    board, pieces, moves = S[I_BOARD], S[I_PIECES], S[I_MOVES]
    o = np.int64(S[I_TO_MOVE][c])   # as the 0 another caller passes: one build of reply_wins
    me = 1 - o
    ks = S[I_KING][c]
    berserk = tb.params[P_BERSERK] != 0
    if o == 1 and ks != s:
        slot = find_slot(pieces, c, 1, ks)
        for d in range(4):
            if np.int64(moves[c, slot, d]) & at.esc_mask[ks, d]:
                return True
    free = 0
    for i in range(pieces.shape[2]):
        sq = pieces[c, me, i]
        if sq == s:
            continue
        code = board[c, sq]
        f = 0
        for d in range(4):
            if board[c, tb.nbr[sq, d]] == EMPTY and (tb.allowed[me, code, sq, d] & 1) != 0:
                f += 1
        if f >= 2:
            free += 1
            if free >= 6:
                break
    rep = tb.params[P_REPETITION] == 0 and (root_rep or S[I_REPEATS][c] >= 2)
    enc = 0
    if o == 0 and tb.params[P_ENCIRCLEMENT] != 0 and ks != s:
        enc = enc_prefilter(S, tb, at, c, rw)
    if not berserk and free >= 6 and not rep and enc == 0:
        if o == 0 and ks != s:
            return _king_capture_replies(S, tb, c, r, info, scratch, cacts, ccnt, cidx, False)
        return False
    fast_berserk = berserk and enc == 0   # (Berserk has no encirclement; a custom rule set may)
    captures_win = True
    if fast_berserk:
        if o == 0 and ks != s and _king_holds(S, tb, c, ks):
            if not rep:
                return False
            captures_win = False
        else:
            _capture_squares(S, tb, c, o, ks, rw)
    synced = False
    side_key = np.uint64(tb.params[P_SIDE_KEY])
    zob = tb.zobrist
    key = S[I_KEY][c]
    for i in range(moves.shape[1]):
        origin = pieces[c, o, i]
        if origin == s:
            continue
        piece = board[c, origin]
        for d in range(4):
            x = np.int64(moves[c, i, d])
            while x:
                k = lowest_bit(x)
                x &= x - 1
                to = tb.dest[origin, d, k]
                if fast_berserk:
                    # only a reply that captures (the king included) can open a chain or win by
                    # capture: the candidates are judged on the board, and only captures played
                    need = free == 0
                    if not need and captures_win and (
                            ((rw[RW_CAPTURE, to // n] >> (to % n)) & 1) != 0
                            or (tb.jumper[piece] != 0 and k == 1)):
                        need = move_captures(board, tb, c, piece, o, origin, d, k + 1, ks, scratch)
                else:
                    adj_me = False
                    adj_def = False
                    adj_king = False
                    for j in range(4):
                        q = tb.nbr[to, j]
                        side_q = SIDE_OF[board[c, q]]
                        if side_q == me:
                            adj_me = True
                        if side_q == 1:
                            adj_def = True
                        if q == ks:
                            adj_king = True
                    may_cap = adj_me or (tb.jumper[piece] != 0 and k == 1)
                    need = enc == 2 or free == 0
                    if not need and berserk and may_cap:
                        need = True
                    if not need and o == 0 and adj_king:
                        if berserk:
                            need = True
                        else:
                            v = _king_precheck(S, tb, c, origin, to, piece, ks)
                            if v == 1:
                                return True
                            need = v == 2
                    if not need and may_cap and free <= 5:
                        need = True
                    if not need and enc == 1 and (((rw[RW_NS, to // n] >> (to % n)) & 1) != 0
                                                  or adj_def):
                        need = may_encircle(tb, rw, to)
                if not need and rep:
                    key2 = key ^ zob[piece, origin] ^ zob[piece, to] ^ side_key
                    need = seen_count(S, c, key2) >= 2
                if need:
                    if not synced:
                        copy_seen(S, c, r)
                        synced = True
                    if reply_wins(S, tb, c, r, (origin * 4 + d) * kk + k, o, info, scratch,
                                  cacts, ccnt, cidx):
                        return True
    return False


@leaf
def has_repeat(S, g):
    counts = S[I_SEENC]
    for i in range(counts.shape[1]):
        if counts[g, i] >= 2:
            return True
    return False


@inlined
def play_child(S, tb, p, c, a, info, scratch):
    """Row ``c`` := row ``p`` with action ``a`` played; a berserk chain it opens is judged as the
    position after its pass (agents/greedy/agent.py). Row ``c``'s tables must equal row ``p``'s."""
    copy_light(S, p, c)
    for _ in range(2):   # one call site: the step is inlined once here, not once per action
        step_row(S, tb, c, a, info, scratch)
        if S[I_CHAIN][c] < 0 or S[I_REASON][c] != RUNNING:
            break
        a = tb.params[P_PASS]


@inlined
def child_score(S, tb, at, p, c, a, i, before, caps, emov, info, scratch, stamp, gen):
    """Play action ``a`` of row ``p`` into row ``c`` and score it without the opponent check:
    ``WIN``/``0``/``LOSS`` for a finished game, else ``W_CAPTURE * captures + E_mover`` (an
    upper bound of its score: the check can only add ``UNSAFE``). Writes ``caps[i]`` and
    ``emov[i]``; returns (score, whether the game runs on). Row ``c`` keeps the child."""
    mover = S[I_TO_MOVE][p]
    play_child(S, tb, p, c, a, info, scratch)
    w = S[I_WINNER][c]
    cap = before - count_pieces(S, tb, c, 1 - mover)
    caps[i] = cap
    e = evaluate(S, tb, at, c, stamp, gen)
    em = e if mover == 1 else -e
    emov[i] = em
    if w == mover:
        return WIN, False
    if w == 2:
        return 0.0, False
    if w >= 0:
        return LOSS, False
    return W_CAPTURE * cap + em, True


@inlined
def node_setup(S, tb, p, acts):
    """Row ``p``'s legal actions into ``acts``; returns their count, the enemy's pieces before the
    move (captures are the difference) and whether a position of row ``p`` has occurred twice
    (the opponent check's repetition filter then looks at every reply)."""
    n_act = list_actions(S, tb, p, acts)
    before = count_pieces(S, tb, p, 1 - S[I_TO_MOVE][p])
    root_rep = tb.params[P_REPETITION] == 0 and has_repeat(S, p)
    return n_act, before, root_rep


@helper
def score_node(S, tb, at, p, acts, scores, caps, emov, info, scratch, cacts, ccnt, cidx, rw,
               stamp, gen):
    """Score every legal action of row ``p`` (running): ``acts[:n]``, ``scores[:n]`` (agents/greedy/agent.py
    order of preference), ``caps[:n]`` pieces captured, ``emov[:n]`` E from the mover's side;
    returns n. Rows p+1, p+2 ... are scratch; their tables must equal row p's on entry."""
    c = p + 1
    r = p + 2
    n_act, before, root_rep = node_setup(S, tb, p, acts)
    for i in range(n_act):
        sc, running = child_score(S, tb, at, p, c, acts[i], i, before, caps, emov, info, scratch,
                                  stamp, gen)
        if running and opp_can_win(S, tb, at, c, r, root_rep, info, scratch, cacts, ccnt, cidx,
                                   rw):
            sc += UNSAFE
        scores[i] = sc
        restore_seen(S, p, c)
    return n_act


@leaf
def _tie_key(t):
    """The tie-break key of ``choose_node``'s entry ``t`` (finished children's keys carry +1)."""
    return t - 1.0 if t >= 1.0 else t


@helper
def choose_node(S, tb, at, p, acts, scores, caps, emov, info, scratch, cacts, ccnt, cidx, rw,
                stamp, gen, ties, rng):
    """The greedy choice in row ``p`` (running): the index into ``acts`` of a best-scored action
    (as score_node scores them, exact ties uniformly at random), or -1 without legal actions.

    Lazily: every child is scored without the opponent check, which can only lower a score (by
    ``UNSAFE``), so those scores bound the final ones from above, and draws a random tie-break
    key ``ties[i]``. The choice is the child of the highest final score, the lowest key among
    equals (uniform among the best, the keys being independent uniform draws). Children are
    checked in the order of (bound, key), best first, until the next one cannot beat the choice:
    most positions need one or two checks instead of one per child. ``scores[:n]`` ends with
    the bounds of the children left unchecked."""
    c = p + 1
    r = p + 2
    n_act, before, root_rep = node_setup(S, tb, p, acts)
    for i in range(n_act):
        sc, running = child_score(S, tb, at, p, c, acts[i], i, before, caps, emov, info, scratch,
                                  stamp, gen)
        scores[i] = sc
        key = next_random(rng, 0)
        ties[i] = key if running else key + 1.0   # +1: a finished child, nothing to check
        restore_seen(S, p, c)
    choice = -1
    best = -np.inf
    best_key = 0.0
    while True:
        i = -1   # the unchecked child of the highest (bound, -key); checked ones have key inf
        key = 0.0
        for j in range(n_act):
            if ties[j] == np.inf:
                continue
            kj = _tie_key(ties[j])
            if i < 0 or scores[j] > scores[i] or (scores[j] == scores[i] and kj < key):
                i = j
                key = kj
        if i < 0:
            break
        if scores[i] < best or (scores[i] == best and key > best_key):
            break   # neither it nor any child after it can beat the choice
        if ties[i] < 1.0:
            play_child(S, tb, p, c, acts[i], info, scratch)
            if opp_can_win(S, tb, at, c, r, root_rep, info, scratch, cacts, ccnt, cidx, rw):
                scores[i] += UNSAFE
            restore_seen(S, p, c)
        ties[i] = np.inf
        if scores[i] > best or (scores[i] == best and key < best_key):
            best = scores[i]
            best_key = key
            choice = i
    return choice


@kernel
def greedy_choose(rbuf, games, wbuf, tbuf, at, rng, out, acts, scores, caps, emov, info, scratch,
                  cacts, ccnt, cidx, rw, stamp, gen, ties):
    """The greedy action of each game ``games[j]`` of the State in buffer ``rbuf`` into
    ``out[j]``; ``wbuf`` is the work State's buffer, ``tbuf`` the engine's packed tables. The
    States and tables travel as their buffers: a call checks its arguments one by one, and as
    tuples of arrays they took 46 arrays, about 7 µs of a greedy move."""
    _choose(state_views(rbuf), games, state_views(wbuf), table_views(tbuf), at, rng, out, acts,
            scores, caps, emov, info, scratch, cacts, ccnt, cidx, rw, stamp, gen, ties)


@leaf
def _choose(R, games, W, tb, at, rng, out, acts, scores, caps, emov, info, scratch, cacts, ccnt,
            cidx, rw, stamp, gen, ties):
    for j in range(len(games)):
        g = games[j]
        for b in range(3):
            copy_full(R, g, W, b)
        i = choose_node(W, tb, at, 0, acts, scores, caps, emov, info, scratch, cacts, ccnt, cidx,
                        rw, stamp, gen, ties, rng)
        out[j] = acts[i] if i >= 0 else -1


@kernel
def greedy_scores(R, g, W, tb, at, acts, scores, caps, emov, info, scratch, cacts, ccnt, cidx, rw,
                  stamp, gen):
    """Every legal action of game ``g`` scored (score_node); returns how many."""
    for b in range(3):
        copy_full(R, g, W, b)
    return score_node(W, tb, at, 0, acts, scores, caps, emov, info, scratch, cacts, ccnt, cidx,
                      rw, stamp, gen)


@kernel
def opponent_wins(R, g, W, tb, at, info, scratch, cacts, ccnt, cidx, rw):
    """Game ``g`` (running, no chain pending): can its side to move win at once?"""
    for b in range(3):
        copy_full(R, g, W, b)
    return opp_can_win(W, tb, at, 0, 1, has_repeat(W, 0), info, scratch, cacts, ccnt, cidx, rw)


@kernel
def evaluate_rows(R, tb, at, out, stamp, gen):
    for g in range(len(out)):
        out[g] = evaluate(R, tb, at, g, stamp, gen)


# --- wins in two ---------------------------------------------------------------------------------
WIN_NOW, WIN_IN_TWO = 2, 1
"""``root_wins`` flags: the move ends the game won, or every reply of the opponent loses."""


@helper
def every_reply_loses(S, tb, at, c, r, racts, info, scratch, cacts, ccnt, cidx, rw):
    """Row ``c`` (running, no chain pending, the opponent ``o`` to move): does every reply of
    ``o`` lose, either on the spot or by letting the mover win at once (the exact check of
    :func:`opp_can_win`)? Rows ``r``, ``r + 1`` ... are scratch. Sound, not complete: a reply that
    opens a berserk chain counts as one that holds (its continuations are not searched)."""
    o = S[I_TO_MOVE][c]
    n = list_actions(S, tb, c, racts)
    if n == 0:
        return False
    copy_seen(S, c, r)
    rep = tb.params[P_REPETITION] == 0 and has_repeat(S, c)
    for i in range(n):
        copy_light(S, c, r)
        step_row(S, tb, r, racts[i], info, scratch)
        w = S[I_WINNER][r]
        if w >= 0:
            holds = w != 1 - o          # the reply wins or draws for o
        elif S[I_CHAIN][r] >= 0:
            holds = True
        else:
            holds = not opp_can_win(S, tb, at, r, r + 1, rep, info, scratch, cacts, ccnt, cidx, rw)
        restore_seen(S, c, r)
        if holds:
            return False
    return True


@helper
def load_root(R, g, W, tb, acts):
    """Game ``g`` of ``R`` into rows 0-3 of ``W``; its legal actions into ``acts``; how many."""
    for b in range(4):
        copy_full(R, g, W, b)
    return list_actions(W, tb, 0, acts)


@helper
def stepped_wins_in_two(W, tb, at, mover, racts, info, scratch, cacts, ccnt, cidx, rw):
    """Whether the move just stepped into row 1 (not ending the game) wins in two for ``mover``:
    no berserk chain of the mover's pending, the opponent to move, and every reply of the
    opponent's loses (:func:`every_reply_loses`)."""
    return (W[I_CHAIN][1] < 0 and W[I_TO_MOVE][1] != mover
            and every_reply_loses(W, tb, at, 1, 2, racts, info, scratch, cacts, ccnt, cidx, rw))


@kernel
def root_wins(R, g, W, tb, at, acts, racts, flags, info, scratch, cacts, ccnt, cidx, rw):
    """Every legal action ``acts[i]`` of game ``g`` (running, no chain pending) flagged in
    ``flags[i]``: ``WIN_NOW``, ``WIN_IN_TWO`` (the opponent's every reply loses:
    :func:`every_reply_loses`) or 0; returns how many. An action that opens a berserk chain is 0."""
    n = load_root(R, g, W, tb, acts)
    mover = W[I_TO_MOVE][0]
    for i in range(n):
        copy_light(W, 0, 1)
        step_row(W, tb, 1, acts[i], info, scratch)
        w = W[I_WINNER][1]
        if w >= 0:
            flags[i] = WIN_NOW if w == mover else 0
        elif stepped_wins_in_two(W, tb, at, mover, racts, info, scratch, cacts, ccnt, cidx, rw):
            flags[i] = WIN_IN_TWO
        else:
            flags[i] = 0
        restore_seen(W, 0, 1)
    return n


@kernel
def any_win(R, g, W, tb, at, acts, racts, info, scratch, cacts, ccnt, cidx, rw):
    """Whether some legal action of game ``g`` (running, no chain pending) is flagged ``WIN_NOW``
    or ``WIN_IN_TWO`` by :func:`root_wins`, stopping at the first found: every action's immediate
    result first (a step each), then the wins in two."""
    n = load_root(R, g, W, tb, acts)
    mover = W[I_TO_MOVE][0]
    for i in range(n):
        copy_light(W, 0, 1)
        step_row(W, tb, 1, acts[i], info, scratch)
        won = W[I_WINNER][1] == mover
        restore_seen(W, 0, 1)
        if won:
            return True
    for i in range(n):
        copy_light(W, 0, 1)
        step_row(W, tb, 1, acts[i], info, scratch)
        found = W[I_WINNER][1] < 0 and stepped_wins_in_two(W, tb, at, mover, racts, info, scratch,
                                                             cacts, ccnt, cidx, rw)
        restore_seen(W, 0, 1)
        if found:
            return True
    return False
