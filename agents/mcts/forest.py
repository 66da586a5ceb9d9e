"""The trees of a batch of games as one forest: row ``g`` of every array is game ``g``'s tree.

The batched network searches (:mod:`.netsearch`, the MCTS agent's network evaluator, and the
AlphaZero search of :mod:`agents.az.search`) search all trees of a batch together, so their trees
live in 2-D arrays with the layout of :mod:`.kernels` (``hdr``, :class:`~.kernels.Nodes`,
:class:`~.kernels.Edges`) and a game axis first. The rows grow together (more nodes, more edges,
more games) by doubling, and a forest is kept between calls so that its arrays are reused.

    >>> f = Forest(games=2, nodes=8, edges=16)
    >>> f.grow(nodes=True, games=1)
    >>> f.games, f.nodes.visits.shape, f.edges.prior.shape
    (3, (3, 16), (3, 16))
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import kernels as _m


class Forest:
    """``hdr`` (games, HDR_SIZE), ``nodes`` and ``edges`` (records of (games, capacity) arrays),
    and ``valid``: the rows that hold a tree a caller may reuse."""

    def __init__(self, games: int, nodes: int, edges: int):
        self.hdr = np.zeros((games, _m.HDR_SIZE), dtype=np.int64)
        self.nodes = _m.new_nodes((games, nodes))
        self.edges = _m.new_edges((games, edges))
        self.valid = np.zeros(games, dtype=bool)

    @property
    def games(self) -> int:
        return len(self.hdr)

    def grow(self, nodes: bool = False, edges: bool = False, games: int = 0) -> None:
        """Double the node or edge capacity of every row, or add ``games`` empty rows."""
        if nodes:
            self.nodes = _m.Nodes._make(np.concatenate([a, np.zeros_like(a)], axis=1) for a in self.nodes)
        if edges:
            self.edges = _m.Edges._make(np.concatenate([a, np.zeros_like(a)], axis=1) for a in self.edges)
        if games:
            def more(a):
                return np.concatenate([a, np.zeros((games,) + a.shape[1:], a.dtype)])
            self.hdr = more(self.hdr)
            self.nodes = _m.Nodes._make(more(a) for a in self.nodes)
            self.edges = _m.Edges._make(more(a) for a in self.edges)
            self.valid = more(self.valid)

    def rows(self, b: int) -> tuple:
        """The first ``b`` trees (views): ``hdr, nodes, edges``."""
        return (self.hdr[:b], _m.Nodes._make(a[:b] for a in self.nodes),
                _m.Edges._make(a[:b] for a in self.edges))

    def tree(self, g: int) -> tuple:
        """Game ``g``'s tree (views): ``hdr, nodes, edges``."""
        return (self.hdr[g], _m.Nodes._make(a[g] for a in self.nodes),
                _m.Edges._make(a[g] for a in self.edges))


class RoundBuffers(NamedTuple):
    """What the rounds of a batched search over ``b`` games share (:mod:`.netsearch`): the leaf
    State that one forward pass evaluates, the work arrays of the roots and leaves, and the walks
    waiting for their leaves."""

    leaves: object              # State of b * leaves_per_tree rows: the leaves of a round
    root_arrays: tuple          # arrays of a State of 2b rows: each game's root row and path row
    leaf_arrays: tuple          # the leaves' arrays
    leaf_game: np.ndarray
    leaf_node: np.ndarray
    path_nodes: np.ndarray      # (walks, max_depth)
    path_edges: np.ndarray
    path_game: np.ndarray
    path_depth: np.ndarray
    path_slot: np.ndarray
    counts: np.ndarray          # leaves, walks, simulations started


def round_buffers(state, b: int, leaves_per_tree: int, max_depth: int) -> RoundBuffers:
    """The buffers of the rounds searching the first ``b`` games of ``state``."""
    walks = b * leaves_per_tree
    roots = state.take(np.repeat(np.arange(b), 2))
    leaves = state.take(np.zeros(walks, dtype=np.intp))
    ints = [np.zeros(walks, dtype=np.int64) for _ in range(5)]
    return RoundBuffers(leaves, roots.arrays(), leaves.arrays(), ints[0], ints[1],
                        np.zeros((walks, max_depth), dtype=np.int64), np.zeros((walks, max_depth), dtype=np.int64),
                        ints[2], ints[3], ints[4], np.zeros(3, dtype=np.int64))
