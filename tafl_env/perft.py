"""Perft: the number of action sequences of a given length (DESIGN.md ``tafl perft``), and the
one-ply expansion that search agents use.

Counting runs as a compiled depth-first search inside the engine
(:func:`tafl_env.engine.search.perft`): memory stays a few kilobytes per ply at any depth.
"""

from __future__ import annotations

import numpy as np

from .engine import Engine, State


def expand(engine: Engine, state: State) -> tuple[State, np.ndarray, np.ndarray]:
    """All children of every game: (child batch, parent row, action) — one engine step."""
    mask = engine.legal_action_mask(state)
    parent, action = np.nonzero(mask)
    children = state.take(parent)
    engine.step(children, action)
    return children, parent, action


def perft(engine: Engine, state: State, depth: int) -> int:
    """Sum over the games of ``state`` of their perft(depth); pass counts as an action and a
    finished game has none."""
    return sum(engine.perft(state, depth, game) for game in range(len(state)))
