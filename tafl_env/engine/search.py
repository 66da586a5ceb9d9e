"""Perft as a compiled depth-first search (DESIGN.md ``tafl perft``).

The search keeps one game per ply in a small State (row i is the position after i actions), so
its memory is a few kilobytes per ply at any depth; the last ply is not expanded, its count is
the number of legal actions of each position (pass counts, a finished game has none).
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidOptionError
from ._jit import kernel
from .layout import I_CHAIN, I_MOVES, state_views, table_views
from .movegen import count_moves
from .rows import copy_full, list_actions, step_row
from .step import INFO_WIDTH, SCRATCH

MAX_PERFT_DEPTH = 32
"""Deepest perft accepted; far beyond what finishes (perft grows by the branching factor, 10-200
per ply)."""

MAX_PERFT_COUNT = 10**12
"""Perft refuses a depth whose count, estimated over the real tree before it starts (see
:func:`estimate_perft`), exceeds this, and stops with an error if its running count does: hours
of work at tens of millions of sequences per second."""

PERFT_PROBES = 2048
"""Random descents of :func:`estimate_perft` (a batch of this many games, one batched step a ply)."""

PERFT_SLICE = 1 << 18
"""Positions a call of the compiled search visits before it returns to Python (a few hundredths
of a second): between calls the running count is checked and Ctrl-C is seen."""

# the search's resumable registers (``progress``)
_PLY, _TOTAL, _STARTED = 0, 1, 2


@kernel
def perft_search(buf, depth, actions, count, next_index, info, scratch, tbuf, progress, budget):
    """Continue perft(depth >= 2) of the game in row 0 for at most ``budget`` positions; rows
    1 .. depth-1 are the search's plies. Returns whether the search is complete.

    The search resumes where the previous call stopped: ``progress`` holds its ply, the count so
    far and whether it started (all 0 for a new search). Work arrays: ``actions`` (depth,
    num_actions), ``count`` and ``next_index`` (depth,), ``info`` (INFO_WIDTH,) and ``scratch``
    (SCRATCH,), all int64."""
    tb = table_views(tbuf)
    S = state_views(buf)
    chain, moves = S[I_CHAIN], S[I_MOVES]
    if progress[_STARTED] == 0:
        count[0] = list_actions(S, tb, 0, actions[0])
        next_index[0] = 0
        progress[_STARTED] = 1
    total = progress[_TOTAL]
    ply = progress[_PLY]
    visited = 0
    while ply >= 0 and visited < budget:
        if next_index[ply] == count[ply]:
            ply -= 1
            continue
        a = actions[ply, next_index[ply]]
        next_index[ply] += 1
        child = ply + 1
        copy_full(S, ply, S, child)
        step_row(S, tb, child, a, info, scratch)
        visited += 1
        if child == depth - 1:
            total += count_moves(moves, chain, child)
        else:
            ply = child
            count[ply] = list_actions(S, tb, ply, actions[ply])
            next_index[ply] = 0
    progress[_PLY] = ply
    progress[_TOTAL] = total
    return ply < 0


def estimate_perft(engine, state, depth: int, probes: int = PERFT_PROBES, seed: int = 0) -> float:
    """An unbiased estimate of perft(depth) of the single game in ``state`` over its real tree
    (Knuth's estimator): ``probes`` random descents, each weighing its leaf by the product of the
    branching factors it passed. Cheap (``depth`` batched steps), and reproducible for a seed."""
    rng = np.random.default_rng(seed)
    walk = state.take(np.zeros(probes, dtype=np.intp))
    weight = np.ones(probes)
    for _ in range(depth):
        weight *= engine.count_legal(walk)
        if not weight.any():
            return 0.0
        engine.step(walk, engine.random_actions(walk, rng))
    return float(weight.mean())


def perft(engine, state, depth: int) -> int:
    """perft(depth) of the single game in ``state`` (a batch of one).

    Refused when the count estimated over the real tree exceeds :data:`MAX_PERFT_COUNT`, and
    stopped when the running count passes it; the compiled search runs in slices, so Ctrl-C
    stops it within a fraction of a second."""
    if depth > MAX_PERFT_DEPTH:
        raise InvalidOptionError(f"perft depth {depth} is too deep: at most {MAX_PERFT_DEPTH}")
    if depth == 0:
        return 1
    first = int(engine.count_legal(state)[0])
    if depth == 1 or first == 0:
        return first
    # No position has more legal actions than the action space: below that bound, no estimate.
    if float(engine.num_actions) ** depth > MAX_PERFT_COUNT:
        estimate = estimate_perft(engine, state, depth)
        if estimate > MAX_PERFT_COUNT:
            raise InvalidOptionError(
                f"perft depth {depth} would count about {estimate:.1e} action sequences (estimated "
                f"from {PERFT_PROBES} random descents of the tree): hours of work; refusing above "
                f"{MAX_PERFT_COUNT:.0e}, choose a smaller depth")
    stack = state.take(np.zeros(depth, dtype=np.intp))
    stack.grow_history(int(state.turn[0]) + depth + 2)
    work = (np.empty((depth, engine.num_actions), dtype=np.int64), np.zeros(depth, dtype=np.int64),
            np.zeros(depth, dtype=np.int64), np.empty(INFO_WIDTH, dtype=np.int64),
            np.empty(SCRATCH, dtype=np.int64))
    progress = np.zeros(3, dtype=np.int64)
    while not perft_search(stack.buffer, depth, *work, engine.packed_tables, progress, PERFT_SLICE):
        if progress[_TOTAL] > MAX_PERFT_COUNT:
            raise InvalidOptionError(
                f"perft depth {depth} stopped after counting {int(progress[_TOTAL]):.2e} action "
                f"sequences (more than {MAX_PERFT_COUNT:.0e}): choose a smaller depth")
    return int(progress[_TOTAL])
