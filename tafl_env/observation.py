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
from .notation import ATTACKER_SOLDIER, COMMANDER, DEFENDER_SOLDIER, KING, KNIGHT

NUM_PLANES = 14
PLANE_NAMES = (
    "own_soldiers", "own_special", "own_king", "enemy_soldiers", "enemy_special", "enemy_king",
    "throne", "corners", "escape", "to_move", "is_defender", "chain", "repeated", "progress",
)

# _PLANE_OF[side, code]: the piece plane of `code` seen by `side` (-1: none).
_PLANE_OF = np.full((2, 7), -1, dtype=np.intp)
_PLANE_OF[0, [ATTACKER_SOLDIER, COMMANDER, DEFENDER_SOLDIER, KNIGHT, KING]] = [0, 1, 3, 4, 5]
_PLANE_OF[1, [ATTACKER_SOLDIER, COMMANDER, DEFENDER_SOLDIER, KNIGHT, KING]] = [3, 4, 0, 1, 2]

# _ONE_HOT[side * 7 + code] = the six piece planes of a square holding `code`, seen by `side`.
_ONE_HOT = np.zeros((2 * 7, 6), dtype=np.float32)
for _side in (0, 1):
    for _code in range(7):
        if _PLANE_OF[_side, _code] >= 0:
            _ONE_HOT[_side * 7 + _code, _PLANE_OF[_side, _code]] = 1.0


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


def observe(engine: Engine, state: State, perspective: np.ndarray) -> np.ndarray:
    """(B, N, N, 14) float32 planes of every game, seen by ``perspective`` (B,) 0/1 sides."""
    b, s, n = len(state), engine.s, engine.n
    side = np.asarray(perspective, dtype=np.intp).reshape(b)
    obs = np.empty((b, s, NUM_PLANES), dtype=np.float32)
    obs[:, :, :6] = _ONE_HOT.take(side[:, None] * 7 + state.board[:, :s], axis=0)
    obs[:, :, 6:9] = static_planes(engine)
    obs[:, :, 9] = (state.to_move == side)[:, None]
    obs[:, :, 10] = (side == 1)[:, None]
    obs[:, :, 11] = 0.0
    chained = (state.chain >= 0).nonzero()[0]
    obs[chained, state.chain[chained], 11] = 1.0
    obs[:, :, 12] = (state.repeats >= 2)[:, None]
    obs[:, :, 13] = (state.turn / engine.rules.max_turns)[:, None] if engine.rules.max_turns else 0.0
    return obs.reshape(b, n, n, NUM_PLANES)
