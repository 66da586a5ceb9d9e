"""A reference evaluation for the tests: the greedy agent's position evaluation ``E`` written
with numpy over whole boards (rows of bits, slides and floods), independently of the compiled one
(agents/greedy/kernels.py). It comes from the numpy greedy agent of version 0.2, which the
compiled agent replaced; tests/test_greedy_compiled.py compares the two on random positions.
The weights are the agent's own (one source)."""

from __future__ import annotations

import numpy as np

from agents.greedy.scoring import W_ADJ, W_ATT, W_DEF, W_DIST, W_ESC1, W_ESC2
from tafl_env.engine import Engine, State
from tafl_env.notation import ATTACKER_SOLDIER, COMMANDER, DEFENDER_SOLDIER, EMPTY, KING, KNIGHT

ATTACKER, DEFENDER = 0, 1
_SIDE = np.full(8, -1, dtype=np.int8)
_SIDE[[ATTACKER_SOLDIER, COMMANDER]] = ATTACKER
_SIDE[[DEFENDER_SOLDIER, KNIGHT, KING]] = DEFENDER


class _Geometry:
    """Static per-variant tables, built from the RuleSet only (no engine tables)."""

    def __init__(self, engine: Engine):
        r = engine.rules
        n = self.n = engine.n
        s = self.s = n * n
        sq = np.arange(s)
        self.rank, self.file = sq // n, sq % n
        corners = np.array([0, n - 1, n * (n - 1), s - 1])
        self.is_corner = np.zeros(s + 1, dtype=bool)
        self.is_corner[corners] = True
        edge = (self.rank == 0) | (self.rank == n - 1) | (self.file == 0) | (self.file == n - 1)
        self.escape = np.zeros(s + 1, dtype=bool)
        self.escape[:s] = edge if r.escape == "edge" else self.is_corner[:s]
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
        self.steps = r.move_range or (n - 1)
        self.weights = (np.uint32(1) << np.arange(n, dtype=np.uint32))
        self.full = np.uint32((1 << n) - 1)
        self.escape_rows = self.rows(self.escape[None, :s])[0]
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


def evaluate(engine: Engine, state: State) -> np.ndarray:
    """(B,) the evaluation ``E`` of each position, seen from the defenders; −100 where the king is
    gone (agents/greedy/agent.py's module docstring, (d))."""
    geo, board = _Geometry(engine), state.board
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
