"""Observation planes: what an agent sees of a game, from its own point of view.

``observe(engine, state, perspective)`` encodes B games at once as an ``(B, N, N, C)`` float32 array
(height × width × channels, as PettingZoo's classic board games and Pgx do), row 0 = rank 1.
The same shape serves both agents; "own" and "enemy" are relative to the observing side.

=====  ==========================================================================================
plane  meaning
=====  ==========================================================================================
0      own soldiers
1      own special pieces (the knight for the defenders, commanders for the attackers)
2      own king
3      enemy soldiers
4      enemy special pieces
5      enemy king
6      the throne square
7      restricted corner squares (only the king may enter; empty plane where corners are plain)
8      escape squares (corners, or the whole edge in Historisches Tablut)
9      1 everywhere if the observing side is to move
10     1 everywhere if the observing side is the defenders
11     the square of the piece that must continue a berserk chain (all 0 when none is pending)
12     1 everywhere if the current position has occurred before (a third occurrence ends the game)
13     turns played / move cap, everywhere (0 without a cap)
=====  ==========================================================================================
"""

from __future__ import annotations

import numpy as np

from .engine import Engine, State
from .engine._jit import kernel
from .engine.layout import I_BOARD, I_CHAIN, I_TO_MOVE, I_TURN, state_views
from .engine.tables import PIECE_ROLE, SIDE_OF

NUM_PLANES = 14
PLANE_NAMES = (
    "own_soldiers", "own_special", "own_king", "enemy_soldiers", "enemy_special", "enemy_king",
    "throne", "corners", "escape", "to_move", "is_defender", "chain", "repeated", "progress",
)
ENEMY_PLANES = 3   # a piece's plane is its role (engine.tables.PIECE_ROLE), plus 3 if an enemy's


def observation_shape(engine: Engine) -> tuple[int, int, int]:
    return (engine.n, engine.n, NUM_PLANES)


def static_planes(engine: Engine) -> np.ndarray:
    """(S, 3) throne, corner and escape planes, which never change within a variant (cached)."""
    planes = engine._cache.get("static_planes")
    if planes is None:
        t = engine.tables
        s = engine.s
        planes = np.zeros((s, 3), dtype=np.float32)
        planes[t.throne, 0] = 1
        planes[:, 1] = (t.is_corner & engine.rules.restricted_corners)[:s]
        planes[:, 2] = t.escape[:s]
        engine._cache["static_planes"] = planes
    return planes


@kernel
def _encode(buf, repeated, threshold, games, sides, static, max_turns, chains, out):
    """out[r] = the planes of game ``games[r]`` of the State in ``buf`` seen by side ``sides[r]``
    (see the table above); plane 12 is ``repeated[g] >= threshold`` (``State.repeats`` and 2, or
    flags and 1)."""
    v = state_views(buf)
    board, to_move, chain, turn = v[I_BOARD], v[I_TO_MOVE], v[I_CHAIN], v[I_TURN]
    s = static.shape[0]
    for r in range(len(games)):
        g = games[r]
        side = sides[r]
        mine = np.float32(to_move[g] == side)
        rep = np.float32(repeated[g] >= threshold)
        progress = np.float32(turn[g] / max_turns) if max_turns > 0 else np.float32(0.0)
        for sq in range(s):
            for p in range(NUM_PLANES):
                out[r, sq, p] = 0.0
            code = board[g, sq]
            if SIDE_OF[code] >= 0:
                out[r, sq, PIECE_ROLE[code] + (0 if SIDE_OF[code] == side else ENEMY_PLANES)] = 1.0
            out[r, sq, 6] = static[sq, 0]
            out[r, sq, 7] = static[sq, 1]
            out[r, sq, 8] = static[sq, 2]
            out[r, sq, 9] = mine
            out[r, sq, 10] = side
            out[r, sq, 12] = rep
            out[r, sq, 13] = progress
        if chains and chain[g] >= 0:
            out[r, chain[g], 11] = 1.0


class Observer:
    """The observation encoder of one engine: one compiled pass writes every plane of every game.

    Tests compare it with a plane-by-plane reference encoding on random positions of every variant.
    """

    def __init__(self, engine: Engine):
        self.engine = engine
        self.s = engine.s
        self.n = engine.n
        self.static = static_planes(engine)
        self.max_turns = engine.rules.max_turns or 0
        self.chains = engine.rules.berserk   # only berserk has chains (plane 11)
        self._all: dict[int, np.ndarray] = {}   # np.arange(B) by batch size

    def repeated(self, state: State) -> np.ndarray:
        """(B,) 0/1 in the type of ``State.repeats``: plane 12 of every game (the position occurred
        before), in the form the encoding kernel reads without a conversion."""
        return (state.repeats >= 2).astype(state.repeats.dtype)

    def _run(self, state: State, games: np.ndarray, sides: np.ndarray, repeated) -> np.ndarray:
        if repeated is None:
            repeated, threshold = state.repeats, 2
        else:   # flags in the repeats' type (a no-op for repeated()'s): one compiled signature of _encode
            repeated, threshold = np.ascontiguousarray(repeated, dtype=state.repeats.dtype), 1
        out = np.empty((len(games), self.n, self.n, NUM_PLANES), dtype=np.float32)
        _encode(state.buffer, repeated, threshold, games, sides, self.static, self.max_turns,
                self.chains, out.reshape(len(games), self.s, NUM_PLANES))
        return out

    def _games(self, state: State, games) -> np.ndarray:
        if games is None:
            b = len(state)
            if b not in self._all:
                self._all[b] = np.arange(b)
            return self._all[b]
        return np.asarray(games, dtype=np.intp).reshape(-1)

    def observe(self, state: State, games, side, repeated: np.ndarray | None = None) -> np.ndarray:
        """(R, N, N, 14): games ``games`` of ``state`` (None: all) seen by ``side`` (R,) 0/1.

        ``repeated`` is :meth:`repeated` of the whole ``state`` when the caller already has it.
        """
        games = self._games(state, games)
        sides = np.asarray(side, dtype=np.intp)
        if sides.shape != games.shape:
            sides = np.full(len(games), side, dtype=np.intp) if sides.ndim == 0 else \
                np.ascontiguousarray(np.broadcast_to(sides, games.shape))
        return self._run(state, games, sides, repeated)

    def observe_pairs(self, state: State, games=None, repeated: np.ndarray | None = None) -> np.ndarray:
        """(2R, N, N, 14): each game seen by the attacker (row 2g) and the defender (row 2g+1)."""
        games = self._games(state, games)
        sides = np.tile(np.array([0, 1], dtype=np.intp), len(games))
        return self._run(state, np.repeat(games, 2), sides, repeated)


def observer_for(engine: Engine) -> Observer:
    """The (cached) :class:`Observer` of an engine."""
    observer = engine._cache.get("observer")
    if observer is None:
        observer = engine._cache["observer"] = Observer(engine)
    return observer


def observe(engine: Engine, state: State, perspective) -> np.ndarray:
    """(B, N, N, 14) float32 planes of every game, seen by ``perspective`` (B,) 0/1 sides."""
    return observer_for(engine).observe(state, None, perspective)
