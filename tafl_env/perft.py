"""Batched perft: the number of action sequences of a given length (DESIGN.md ``tafl perft``).

Each level is expanded as one batch through the engine: every legal action of every state becomes a
row of the next batch. The last level is not expanded at all; its count is the number of legal
actions of each state (pass counts as an action, a finished game has none). Batches are cut into
chunks so that memory stays bounded at any depth.
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


def perft(engine: Engine, state: State, depth: int, chunk: int = 4096) -> int:
    """Sum over the games of ``state`` of their perft(depth)."""
    if depth < 0:
        raise ValueError(f"perft depth must be >= 0, got {depth}")
    if depth == 0:
        return len(state)
    if depth == 1:
        return int(engine.count_legal(state).sum())
    total = 0
    counts = engine.count_legal(state)
    # Cut the parents so that each chunk of children has about `chunk` rows.
    start = 0
    b = len(state)
    cum = np.cumsum(counts)
    while start < b:
        base = cum[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(cum, base + chunk, side="right")))
        children, _, _ = expand(engine, state.take(slice(start, stop)))
        if len(children):
            total += perft(engine, children, depth - 1, chunk)
        start = stop
    return total
