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
from .notation import ATTACKER_SOLDIER, COMMANDER, DEFENDER_SOLDIER, KING, KNIGHT, NUM_CODES

NUM_PLANES = 14
PLANE_NAMES = (
    "own_soldiers", "own_special", "own_king", "enemy_soldiers", "enemy_special", "enemy_king",
    "throne", "corners", "escape", "to_move", "is_defender", "chain", "repeated", "progress",
)

# _PLANE_OF[side, code]: the piece plane of `code` seen by `side` (-1: none).
_PLANE_OF = np.full((2, 7), -1, dtype=np.intp)
_PLANE_OF[0, [ATTACKER_SOLDIER, COMMANDER, DEFENDER_SOLDIER, KNIGHT, KING]] = [0, 1, 3, 4, 5]
_PLANE_OF[1, [ATTACKER_SOLDIER, COMMANDER, DEFENDER_SOLDIER, KNIGHT, KING]] = [3, 4, 0, 1, 2]

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


class Observer:
    """The observation encoder of one engine: one table gather for all planes of all games.

    The planes of a square depend only on (observing side, side to move is the observer, position
    repeated, piece code, square), apart from the berserk-chain square and the progress plane. A
    lookup table of ``8 * 7 * S`` rows of 14 floats holds every combination, so the observation of
    B games is ``np.take(table, index, axis=0)`` plus two small writes. Tests compare it with a
    plane-by-plane reference encoding on random positions of every variant.
    """

    def __init__(self, engine: Engine):
        self.engine = engine
        s = self.s = engine.s
        self.n = engine.n
        lut = np.zeros((8, NUM_CODES, s, NUM_PLANES), dtype=np.float32)
        sp = static_planes(engine)
        for combo in range(8):
            side, mine, rep = combo & 1, (combo >> 1) & 1, (combo >> 2) & 1
            for code in range(NUM_CODES):
                plane = _PLANE_OF[side, code]
                if plane >= 0:
                    lut[combo, code, :, plane] = 1.0
            lut[combo, :, :, 6:9] = sp
            lut[combo, :, :, 9] = mine
            lut[combo, :, :, 10] = side
            lut[combo, :, :, 12] = rep
        self.table = lut.reshape(-1, NUM_PLANES)
        # combo_offset[side, to_move, repeated]: the first table row of that combination.
        self.combo_offset = np.empty((2, 2, 2), dtype=np.intp)
        for side, to_move, rep in np.ndindex(2, 2, 2):
            combo = side + 2 * (to_move == side) + 4 * rep
            self.combo_offset[side, to_move, rep] = combo * NUM_CODES * s
        self.squares = np.arange(s, dtype=np.intp)
        self.max_turns = engine.rules.max_turns
        self.chains = engine.rules.berserk   # only berserk has chains (plane 11)

    def _base(self, state: State, games) -> np.ndarray:
        board = state.board[:, : self.s] if games is None else state.board[games, : self.s]
        base = board.astype(np.intp)
        base *= self.s
        base += self.squares
        return base

    def _combo(self, state: State, games, side: np.ndarray, repeated: np.ndarray) -> np.ndarray:
        tm = state.to_move if games is None else state.to_move[games]
        rep = repeated if games is None else repeated[games]
        return self.combo_offset[side, tm, rep.view(np.int8)]   # one lookup: cheaper than arithmetic at B = 1

    def _finish(self, obs: np.ndarray, state: State, games) -> np.ndarray:
        """Progress and chain planes of ``obs`` (R, copies, S, 14) in place."""
        if self.max_turns:
            turn = state.turn if games is None else state.turn[games]
            obs[..., 13] = (turn / self.max_turns)[:, None, None]
        if self.chains:
            chain = state.chain if games is None else state.chain[games]
            rows = np.flatnonzero(chain >= 0)
            if len(rows):
                obs[rows, :, chain[rows], 11] = 1.0
        return obs

    def repeated(self, state: State) -> np.ndarray:
        """(B,) bool: plane 12 of every game (the position occurred before)."""
        return state.repeats >= 2

    def observe(self, state: State, games, side, repeated: np.ndarray | None = None) -> np.ndarray:
        """(R, N, N, 14): games ``games`` of ``state`` (None: all) seen by ``side`` (R,) 0/1.

        ``repeated`` is :meth:`repeated` of the whole ``state`` when the caller already has it.
        """
        side = np.asarray(side, dtype=np.intp)
        if repeated is None:
            repeated = self.repeated(state)
        idx = self._base(state, games)
        idx += self._combo(state, games, side, repeated)[:, None]
        obs = np.take(self.table, idx, axis=0, mode="clip")  # indices are valid; "clip" skips checks
        r = len(idx)
        self._finish(obs.reshape(r, 1, self.s, NUM_PLANES), state, games)
        return obs.reshape(r, self.n, self.n, NUM_PLANES)

    def observe_pairs(self, state: State, games=None, repeated: np.ndarray | None = None) -> np.ndarray:
        """(2R, N, N, 14): each game seen by the attacker (row 2g) and the defender (row 2g+1)."""
        if repeated is None:
            repeated = self.repeated(state)
        base = self._base(state, games)
        r = len(base)
        tm = state.to_move if games is None else state.to_move[games]
        rep = repeated if games is None else repeated[games]
        combo = self.combo_offset[:, tm, rep.view(np.int8)].T    # (R, 2): attacker's, defender's
        idx = base[:, None, :] + combo[:, :, None]
        obs = np.take(self.table, idx, axis=0, mode="clip")  # (R, 2, S, 14)
        self._finish(obs, state, games)
        return obs.reshape(2 * r, self.n, self.n, NUM_PLANES)


def observer_for(engine: Engine) -> Observer:
    """The (cached) :class:`Observer` of an engine."""
    observer = engine._cache.get("observer")
    if observer is None:
        observer = engine._cache["observer"] = Observer(engine)
    return observer


def observe(engine: Engine, state: State, perspective) -> np.ndarray:
    """(B, N, N, 14) float32 planes of every game, seen by ``perspective`` (B,) 0/1 sides."""
    return observer_for(engine).observe(state, None, perspective)
