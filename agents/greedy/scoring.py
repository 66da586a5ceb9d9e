"""The evaluation's tables, derived from the engine's :class:`~tafl_env.engine.tables.KernelTables`
(no rule or geometry of its own)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tafl_env.engine.tables import F_ESCAPE, P_K, P_N, P_S

# Evaluation weights (agents/greedy/agent.py docstring, (d)) and score constants.
W_ESC1, W_ESC2, W_DIST, W_ADJ, W_DEF, W_ATT = 3.0, 1.0, 0.5, 1.0, 0.5, 0.5
W_CAPTURE = 1000.0
WIN, LOSS, UNSAFE = 1e9, -1e9, -1e6
NO_KING_E = -100.0


class AgentTables(NamedTuple):
    """esc_mask: (S+1, 4) int64, bit k-1 set when the square k steps away in direction d is an
    escape square; escape_dist: (S+1,) float64 Manhattan distance to the nearest escape square;
    simple: (256,) uint8, ring table of the encirclement filter (see :func:`ring_simple_table`);
    weights: (6,) float64 W_ESC1, W_ESC2, W_DIST, W_ADJ, W_DEF, W_ATT."""

    esc_mask: np.ndarray
    escape_dist: np.ndarray
    simple: np.ndarray
    weights: np.ndarray


def ring_simple_table() -> np.ndarray:
    """``table[p]``: removing a square whose 8-neighbourhood openness is ``p`` (bit i = ring
    position i, clockwise from north: N NE E SE S SW W NW) keeps its open 4-neighbours connected."""
    table = np.zeros(256, dtype=np.uint8)
    for p in range(256):
        bits = [(p >> i) & 1 for i in range(8)]
        if all(bits):
            table[p] = 1
            continue
        start = bits.index(0)
        runs_with_side, in_run, has_side = 0, False, False
        for j in range(1, 9):
            i = (start + j) % 8
            if bits[i]:
                in_run = True
                has_side |= i % 2 == 0
            elif in_run:
                runs_with_side += has_side
                in_run, has_side = False, False
        table[p] = runs_with_side <= 1
    return table


def agent_tables(engine) -> AgentTables:
    """The evaluation tables of ``engine``'s variant (cached on the engine itself: a cache keyed by
    ``id(engine)`` could hand a later engine of another variant, given the same id, these tables)."""
    at = engine._cache.get("agent_tables")
    if at is not None:
        return at
    tb = engine.kernel_tables
    n, s, k = int(tb.params[P_N]), int(tb.params[P_S]), int(tb.params[P_K])
    escape = (tb.flags & F_ESCAPE) != 0
    esc_mask = np.zeros((s + 1, 4), dtype=np.int64)
    for dist in range(k):
        esc_mask |= np.where(escape[tb.dest[:, :, dist]], np.int64(1) << dist, 0)
    esc_mask[s] = 0
    sq = np.arange(s)
    esc = np.flatnonzero(escape[:s])
    rank, file = sq // n, sq % n
    dist = np.zeros(s + 1)
    dist[:s] = (np.abs(rank[:, None] - rank[esc][None]) + np.abs(file[:, None] - file[esc][None])).min(1)
    at = AgentTables(esc_mask=esc_mask, escape_dist=dist, simple=ring_simple_table(),
                     weights=np.array([W_ESC1, W_ESC2, W_DIST, W_ADJ, W_DEF, W_ATT]))
    engine._cache["agent_tables"] = at
    return at
