"""Monte Carlo tree search: PUCT with greedy priors and heuristic leaf values, a solver for wins
and losses, trees kept between moves, and a budget in simulations or in time per move.

The default configuration (``mcts:N``, ``mcts:Ts``) is compiled (:mod:`agents.search.mcts`): a
tree per game as arrays, each simulation replayed on a work row with the engine's own step kernel.

**Expansion and priors.** A node is expanded by scoring all its legal moves with the greedy
agent's compiled scoring (win now, the exact check of the opponent's immediate wins, captures, the
evaluation ``E`` of the position after the move). The prior of a move is a softmax of
``(captures * W_CAPTURE_VALUE + E_mover) / prior_temperature`` over the safe moves; unsafe moves
get a prior of 0 and count as lost (in Berserk: one virtual losing visit). Selection maximises
``Q + c_puct * P * sqrt(N + 1) / (1 + n)``; an edge not yet visited has ``Q`` = the node's value.

**Leaf values.** A new leaf is worth the greedy evaluation of its best safe move, from the side to
move there, ``tanh((E_mover(best) + W_CAPTURE_VALUE * captures(best) - E0) / value_scale)``
(``E0``: the start position's evaluation for that side); a terminal leaf its result.

**Solver.** A node with a winning move is a proven win; an edge into a lost position is a proven
loss, and a node whose every edge is lost is a proven loss; proofs go up the path, proven edges are
not explored again and a proven root stops its search.

**Tree reuse.** After a move the agent keeps its tree; on the next call it looks for the new
position (by position key and turn) among the nodes below the old root (its own move and the
opponent's reply, chains included) and searches on from there, with every visit count of the kept
subtree. ``reuse=False`` starts afresh each move.

**Budget.** ``simulations`` per move (``mcts:256``), or ``seconds`` per move (``mcts:1s``,
``mcts:0.25s``): simulations run in chunks until the time is up (the first chunk always runs).

**The move played**: a winning move if the root is proven won (a win in one is played without
search, as is the only legal move), else the most visited edge that is not a proven loss (ties:
higher mean value, then higher prior).

The rollout configurations (``mcts:N:random``, ``mcts:N:greedy``, ``mcts:N:random:uniform``) still
run the Python search of version 0.2 (:mod:`agents.legacy_mcts`); they are not compiled yet.

Version history: 0.3 compiled search, tree reuse, time budgets; 0.2 greedy priors, heuristic leaf
values, the solver; 0.1 plain UCT with random rollouts (``mcts:N:random:uniform``).
"""

from __future__ import annotations

import time

import numpy as np

from tafl_env.engine import Engine, State

from .base import Agent, register_agent
from .greedy import GreedyAgent, SearchWork, prepare
from .search import mcts as _m
from tafl_env.engine.rows import load_rows

W_CAPTURE_VALUE = _m.W_CAPTURE_VALUE
_ROLLOUTS = ("none", "random", "greedy")
_PRIORS = ("greedy", "uniform")
MAX_DEPTH = 64          # plies below the root a simulation may walk
CHUNK = 32              # simulations per kernel call under a time budget


class _Tree:
    """One game's tree: node and edge arrays that grow by doubling."""

    def __init__(self, nodes: int, edges: int):
        self.hdr = np.zeros(4, dtype=np.int64)
        self.nodes = (np.zeros(nodes, np.int64), np.zeros(nodes, np.int64), np.zeros(nodes, np.int64),
                      np.zeros(nodes), np.zeros(nodes, np.int64), np.zeros(nodes, np.int64),
                      np.zeros(nodes, np.uint64), np.zeros(nodes, np.int64), np.zeros(nodes, np.int64))
        self.edges = (np.zeros(edges, np.int64), np.zeros(edges), np.zeros(edges, np.int64),
                      np.zeros(edges, np.int64), np.zeros(edges), np.zeros(edges, np.int64))
        self.engine_id = None

    def grow(self, nodes: bool, edges: bool) -> None:
        if nodes:
            self.nodes = tuple(np.concatenate([a, np.zeros_like(a)]) for a in self.nodes)
        if edges:
            self.edges = tuple(np.concatenate([a, np.zeros_like(a)]) for a in self.edges)

    def root_visits(self) -> int:
        return int(self.nodes[2][self.hdr[_m.H_ROOT]])


class MCTSAgent(Agent):
    """MCTS with greedy priors and a solver (see the module docstring).

    Args:
        simulations: simulations per game and move (ignored when ``seconds`` is given).
        seconds: time per move (all games of the batch share it equally).
        rollout, prior: ``"none"``/``"greedy"`` is the compiled default; the others select the
            Python search with playouts (:mod:`agents.legacy_mcts`).
        c_puct, value_scale, prior_temperature: PUCT constant and the scales of values and priors.
        reuse: keep the tree between moves.
        Other keyword arguments are passed to the Python search when it is used.
    """

    name = "mcts"

    def __init__(self, simulations: int = 64, rollout: str = "none", prior: str = "greedy",
                 c_puct: float = 1.5, value_scale: float = 5.0, prior_temperature: float = 1.0,
                 seconds: float | None = None, reuse: bool = True, seed: int | None = None, **legacy):
        super().__init__(seed)
        if rollout not in _ROLLOUTS:
            raise ValueError(f"rollout must be one of {_ROLLOUTS}, got {rollout!r}")
        if prior not in _PRIORS:
            raise ValueError(f"prior must be one of {_PRIORS}, got {prior!r}")
        if prior == "uniform" and rollout == "none":
            raise ValueError("prior='uniform' needs rollouts (rollout='random' or 'greedy')")
        if int(simulations) < 1:
            raise ValueError(f"simulations must be >= 1, got {simulations!r}")
        if seconds is not None and not float(seconds) > 0:
            raise ValueError(f"seconds must be > 0, got {seconds!r}")
        for key, val in (("value_scale", value_scale), ("prior_temperature", prior_temperature),
                         ("c_puct", c_puct)):
            if not float(val) > 0:
                raise ValueError(f"{key} must be > 0, got {val!r}")
        self.simulations = int(simulations)
        self.seconds = None if seconds is None else float(seconds)
        self.rollout, self.prior = rollout, prior
        self.c_puct, self.value_scale = float(c_puct), float(value_scale)
        self.prior_temperature = float(prior_temperature)
        self.reuse = reuse
        self._legacy = None
        if rollout != "none" or prior != "greedy":
            from .legacy_mcts import MCTSAgent as PythonMCTS
            self._legacy = PythonMCTS(simulations=simulations, rollout=rollout, prior=prior,
                                      c_puct=c_puct, value_scale=value_scale,
                                      prior_temperature=prior_temperature, seed=seed, **legacy)
        else:
            for key, val in legacy.items():
                if key in ("leaves_per_tree", "max_rollout_turns", "rollouts_per_leaf"):
                    if int(val) < 1:
                        raise ValueError(f"{key} must be >= 1, got {val!r}")
                elif key == "c_uct":
                    if not float(val) > 0:
                        raise ValueError(f"c_uct must be > 0, got {val!r}")
                else:
                    raise TypeError(f"unexpected argument {key!r}")
        self.greedy = GreedyAgent(seed=int(self.rng.integers(2**31)))
        self._trees: dict[int, _Tree] = {}
        self._work: dict = {}
        self._e0: dict[int, float] = {}
        self.last_simulations = np.zeros(0, dtype=np.int64)
        self.name = spec_name(self.simulations, rollout, prior, self.seconds)

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self._trees.clear()
        if self._legacy is not None:
            self._legacy.reset(seed)
        if seed is not None:
            self.greedy.reset(seed + 1)

    def trees(self) -> dict:
        """The kept trees, by game index of the last batch (for tests and diagnostics)."""
        return self._trees

    # ------------------------------------------------------------------------------------------
    def choose(self, engine: Engine, state: State) -> np.ndarray:
        if self._legacy is not None:
            return self._legacy.choose(engine, state)
        prepare(state, MAX_DEPTH + 4)
        w = self._work.get(id(engine))
        if (w is None or w.engine is not engine or w.key[1] != state.history.shape[1]
                or w.key[2] != state.pieces.shape[2]):
            w = self._work[id(engine)] = SearchWork(engine, state, 6 + state.pieces.shape[2])
            w.stack_node = np.zeros(8, dtype=np.int64)
            w.stack_idx = np.zeros(8, dtype=np.int64)
            w.path_nodes = np.zeros(MAX_DEPTH, dtype=np.int64)
            w.path_edges = np.zeros(MAX_DEPTH, dtype=np.int64)
        e0 = self._e0.get(id(engine))
        if e0 is None:
            e0 = self._e0[id(engine)] = float(self.greedy.evaluate(engine, engine.initial_state(1))[0])
        tb, at = engine.kernel_tables, w.at
        b = len(state)
        out = np.empty(b, dtype=np.int64)
        sims = np.zeros(b, dtype=np.int64)
        deadline = None if self.seconds is None else time.perf_counter() + self.seconds
        arrays = state.arrays()
        for g in range(b):
            load_rows(arrays, g, w.W, 3)
            tree = self._trees.get(g)
            found = -1
            if tree is not None and self.reuse and tree.engine_id == id(engine):
                found = _m.find_node(tree.hdr, tree.nodes, tree.edges, state.key[g],
                                     int(state.turn[g]), len(w.stack_node), w.stack_node, w.stack_idx)
            if found >= 0:
                tree.hdr[_m.H_ROOT] = found
            else:
                cap = max(64, self.simulations + 8)
                tree = self._trees[g] = _Tree(cap, max(4 * engine.num_actions, cap * 48))
                tree.engine_id = id(engine)
                _m.expand_root(w.W, tb, at, tree.hdr, tree.nodes, tree.edges, w.buffers, e0,
                               self.value_scale, self.prior_temperature)
            tree.hdr[_m.H_SIMS] = 0
            root = tree.hdr[_m.H_ROOT]
            if not (tree.nodes[4][root] != 0 or tree.nodes[1][root] == 1):
                if deadline is None:
                    self._run(w, tree, tb, at, e0, self.simulations)
                else:
                    end = time.perf_counter() + (deadline - time.perf_counter()) / (b - g)
                    while True:
                        self._run(w, tree, tb, at, e0, CHUNK)
                        if time.perf_counter() >= end or tree.nodes[4][tree.hdr[_m.H_ROOT]] != 0:
                            break
            sims[g] = tree.hdr[_m.H_SIMS]
            out[g] = _m.best_action(tree.hdr, tree.nodes, tree.edges)
        self.last_simulations = sims
        return out

    def _run(self, w, tree: _Tree, tb, at, e0: float, sims: int) -> None:
        target = int(tree.hdr[_m.H_SIMS]) + sims
        while tree.hdr[_m.H_SIMS] < target:
            code = _m.search(w.W, tb, at, tree.hdr, tree.nodes, tree.edges, w.path_nodes,
                             w.path_edges, int(target - tree.hdr[_m.H_SIMS]), e0, self.value_scale,
                             self.prior_temperature, self.c_puct, w.buffers)
            if code == _m.OK:
                return
            tree.grow(tree.hdr[_m.H_NODES] + 1 >= len(tree.nodes[0]),
                      tree.hdr[_m.H_EDGES] + len(w.acts) >= len(tree.edges[0]))


def spec_name(simulations: int, rollout: str = "none", prior: str = "greedy",
              seconds: float | None = None) -> str:
    """The ``make_agent`` spec of an MCTS configuration: ``mcts:N[:ROLLOUT[:PRIOR]]`` or ``mcts:Ts``."""
    name = f"mcts:{seconds:g}s" if seconds is not None else f"mcts:{simulations}"
    if prior != "greedy":
        return f"{name}:{rollout}:{prior}"
    return name if rollout == "none" else f"{name}:{rollout}"


def parse_spec(arg: str | None) -> tuple[int, float | None, str, str]:
    """``N[:ROLLOUT[:PRIOR]]`` or ``Ts[...]`` (the part after ``mcts:``) → (simulations, seconds or
    None, rollout, prior); defaults 64, None, ``"none"``, ``"greedy"``."""
    parts = arg.split(":") if arg else []
    if len(parts) > 3:
        raise ValueError(f"mcts spec takes at most N:ROLLOUT:PRIOR, got {arg!r}")
    sims, seconds = 64, None
    if parts and parts[0]:
        head = parts[0]
        try:
            if head.endswith("s"):
                seconds = float(head[:-1])
            else:
                sims = int(head)
        except ValueError:
            raise ValueError(f"mcts simulations must be an integer (or a time such as 1s), "
                             f"got {head!r}") from None
    rollout = parts[1] if len(parts) > 1 and parts[1] else "none"
    prior = parts[2] if len(parts) > 2 and parts[2] else "greedy"
    return sims, seconds, rollout, prior


def _factory(arg, seed=None, **kw):
    """``mcts[:N[:ROLLOUT[:PRIOR]]]`` or ``mcts:Ts``: ``mcts:64``, ``mcts:1s``, ``mcts:64:random:uniform``."""
    sims, seconds, rollout, prior = parse_spec(arg)
    return MCTSAgent(simulations=sims, seconds=seconds, rollout=rollout, prior=prior, seed=seed, **kw)


register_agent("mcts", _factory)
