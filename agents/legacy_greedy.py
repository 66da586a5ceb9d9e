"""LEGACY COPY: the numpy greedy agent of version 0.2, kept only for :mod:`agents.legacy_mcts`
(the rollout MCTS specs and the strength comparison of the compiled MCTS against the old one).

Its preference order, evaluation and weights are those documented in :mod:`agents.greedy`, whose
compiled agent replaces it; the one difference is the repetition check, which here foresees a third
occurrence only within exact cycles (the compiled greedy looks up the key of every quiet reply).
Its weights and the encirclement filter's ring table come from :mod:`agents.search.tables`.
"""

from __future__ import annotations

import numpy as np

from tafl_env.engine import Engine, State
from tafl_env.notation import ATTACKER_SOLDIER, COMMANDER, DEFENDER_SOLDIER, EMPTY, KING, KNIGHT
from tafl_env.perft import expand

from .base import Agent
from .search.tables import (LOSS, UNSAFE, W_ADJ, W_ATT, W_CAPTURE, W_DEF, W_DIST, W_ESC1,
                            W_ESC2, WIN, ring_simple_table)

ATTACKER, DEFENDER = 0, 1
_SIDE = np.full(8, -1, dtype=np.int8)
_SIDE[[ATTACKER_SOLDIER, COMMANDER]] = ATTACKER
_SIDE[[DEFENDER_SOLDIER, KNIGHT, KING]] = DEFENDER



_SIMPLE = ring_simple_table().astype(bool)   # the compiled search's table (agents.search.tables)


class _Geometry:
    """Static per-variant tables, built from the RuleSet only (no engine internals)."""

    def __init__(self, engine: Engine):
        r = engine.rules
        n = self.n = engine.n
        s = self.s = n * n
        sq = np.arange(s)
        self.rank, self.file = sq // n, sq % n
        self.throne = (n // 2) * n + n // 2
        corners = np.array([0, n - 1, n * (n - 1), s - 1])
        self.is_corner = np.zeros(s + 1, dtype=bool)
        self.is_corner[corners] = True
        edge = (self.rank == 0) | (self.rank == n - 1) | (self.file == 0) | (self.file == n - 1)
        self.escape = np.zeros(s + 1, dtype=bool)
        self.escape[:s] = edge if r.escape == "edge" else self.is_corner[:s]
        self.restricted = np.zeros(s + 1, dtype=bool)
        self.restricted[self.throne] = True
        if r.restricted_corners:
            self.restricted[corners] = True
        self.restricted[s] = True
        esc = np.flatnonzero(self.escape[:s])
        self.escape_dist = np.zeros(s + 1)
        self.escape_dist[:s] = (np.abs(self.rank[:, None] - self.rank[esc][None])
                                + np.abs(self.file[:, None] - self.file[esc][None])).min(axis=1)
        # neighbours N, E, S, W (s = off board)
        nbr = np.full((s + 1, 4), s, dtype=np.intp)
        for d, (dr, df) in enumerate(((1, 0), (0, 1), (-1, 0), (0, -1))):
            rr, ff = self.rank + dr, self.file + df
            ok = (rr >= 0) & (rr < n) & (ff >= 0) & (ff < n)
            nbr[:s, d] = np.where(ok, rr * n + ff, s)
        self.nbr = nbr
        # possibly hostile to the king besides attackers: throne, corners, off-board
        self.king_hostile_sq = np.zeros(s + 1, dtype=bool)
        self.king_hostile_sq[[self.throne, s]] = True
        if r.hostile_corners:
            self.king_hostile_sq[corners] = True
        # every non-pass action decoded: origin, target, distance
        a = np.arange(engine.num_actions - 1)
        k = n - 1
        sd, dist = np.divmod(a, k)
        origin, d = np.divmod(sd, 4)
        dr = np.array([1, 0, -1, 0])[d] * (dist + 1)
        df = np.array([0, 1, 0, -1])[d] * (dist + 1)
        rr, ff = self.rank[origin] + dr, self.file[origin] + df
        ok = (rr >= 0) & (rr < n) & (ff >= 0) & (ff < n)
        self.a_origin = origin
        self.a_target = np.where(ok, rr * n + ff, s)
        self.a_dist = dist + 1
        self.steps = r.move_range or (n - 1)
        self.weights = (np.uint32(1) << np.arange(n, dtype=np.uint32))
        self.full = np.uint32((1 << n) - 1)
        self.escape_rows = self.rows(self.escape[None, :s])[0]
        need = 1
        if r.king_capture == "four_sided" and not r.commander_sandwich:
            need = 3
        self.king_need = need

    # --- bit rows: (M, N) uint32, bit f of row r = square r*N + f --------------------------
    def rows(self, squares: np.ndarray) -> np.ndarray:
        m = squares.shape[0]
        return (squares[:, : self.s].reshape(m, self.n, self.n).astype(np.uint32)
                * self.weights).sum(axis=2, dtype=np.uint32)

    def shift(self, x: np.ndarray, d: int) -> np.ndarray:
        out = np.zeros_like(x)
        if d == 0:    # north: rank + 1
            out[:, 1:] = x[:, :-1]
        elif d == 2:  # south
            out[:, :-1] = x[:, 1:]
        elif d == 1:  # east: file + 1
            out = (x << np.uint32(1)) & self.full
        else:
            out = x >> np.uint32(1)
        return out

    def slide(self, src: np.ndarray, empty: np.ndarray) -> np.ndarray:
        """Squares reached from any square of ``src`` by one move through ``empty`` squares."""
        acc = np.zeros_like(src)
        for d in range(4):
            cur = src
            for _ in range(self.steps):
                cur = self.shift(cur, d) & empty
                if not cur.any():
                    break
                acc |= cur
        return acc

    def flood(self, seed: np.ndarray, open_: np.ndarray) -> np.ndarray:
        x = seed & open_
        while True:
            y = x | self.shift(x, 0) | self.shift(x, 1) | self.shift(x, 2) | self.shift(x, 3)
            y &= open_
            if np.array_equal(x, y):
                return x
            x = y


def _count(board: np.ndarray, side: int, s: int) -> np.ndarray:
    return (_SIDE[board[:, :s]] == side).sum(axis=1)


class GreedyAgent(Agent):
    """One ply, with captures, the opponent's immediate wins and a small evaluation (module doc)."""

    name = "greedy"

    def __init__(self, seed: int | None = None, chunk: int = 4096):
        super().__init__(seed)
        self.chunk = chunk
        self._geo: dict[int, _Geometry] = {}

    def geometry(self, engine: Engine) -> _Geometry:
        g = self._geo.get(id(engine))
        if g is None or g.n != engine.n:
            g = self._geo[id(engine)] = _Geometry(engine)
        return g

    # ------------------------------------------------------------------------------------------
    def choose(self, engine: Engine, state: State) -> np.ndarray:
        return self.pick(len(state), *self.score_moves(engine, state))

    def pick(self, games: int, scores: np.ndarray, parent: np.ndarray, action: np.ndarray) -> np.ndarray:
        """(games,) the best-scored action of each game, exact ties broken uniformly at random with
        the agent's ``rng`` (one draw per scored move); −1 for a game without scored moves."""
        out = np.full(games, -1, dtype=np.int64)
        noise = self.rng.random(len(scores)) * 1e-3
        order = np.lexsort((scores + noise, parent))
        last = np.r_[parent[order][1:] != parent[order][:-1], True]
        best = order[last]
        out[parent[best]] = action[best]
        return out

    def score_moves(self, engine: Engine, state: State, details: bool = False):
        """Scores of every legal action of every (running) game: (scores, parent row, action).

        With ``details``, two more arrays follow: the number of enemy pieces each move captures
        and the evaluation ``E`` of the position after it, seen from the mover (``E`` for the
        defenders, ``-E`` for the attackers) — what :class:`~agents.mcts.MCTSAgent` builds its
        priors and leaf values from. The score is ``WIN`` / ``LOSS`` for moves that end the game,
        else ``W_CAPTURE * captures + E_mover``, plus ``UNSAFE`` when the opponent can then win
        at once.
        """
        parts = []
        counts = engine.count_legal(state)
        cum = np.cumsum(counts)
        start = 0
        while start < len(state):
            base = cum[start - 1] if start else 0
            stop = max(start + 1, int(np.searchsorted(cum, base + self.chunk, side="right")))
            rows = np.arange(start, stop)
            children, parent, action = expand(engine, state.take(rows))
            sc, caps, e_mover = self._score_children(engine, state, rows[parent], children)
            parts.append((sc, rows[parent], action, caps, e_mover))
            start = stop
        out = tuple(np.concatenate(x) for x in zip(*parts))
        return out if details else out[:3]

    # ------------------------------------------------------------------------------------------
    def _score_children(self, engine: Engine, parents: State, parent: np.ndarray,
                        children: State) -> np.ndarray:
        geo = self.geometry(engine)
        s = geo.s
        mover = parents.to_move[parent].astype(np.int64)
        # settle pending chains: judge the position after the pass
        pending = np.flatnonzero((children.chain >= 0) & ~children.done)
        if len(pending):
            sub = children.take(pending)
            engine.step(sub, np.full(len(pending), engine.pass_action))
            children.put(pending, sub)
        winner = children.winner.astype(np.int64)
        scores = np.zeros(len(children))
        won = winner == mover
        lost = (winner >= 0) & (winner != mover) & (winner != 2)
        running = np.flatnonzero(~children.done)
        # (c) captures
        enemy = 1 - mover
        caps = (_count(parents.board[parent], 0, s) - _count(children.board, 0, s)) * (enemy == 0) \
            + (_count(parents.board[parent], 1, s) - _count(children.board, 1, s)) * (enemy == 1)
        # (d) evaluation
        e = self._evaluate(geo, children.board)
        e_mover = np.where(mover == DEFENDER, e, -e)
        scores = W_CAPTURE * caps + e_mover
        scores[children.winner == 2] = 0.0
        # (b) opponent's immediate wins
        if len(running):
            unsafe = self.opponent_can_win(engine, children.take(running))
            scores[running[unsafe]] += UNSAFE
        scores[won] = WIN
        scores[lost] = LOSS
        return scores, caps, e_mover

    def evaluate(self, engine: Engine, state: State) -> np.ndarray:
        """(B,) the evaluation ``E`` of each position, seen from the defenders (module docstring, (d));
        −100 where the king is gone."""
        return self._evaluate(self.geometry(engine), state.board)

    def _evaluate(self, geo: _Geometry, board: np.ndarray) -> np.ndarray:
        s = geo.s
        side = _SIDE[board[:, :s]]
        has_king = (board[:, :s] == KING).any(axis=1)
        ks = np.where(has_king, np.argmax(board[:, :s] == KING, axis=1), s)
        empty = geo.rows(board == EMPTY)
        king = geo.rows(board == KING)
        r1 = geo.slide(king, empty)
        r2 = geo.slide(r1, empty) & ~r1 & ~king
        esc1 = np.bitwise_count(r1 & geo.escape_rows).sum(axis=1)
        esc2 = np.bitwise_count(r2 & geo.escape_rows).sum(axis=1)
        nb = geo.nbr[ks]
        adj = (_SIDE[np.take_along_axis(board, nb, 1)] == ATTACKER).sum(axis=1)
        dist = geo.escape_dist[ks]
        nd, na = (side == DEFENDER).sum(axis=1), (side == ATTACKER).sum(axis=1)
        e = W_ESC1 * esc1 + W_ESC2 * esc2 - W_DIST * dist - W_ADJ * adj + W_DEF * nd - W_ATT * na
        return np.where(has_king, e, -100.0)

    # ------------------------------------------------------------------------------------------
    def opponent_can_win(self, engine: Engine, st: State, check_all: np.ndarray | None = None) -> np.ndarray:
        """(M,) bool for running, chain-free states: the side to move has a reply that wins at once.

        The filters are described in the module docstring; the replies they keep are played
        through the engine (chains they open expanded to the end).
        """
        geo = self.geometry(engine)
        rules = engine.rules
        s = geo.s
        m = len(st)
        board = st.board
        o = st.to_move.astype(np.int64)
        me = 1 - o
        side = np.full((m, s + 1), -1, dtype=np.int8)
        side[:, :s] = _SIDE[board[:, :s]]
        has_king = (board[:, :s] == KING).any(axis=1)
        ks = np.where(has_king, np.argmax(board[:, :s] == KING, axis=1), s)

        # --- per state: which kinds of winning reply are possible at all --------------------------
        check_all = np.zeros(m, dtype=bool) if check_all is None else check_all.copy()
        knb = geo.nbr[ks]                                     # (M, 4)
        hostile = (side[np.arange(m)[:, None], knb] == ATTACKER) | geo.king_hostile_sq[knb]
        hostile_count = hostile.sum(axis=1)
        defending = (o == DEFENDER) & has_king
        attacking = (o == ATTACKER) & has_king
        # escape: the king reaches an escape square with one slide (Berserk: or may capture, which
        # needs a landing square next to an attacker, or a jump over an adjacent attacker soldier)
        king_rows = geo.rows(board == KING)
        reach1 = geo.slide(king_rows, geo.rows(board == EMPTY))
        goal = geo.escape_rows
        if rules.berserk:
            att_rows = geo.rows(side == ATTACKER)
            goal = goal | geo.shift(att_rows, 0) | geo.shift(att_rows, 1) | geo.shift(att_rows, 2) \
                | geo.shift(att_rows, 3)
            jumpable = (board[np.arange(m)[:, None], knb] == ATTACKER_SOLDIER).any(axis=1)
        else:
            jumpable = np.zeros(m, dtype=bool)
        esc_row = defending & ((reach1 & goal).any(axis=1) | jumpable)
        # king capture
        if rules.berserk:
            kc_row = attacking & self._berserk_king_reply(geo, rules, board, ks, knb, hostile_count,
                                                          np.arange(m), ks, any_piece=True)
        else:
            kc_row = attacking & (hostile_count >= geo.king_need)
        # encirclement
        enc_flag = np.zeros(m, dtype=bool)
        ns = None
        if rules.encirclement:
            att = np.flatnonzero(attacking)
            if len(att):
                enc_all, enc_check, nonsimple = self._encirclement_filter(geo, board[att])
                check_all[att[enc_all]] = True
                enc_flag[att[enc_check]] = True
                ns = np.zeros((m, s + 1), dtype=bool)
                ns[att, :s] = nonsimple
        # no legal move left to the mover
        k = self._free_pieces(geo, board, side, me)
        check_all |= k == 0
        if rules.berserk:
            keep = ~self._berserk_capturable(geo, board, side, o)
            tight = self._free_pieces(geo, board, side, me, keep) == 0
        else:
            tight = k < 5
        # repetition
        if rules.repetition == "starter_loses":
            check_all |= engine.repetition_count(st) >= 2

        # --- per reply, only in the states that need it ---------------------------------------------
        need = np.flatnonzero(check_all | esc_row | kc_row | enc_flag | tight)
        unsafe = np.zeros(m, dtype=bool)
        if not len(need):
            return unsafe
        parts_rows, parts_acts = [], []
        per = max(1, self.chunk * 16 // max(1, engine.num_actions // 64))
        for c0 in range(0, len(need), per):
            idx = need[c0:c0 + per]
            mask = engine.legal_action_mask(st.take(idx))
            mask[:, -1] = 0
            r, a = np.nonzero(mask)
            parts_rows.append(idx[r])
            parts_acts.append(a)
        rows, acts = np.concatenate(parts_rows), np.concatenate(parts_acts)
        org, tgt, dist = geo.a_origin[acts], geo.a_target[acts], geo.a_dist[acts]
        o_r = o[rows]
        cand = np.zeros(len(rows), dtype=bool)
        tnbr = geo.nbr[tgt]                                   # (R, 4)
        tnbr_side = side[rows[:, None], tnbr]                 # (R, 4)
        may_capture = (tnbr_side == (1 - o_r)[:, None]).any(axis=1)
        if rules.jumps:
            may_capture |= dist == 2

        # escape (Berserk: a capturing king move may continue to a corner)
        king_move = (org == ks[rows]) & (o_r == DEFENDER)
        cand |= king_move & (geo.escape[tgt] | may_capture) if rules.berserk else king_move & geo.escape[tgt]
        # king capture
        next_to_king = (tnbr == ks[rows][:, None]).any(axis=1)
        # the landing square itself is empty, so it is not among the counted hostile neighbours
        # unless it is a throne/corner square: subtract it then
        t_counted = geo.king_hostile_sq[tgt] & next_to_king
        others = hostile_count[rows] - t_counted
        if rules.berserk:
            cand |= (o_r == ATTACKER) & (next_to_king | may_capture) & self._berserk_king_reply(
                geo, rules, board, ks, knb, hostile_count, rows, org)
        else:
            cand |= (o_r == ATTACKER) & next_to_king & (others >= geo.king_need)
        # encirclement
        if ns is not None:
            adj_def = (tnbr_side == DEFENDER).any(axis=1)
            enc_c = enc_flag[rows] & (ns[rows, tgt] | adj_def)
            idx = np.flatnonzero(enc_c & ~cand)
            if len(idx):
                enc_c[idx[~self._may_encircle(geo, side, rows[idx], tgt[idx])]] = False
            cand |= enc_c
        # no legal move left to the mover
        cand |= tight[rows] & may_capture
        cand |= check_all[rows]

        sel = np.flatnonzero(cand)
        if not len(sel):
            return unsafe
        grand = st.take(rows[sel])
        owner = rows[sel]
        engine.step(grand, acts[sel])
        while True:
            unsafe[owner[grand.winner == o[owner]]] = True
            chained = np.flatnonzero((grand.chain >= 0) & ~grand.done & ~unsafe[owner])
            if not len(chained):
                break
            grand, p, _ = expand(engine, grand.take(chained))
            owner = owner[chained][p]
        return unsafe

    def _encirclement_filter(self, geo: _Geometry, board: np.ndarray):
        """For positions with the attackers to move: (every move must be checked, the moves to
        non-simple squares or next to defenders must be checked, the non-simple empty squares)."""
        n, s = geo.n, geo.s
        m = len(board)
        sq = board[:, :s].reshape(m, n, n)
        open_pad = np.ones((m, n + 2, n + 2), dtype=bool)
        open_pad[:, 1:-1, 1:-1] = _SIDE[sq] != ATTACKER
        pattern = np.zeros((m, n, n), dtype=np.uint8)
        # ring positions clockwise from north; row index = rank (north = +1)
        offsets = ((1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1))
        for i, (dr, df) in enumerate(offsets):
            pattern |= open_pad[:, 1 + dr: 1 + dr + n, 1 + df: 1 + df + n].astype(np.uint8) << i
        nonsimple = (~_SIMPLE[pattern] & (sq == EMPTY)).reshape(m, s)
        attackers = geo.rows(_SIDE[board] == ATTACKER)
        defenders = _SIDE[board[:, :s]] == DEFENDER
        open_rows = ~attackers & geo.full
        edge = np.zeros_like(open_rows)
        edge[:, 0] = edge[:, -1] = geo.full
        edge[:, 1:-1] = np.uint32(1) | (np.uint32(1) << np.uint32(n - 1))
        reach = geo.flood(edge, open_rows)
        encircled_now = ~(self._bits_to_squares(geo, reach) & defenders).any(axis=1)
        reach_all = geo.flood(edge, open_rows & ~geo.rows(nonsimple))
        hit = self._bits_to_squares(geo, reach_all) & defenders
        # two defenders in R more than 2 apart (Manhattan): no single move encircles
        u = (geo.rank + geo.file)[None, :]
        v = (geo.rank - geo.file)[None, :]
        big = 4 * n
        spread = np.maximum(np.where(hit, u, -big).max(1) - np.where(hit, u, big).min(1),
                            np.where(hit, v, -big).max(1) - np.where(hit, v, big).min(1))
        spread = np.where(hit.any(axis=1), spread, 0)
        possible = spread <= 2
        return encircled_now, possible & ~encircled_now, nonsimple

    @staticmethod
    def _may_encircle(geo: _Geometry, side: np.ndarray, r: np.ndarray, t: np.ndarray) -> np.ndarray:
        """(P,) an attackers' move to ``t`` in state ``r`` may encircle: with ``t`` closed (and the
        origin still closed, which only shrinks the reach), no defender that is not next to ``t``
        (those may be captured by the move) stays reachable from the edge."""
        n, s = geo.n, geo.s
        key, inv = np.unique(r * (s + 1) + t, return_inverse=True)
        ur, ut = key // (s + 1), key % (s + 1)
        p = len(key)
        tbit = np.zeros((p, n), dtype=np.uint32)
        tbit[np.arange(p), geo.rank[ut]] = np.uint32(1) << geo.file[ut].astype(np.uint32)
        states, at = np.unique(ur, return_inverse=True)   # bit rows once per state
        open_rows = geo.rows(side[states, :s] != ATTACKER)[at] & ~tbit
        near = geo.shift(tbit, 0) | geo.shift(tbit, 1) | geo.shift(tbit, 2) | geo.shift(tbit, 3)
        defenders = geo.rows(side[states, :s] == DEFENDER)[at] & ~near
        edge = np.zeros_like(open_rows)
        edge[:, 0] = edge[:, -1] = geo.full
        edge[:, 1:-1] = np.uint32(1) | (np.uint32(1) << np.uint32(n - 1))
        reach = geo.flood(edge, open_rows)
        return ~(reach & defenders).any(axis=1)[inv]

    @staticmethod
    def _bits_to_squares(geo: _Geometry, x: np.ndarray) -> np.ndarray:
        return ((x[:, :, None] >> np.arange(geo.n, dtype=np.uint32)) & 1).astype(bool).reshape(len(x), geo.s)

    @staticmethod
    def _berserk_king_reply(geo: _Geometry, rules, board: np.ndarray, ks: np.ndarray, knb: np.ndarray,
                            hostile_count: np.ndarray, rows: np.ndarray, org: np.ndarray,
                            any_piece: bool = False) -> np.ndarray:
        """(R,) Berserk, attackers to move: the reply (its piece, by a whole chain) may capture the king.

        During the attackers' turn only the moving piece changes squares and captures only remove
        defenders, so at the end of any chain the king's neighbours hold no attacker and no hostile
        square that was not there before, except the moving piece itself. Hence a 4-side capture
        needs 3 of the king's neighbours attacker/hostile now (attackers counted even if one of them
        is the mover: an over-count), and a commander sandwich needs a commander or a corner next to
        the king now and the moving piece to be a commander (and the king off the throne unless
        ``commander_capture_on_throne``).
        """
        m = len(board)
        four = hostile_count >= 3
        sandwich = np.zeros(m, dtype=bool)
        if rules.commander_sandwich:
            nb_piece = board[np.arange(m)[:, None], knb]
            sandwich = ((nb_piece == COMMANDER) | geo.is_corner[knb]).any(axis=1)
            if not rules.commander_capture_on_throne:
                sandwich &= ks != geo.throne
        if any_piece:   # per state: is any attacker piece able to do it
            return four | (sandwich & (board[:, : geo.s] == COMMANDER).any(axis=1))
        return four[rows] | (sandwich[rows] & (board[rows, org] == COMMANDER))

    @staticmethod
    def _berserk_capturable(geo: _Geometry, board: np.ndarray, side: np.ndarray, o: np.ndarray) -> np.ndarray:
        """(M, S) Berserk: pieces of the side not to move that one whole turn of ``o`` (chains
        included) could possibly capture; a sound over-estimate.

        * Custodial: the square beyond the piece must hold a piece of ``o`` that is not the mover or
          be hostile (throne, corner); neither appears during the turn (captures only remove the
          other side's pieces, and only the mover moves). So a piece with no ``o`` piece, throne or
          corner among its neighbours (the opposite one on the board) is safe from custodial capture.
        * Knight's jump (``o`` the defenders, the knight on the board): the knight must stand on one
          side of the soldier and land on the empty, non-restricted square on the other; neither
          square may hold an ``o`` piece other than the knight (those do not move).
        * The king is never counted: he falls only by king capture, which is a win checked by the
          king-capture filter itself.
        """
        s = geo.s
        nb = geo.nbr[:s]                                       # (S, 4) N E S W
        opp = nb[:, [2, 3, 0, 1]]                              # the square beyond, per direction
        o_piece = side == o[:, None]                           # (M, S+1); sentinel column -1
        anvil = o_piece | geo.is_corner[None, :]
        anvil[:, geo.throne] = True
        anvil[:, s] = False
        on_board = opp < s                                     # (S, 4)
        cust = (anvil[:, nb] & on_board[None]).any(axis=2)     # (M, S)
        victim = (side[:, :s] == 1 - o[:, None]) & (board[:, :s] != KING)
        cap = victim & cust
        knight = (board[:, :s] == KNIGHT).any(axis=1) & (o == DEFENDER)
        if knight.any():
            other_o = o_piece & (board != KNIGHT)
            other_o[:, s] = True                               # off board: neither stand nor land
            ok_side = ~other_o[:, nb]                          # (M, S, 4)
            land_ok = ok_side & ~geo.restricted[nb][None]
            jump = ((ok_side & land_ok[:, :, [2, 3, 0, 1]]).any(axis=2)
                    & (board[:, :s] == ATTACKER_SOLDIER))
            cap |= knight[:, None] & jump
        return cap

    @staticmethod
    def _free_pieces(geo: _Geometry, board: np.ndarray, side: np.ndarray, me: np.ndarray,
                     keep: np.ndarray | None = None) -> np.ndarray:
        """(M,) the fewest of ``me``'s pieces (only those in ``keep`` when given) that keep a free
        step square other than ``x``, over all squares ``x`` (a free step square: empty and not
        restricted). Exact below 5; from 5 on it may return any lower bound >= 5 (the count of
        pieces with two free step squares), which is all the callers need."""
        s = geo.s
        m = len(board)
        mine_all = side[:, :s] == me[:, None]
        if keep is not None:
            mine_all = mine_all & keep
        # fast path, bit rows: pieces with two or more free step squares keep one whatever ``x``
        f = geo.rows(((board == EMPTY) & ~geo.restricted[None, :])[:, :s])
        a, b, c, d = (geo.shift(f, 2), geo.shift(f, 3), geo.shift(f, 0), geo.shift(f, 1))  # N E S W free
        two = (a & b) | (a & c) | (a & d) | (b & c) | (b & d) | (c & d)
        multi_fast = np.bitwise_count(two & geo.rows(mine_all)).sum(axis=1).astype(np.int64)
        out = multi_fast.copy()
        slow = np.flatnonzero(multi_fast < 5)
        if not len(slow):
            return out
        board, side, me = board[slow], side[slow], me[slow]
        keep = None if keep is None else keep[slow]
        m = len(slow)
        free_sq = (board == EMPTY) & ~geo.restricted[None, :]  # (M, S+1); sentinel not free
        free_sq[:, s] = False
        nb = geo.nbr[:s]                                        # (S, 4)
        exits = free_sq[:, nb]                                  # (M, S, 4)
        mine = side[:, :s] == me[:, None]
        if keep is not None:
            mine &= keep
        n_exit = exits.sum(axis=2) * mine
        multi = (n_exit >= 2).sum(axis=1)
        single = n_exit == 1
        single_sq = np.where(single, nb[np.arange(s)[None, :], np.argmax(exits, axis=2)], s)
        flat = (single_sq + (np.arange(m) * (s + 1))[:, None]).ravel()
        hist = np.bincount(flat, minlength=m * (s + 1)).reshape(m, s + 1)
        hist[:, s] = 0
        out[slow] = multi + single.sum(axis=1) - hist.max(axis=1)
        return out


# not registered: kept only as the reference of the old agent (agents.legacy_mcts)
