"""Monte Carlo tree search: PUCT (or UCT) over an injected evaluator, a solver for wins and
losses, trees kept between moves, and a budget in simulations or in time per move.

Everything is compiled (:mod:`agents.mcts.kernels`, :mod:`agents.mcts.netsearch`): a tree per
game as arrays, each simulation replayed on a work row with the engine's own step kernel.

**Evaluators** (:mod:`agents.mcts.evaluators`; ``MCTSAgent(simulations, evaluator=...)``, after
OpenSpiel's ``MCTSBot(..., evaluator, solve=True)``): what a new leaf's priors and value are.

* :class:`~agents.mcts.evaluators.GreedyEvaluator` (the default, ``mcts:N``): a node is expanded by
  scoring all its legal moves with the greedy agent's compiled scoring (win now, the exact check
  of the opponent's immediate wins, captures, the evaluation ``E`` of the position after the
  move). The prior of a move is a softmax of ``(captures * W_CAPTURE_VALUE + E_mover) /
  prior_temperature`` over the safe moves; unsafe moves get a prior of 0 and count as lost (in
  Berserk: one virtual losing visit). A new leaf is worth the greedy evaluation of its best safe
  move, from the side to move there, ``tanh((E_mover(best) + W_CAPTURE_VALUE * captures(best) -
  E0) / value_scale)`` (``E0``: the start position's evaluation for that side).
* :class:`~agents.mcts.evaluators.RolloutEvaluator` (``mcts:N:random``, ``mcts:N:greedy``,
  ``mcts:N:random:uniform``): the leaf value is the mean of ``rollouts`` playouts from the leaf
  (uniformly random moves, or the greedy agent's) of at most ``max_turns`` actions, run in the
  kernel on a work row: a finished playout is worth +1 / -1 (a draw 0), one cut at the cap the
  static value ``tanh((E - E0) / value_scale)`` of its last position. Priors are the greedy ones
  (with its lost and unsafe moves) or uniform (nothing scored below the root).
* :class:`~agents.mcts.evaluators.NetworkEvaluator` (``mcts:N:policy:PATH``): a trained MaskablePPO
  model (as the ``policy:PATH`` agent loads and checks it) gives the priors (its logits, masked to
  the legal moves, softmaxed) and the leaf value (its value head, which training fits to the
  return of the side to move: +1 win, -1 loss; clipped to [-1, 1]). The trees of the whole batch
  are searched together in rounds: one kernel call walks every tree to its leaves (up to
  ``leaves_per_tree`` per tree, spread by a virtual loss), one forward pass evaluates all those
  leaves, one kernel call expands them and backs the values up.

**Selection** maximises ``Q + c_puct * P * sqrt(N + 1) / (1 + n)`` (PUCT; an edge not yet visited
has ``Q`` = the node's value), or with ``selection="uct"`` (the default for uniform priors) UCB1:
unvisited edges first, one at random, then ``Q + c_uct * sqrt(ln N / n)``.

**The root** of every evaluator gets the greedy scoring's exact classification once (the others
do not score inner nodes): a winning move proves it (and is played without search, as is the only
legal move), moves that lose at once or let the opponent win at once are lost (in Berserk: one
virtual losing visit). So every evaluator takes a win in one and avoids a loss in one.

**Solver.** A node with a winning move found by the greedy scoring, or with an edge into a lost or
terminal losing position for the opponent, is a proven win; an edge into a lost position is a
proven loss, and a node whose every edge is lost is a proven loss; proofs go up the path, proven
edges are not explored again and a proven root stops its search.

**Tree reuse.** After a move the agent keeps its tree; on the next call it looks for the new
position (by position key and turn) among the nodes below the old root (its own move and the
opponent's reply, chains included) and searches on from there, with every visit count of the kept
subtree. ``reuse=False`` starts afresh each move. A kept tree that has grown past
``REUSE_MOVES`` searches' worth of nodes is dropped and the move searched afresh (kept subtrees
are not compacted: this bounds a game's memory).

**Budget.** ``simulations`` per move (``mcts:256``), or ``seconds`` per move (``mcts:1s``,
``mcts:0.25s``): simulations run in chunks (network: rounds) until the time is up (the first
always runs). The time is per move of each game, as a player's clock counts it: a call on a batch
of B games takes about B times ``seconds`` (the network search, which searches all trees at once,
has B times ``seconds`` for the batch), so a time budget means the same in a tournament's batched
games as in one game. Either budget is bounded: at most :data:`MAX_SIMULATIONS` simulations a move
(a time budget stops there too, so a tree's memory is bounded) and :data:`MAX_SECONDS` a move (both
defined with the spec grammar, :mod:`agents.spec`); a budget beyond them, ``inf`` or ``nan`` is
refused when the spec is read or the agent built, as is a tree that would not fit the memory
available. The search runs in slices of at most :data:`SLICE` simulations, so
Ctrl-C stops it within a fraction of a second.

**The move played**: a winning move if the root is proven won, else the most visited edge that is
not a proven loss (ties: higher mean value, then higher prior).

**A known limit of the greedy evaluator**: its value ``tanh((E - E0) / value_scale)`` rewards the
king's approach to an escape square, and on Alea Evangelii's 19×19 that term spans 9 points of ``E``:
the value saturates (+0.98 for the defenders with the king beside a corner) and a larger search
walks the king further towards a corner, where the hostile corner and edge trap him (there
``mcts:300`` defends worse than ``mcts:100``; benchmarks/RESULTS.md, "Why mcts:300 defends worse in
Alea").

**Specs**: ``mcts:N`` / ``mcts:Ts`` (greedy evaluator), ``mcts:N:random`` (greedy priors, random
playouts), ``mcts:N:greedy`` (greedy priors, greedy playouts), ``mcts:N:random:uniform`` (uniform
priors, UCT, random playouts: the textbook algorithm), ``mcts:N:greedy:uniform``,
``mcts:N:policy:PATH`` (network evaluator; the path is the rest of the spec; ``unpickle-policy:PATH``
for a model that only unpickling loads, the user's opt-in). :class:`agents.spec.AgentSpec` reads
them; the factory builds from its fields. Playouts are 40 actions at most, one per leaf.

Version history: 0.4 evaluators injected; rollouts compiled (the Python search of 0.2 is kept as
``legacy_mcts:N`` for strength comparisons until 0.5, which removed it: replay those in a checkout
of commit 04e6598); the network evaluator; the root's moves checked
exactly for every evaluator (0.3's ``mcts:N:random:uniform`` did not, and could miss a win in one
with few simulations or walk into a loss in one). 0.3 compiled search, tree reuse, time budgets;
0.2 greedy priors, heuristic leaf values, the solver; 0.1 plain UCT with random rollouts
(``mcts:N:random:uniform``). Greedy playouts (``RolloutEvaluator(playout="greedy")``) choose as
the greedy agent does since its 0.4 (the opponent check run lazily: moves of the same scores,
other random tie-breaks).
"""

from __future__ import annotations

import time

import numpy as np

from tafl_env.engine import Engine, State
from tafl_env.engine.rows import load_rows
from tafl_env.errors import preview
from tafl_env.memory import fits

from ..base import Agent, register_agent
from ..spec import DEFAULT_SIMULATIONS, MAX_SECONDS, MAX_SIMULATIONS, PRIORS, ROLLOUTS, AgentSpec, AgentSpecError
from ..greedy.agent import VALUE_SCALE, GreedyAgent, SearchWork, prepare
from . import kernels as _m
from .evaluators import Evaluator, GreedyEvaluator, NetworkEvaluator, RolloutEvaluator
from . import netsearch as _net
from .forest import Forest, round_buffers

W_CAPTURE_VALUE = _m.W_CAPTURE_VALUE
_SELECTIONS = ("puct", "uct")
MAX_DEPTH = 64          # plies below the root a simulation may walk
CHUNK = 32              # simulations per kernel call under a time budget
SLICE = 1024            # simulations per kernel call at most: Ctrl-C is seen between calls

EDGES_PER_NODE = 48     # a fresh tree's room for edges per node (it grows when full)

LOAD_ROWS = 5           # work rows given the game's whole history (the path, playout, scoring rows)


def tree_bytes(simulations: int) -> int:
    """The memory of a fresh tree for ``simulations`` (as :meth:`MCTSAgent.choose` sizes it)."""
    cap = max(64, simulations + 8)
    return (cap * sum(a.itemsize for a in _m.new_nodes(1))
            + EDGES_PER_NODE * cap * sum(a.itemsize for a in _m.new_edges(1)))


REUSE_MOVES = 4
"""A kept tree is searched on while it holds at most this many moves' worth of nodes (its last
search's simulations, at least 256, times this); a bigger one is dropped and the move searched
afresh. Kept subtrees are not compacted, so without a bound a tree grew by a whole search every
move: 10 games of ``mcts:10000`` filled 15 GB within a Tablut game and were killed."""


def _small_enough(hdr: np.ndarray) -> bool:
    return int(hdr[_m.H_NODES]) <= REUSE_MOVES * max(int(hdr[_m.H_SIMS]), 256)


class _Tree:
    """One game's tree: node and edge arrays that grow by doubling (or a view of a forest row)."""

    def __init__(self, nodes: int, edges: int, arrays: tuple | None = None):
        if arrays is not None:
            self.hdr, self.nodes, self.edges = arrays
        else:
            self.hdr = np.zeros(_m.HDR_SIZE, dtype=np.int64)
            self.nodes = _m.new_nodes(nodes)
            self.edges = _m.new_edges(edges)
        self.engine_id = None

    def grow(self, nodes: bool, edges: bool) -> None:
        if nodes:
            self.nodes = _m.Nodes._make(np.concatenate([a, np.zeros_like(a)]) for a in self.nodes)
        if edges:
            self.edges = _m.Edges._make(np.concatenate([a, np.zeros_like(a)]) for a in self.edges)

    def root_visits(self) -> int:
        return int(self.nodes.visits[self.hdr[_m.H_ROOT]])


class _Forest(Forest):
    """The batch's trees for the network search (:class:`~.forest.Forest`), and the engine whose
    positions they hold; game ``g``'s tree as a :class:`_Tree`."""

    def __init__(self, games: int, nodes: int, edges: int, engine: Engine):
        super().__init__(games, nodes, edges)
        self.engine_id = id(engine)

    def tree(self, g: int) -> _Tree:
        return _Tree(0, 0, super().tree(g))


class MCTSAgent(Agent):
    """MCTS with an injected evaluator and a solver (see the module docstring).

    Args:
        simulations: simulations per game and move (ignored when ``seconds`` is given).
        evaluator: :class:`~agents.mcts.evaluators.GreedyEvaluator` (default),
            :class:`~agents.mcts.evaluators.RolloutEvaluator` or
            :class:`~agents.mcts.evaluators.NetworkEvaluator`.
        seconds: time per move of each game (a batch of B games takes about B times as long).
        selection: ``"puct"`` or ``"uct"`` (UCB1, unvisited moves first); default UCT for uniform
            priors, PUCT otherwise.
        c_puct, c_uct: the selections' exploration constants.
        value_scale, prior_temperature: scales of the greedy values and priors (evaluation units).
        leaves_per_tree: leaves per tree and network forward pass (network evaluator only).
        reuse: keep the tree between moves.
    """

    name = "mcts"

    def __init__(self, simulations: int = 64, evaluator: Evaluator | None = None,
                 seconds: float | None = None, selection: str | None = None,
                 c_puct: float = 1.5, c_uct: float = 1.4, value_scale: float = VALUE_SCALE,
                 prior_temperature: float = 1.0, leaves_per_tree: int = 8, reuse: bool = True,
                 seed: int | None = None):
        super().__init__(seed)
        if isinstance(simulations, bool) or not 1 <= int(simulations) <= MAX_SIMULATIONS:
            raise ValueError(f"simulations must be from 1 to {MAX_SIMULATIONS}, got {simulations!r}")
        if seconds is not None and not 0 < float(seconds) <= MAX_SECONDS:
            raise ValueError(f"seconds per move must be > 0 and <= {MAX_SECONDS:g}, got {seconds!r}")
        if seconds is None:
            fits(tree_bytes(int(simulations)), f"mcts:{int(simulations)} (a search tree per game)")
        for key, val in (("value_scale", value_scale), ("prior_temperature", prior_temperature),
                         ("c_puct", c_puct), ("c_uct", c_uct)):
            if not 0 < float(val) < float("inf"):
                raise ValueError(f"{key} must be a finite number > 0, got {val!r}")
        for key, val in (("leaves_per_tree", leaves_per_tree),):
            if val is not None and not 1 <= int(val) <= MAX_SIMULATIONS:
                raise ValueError(f"{key} must be from 1 to {MAX_SIMULATIONS}, got {val!r}")
        if evaluator is None:
            evaluator = GreedyEvaluator()
        if not isinstance(evaluator, Evaluator):
            raise TypeError(f"evaluator must be an agents.mcts.evaluators.Evaluator, got {evaluator!r}")
        if selection is None:
            selection = "uct" if evaluator.prior == "uniform" else "puct"
        if selection not in _SELECTIONS:
            raise ValueError(f"selection must be one of {_SELECTIONS}, got {selection!r}")
        self.simulations = int(simulations)
        self.seconds = None if seconds is None else float(seconds)
        self.evaluator, self.selection = evaluator, selection
        self.rollout, self.prior = evaluator.playout, evaluator.prior
        self.c_puct, self.c_uct = float(c_puct), float(c_uct)
        self.value_scale = float(value_scale)
        self.prior_temperature = float(prior_temperature)
        self.leaves_per_tree = int(leaves_per_tree)
        self.reuse = reuse
        self.greedy = GreedyAgent(seed=int(self.rng.integers(2**31)))
        self._seed_kernel_rng()
        self._cfg = evaluator.kernel_config(selection)
        self._trees: dict[int, _Tree] = {}
        self._forest: _Forest | None = None
        self._work: dict = {}
        self._checked: set = set()
        self._clock = time.perf_counter
        self.last_simulations = np.zeros(0, dtype=np.int64)
        model = evaluator.agent.name if isinstance(evaluator, NetworkEvaluator) else None
        self.name = spec_name(self.simulations, self.rollout, self.prior, self.seconds, model=model)

    def _seed_kernel_rng(self) -> None:
        # the playouts' and UCT's xorshift state, drawn from the agent's generator
        self._krng = self.rng.integers(1, 2**63, size=1, dtype=np.int64).astype(np.uint64)

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self._trees.clear()
        self._forest = None
        if seed is not None:
            self.greedy.reset(seed + 1)
            self._seed_kernel_rng()

    def check_rules(self, rules) -> str | None:
        return self.evaluator.check_rules(rules)

    def root_policy(self, g: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Game ``g``'s root after the last :meth:`choose`: its moves and their visit counts (a
        proven loss counts 0), or None where the last move was not searched (a proven root, a
        single legal move) -- a training target, as the AZ warm start uses it."""
        tree = self.trees().get(g)
        if tree is None:
            return None
        root = int(tree.hdr[_m.H_ROOT])
        base, cnt = int(tree.nodes.first[root]), int(tree.nodes.count[root])
        visits = tree.edges.visits[base:base + cnt].astype(np.float64)
        visits[tree.edges.lost[base:base + cnt] != 0] = 0.0
        if tree.nodes.proven[root] != 0 or cnt < 2 or visits.sum() <= 0:
            return None
        return tree.edges.action[base:base + cnt].astype(np.int64), visits

    def trees(self) -> dict:
        """The kept trees, by game index of the last batch (for tests and diagnostics)."""
        if self._forest is not None:
            return {g: self._forest.tree(g) for g in np.flatnonzero(self._forest.valid)}
        return self._trees

    # ------------------------------------------------------------------------------------------
    def _setup(self, engine: Engine, state: State) -> tuple:
        extra = MAX_DEPTH + 4 + (self._cfg[_m.C_MAX_TURNS] if self.rollout != "none" else 0)
        prepare(state, int(extra))
        w = self._work.get(id(engine))
        if (w is None or w.engine is not engine or w.key[1] != state.history.shape[1]
                or w.key[2] != state.pieces.shape[2]):
            # rows: root, path, playout, the scoring's child and reply rows, berserk chains
            w = self._work[id(engine)] = SearchWork(engine, state, 7 + state.pieces.shape[2])
            w.stack_node = np.zeros(8, dtype=np.int64)
            w.stack_idx = np.zeros(8, dtype=np.int64)
            w.path_nodes = np.zeros(MAX_DEPTH, dtype=np.int64)
            w.path_edges = np.zeros(MAX_DEPTH, dtype=np.int64)
        return w, self.greedy.start_evaluation(engine)

    def choose(self, engine: Engine, state: State) -> np.ndarray:
        if engine.rules not in self._checked:
            self.evaluator.check_rules(engine.rules)
            self._checked.add(engine.rules)
        if not self.evaluator.compiled:
            return self._choose_batched(engine, state)
        w, e0 = self._setup(engine, state)
        tb, at = engine.kernel_tables, w.at
        b = len(state)
        out = np.empty(b, dtype=np.int64)
        sims = np.zeros(b, dtype=np.int64)
        arrays = state.arrays()
        prior = self._cfg[_m.C_PRIOR]
        for g in range(b):
            load_rows(arrays, g, w.W, LOAD_ROWS)
            tree = self._trees.get(g)
            found = -1
            if (tree is not None and self.reuse and tree.engine_id == id(engine)
                    and _small_enough(tree.hdr)):
                found = _m.find_node(tree.hdr, tree.nodes, tree.edges, state.key[g],
                                     int(state.turn[g]), len(w.stack_node), w.stack_node, w.stack_idx)
            if found >= 0:
                tree.hdr[_m.H_ROOT] = found
            else:
                cap = max(64, self.simulations + 8)
                tree = self._trees[g] = _Tree(cap, max(4 * engine.num_actions, cap * EDGES_PER_NODE))
                tree.engine_id = id(engine)
                _m.expand_root(w.W, tb, at, tree.hdr, tree.nodes, tree.edges, w.buffers, e0,
                               self.value_scale, self.prior_temperature, prior)
            # greedy priors classify every node they expand; a root of uniform priors is checked
            if prior != _m.PRIOR_GREEDY and tree.hdr[_m.H_CHECKED] != tree.hdr[_m.H_ROOT]:
                _m.check_root(w.W, tb, at, tree.hdr, tree.nodes, tree.edges, w.buffers)
            tree.hdr[_m.H_SIMS] = 0
            root = tree.hdr[_m.H_ROOT]
            if not (tree.nodes.proven[root] != 0 or tree.nodes.count[root] == 1):
                if self.seconds is None:
                    self._run(w, tree, tb, at, e0, self.simulations)
                else:
                    end = self._clock() + self.seconds
                    while True:
                        self._run(w, tree, tb, at, e0, CHUNK)
                        if (self._clock() >= end or tree.nodes.proven[tree.hdr[_m.H_ROOT]] != 0
                                or tree.hdr[_m.H_SIMS] >= MAX_SIMULATIONS):
                            break
            sims[g] = tree.hdr[_m.H_SIMS]
            out[g] = _m.best_action(tree.hdr, tree.nodes, tree.edges)
        self.last_simulations = sims
        return out

    def _run(self, w, tree: _Tree, tb, at, e0: float, sims: int) -> None:
        target = int(tree.hdr[_m.H_SIMS]) + sims
        while tree.hdr[_m.H_SIMS] < target:
            done = int(tree.hdr[_m.H_SIMS])
            ask = min(SLICE, target - done)
            code = _m.search(w.W, tb, at, tree.hdr, tree.nodes, tree.edges, w.path_nodes,
                             w.path_edges, ask, e0, self.value_scale,
                             self.prior_temperature, self.c_puct, w.buffers, self._cfg, self.c_uct,
                             self._krng)
            if code == _m.OK:
                if tree.hdr[_m.H_SIMS] < done + ask:
                    return      # stopped early: the root is proven
                continue
            tree.grow(tree.hdr[_m.H_NODES] + 1 >= len(tree.nodes.first),
                      tree.hdr[_m.H_EDGES] + len(w.acts) >= len(tree.edges.action))

    # --- the network evaluator: every tree of the batch searched in rounds ---------------------
    def _choose_batched(self, engine: Engine, state: State) -> np.ndarray:
        w, e0 = self._setup(engine, state)
        tb, at = engine.kernel_tables, w.at
        b = len(state)
        lpt = self.leaves_per_tree
        f = self._forest
        if f is None or f.engine_id != id(engine):
            cap = max(64, self.simulations + 2 * lpt + 8)
            f = self._forest = _Forest(b, cap, cap * EDGES_PER_NODE, engine)
        elif f.games < b:
            f.grow(games=b - f.games)
        arrays = state.arrays()
        fresh = []
        for g in range(b):
            tree = f.tree(g)
            found = -1
            if f.valid[g] and self.reuse and _small_enough(tree.hdr):
                found = _m.find_node(tree.hdr, tree.nodes, tree.edges, state.key[g],
                                     int(state.turn[g]), len(w.stack_node), w.stack_node, w.stack_idx)
            if found >= 0:
                tree.hdr[_m.H_ROOT] = found
                if tree.hdr[_m.H_CHECKED] != found:
                    load_rows(arrays, g, w.W, LOAD_ROWS)
                    _m.check_root(w.W, tb, at, tree.hdr, tree.nodes, tree.edges, w.buffers)
            else:
                load_rows(arrays, g, w.W, 1)
                _m.expand_root(w.W, tb, at, tree.hdr, tree.nodes, tree.edges, w.buffers, e0,
                               self.value_scale, self.prior_temperature, -1)
                f.valid[g] = True
                fresh.append(g)
            tree.hdr[_m.H_SIMS] = 0
        f.valid[b:] = False
        bufs = round_buffers(state, b, lpt, MAX_DEPTH)
        budget = np.full(b, self.simulations if self.seconds is None else MAX_SIMULATIONS, dtype=np.int64)
        rules = _net.puct_rules(b, self.c_puct)
        deadline = None if self.seconds is None else self._clock() + self.seconds * b
        while True:
            nl, started = _net.search_round(f, b, engine, w, bufs, budget, lpt, rules,
                                            self.evaluator.evaluate, False)
            hdr, nodes, edges = f.rows(b)
            for g in fresh:     # roots just expanded: their moves checked, an only move played
                tree = f.tree(g)
                load_rows(arrays, g, w.W, LOAD_ROWS)
                _m.check_root(w.W, tb, at, tree.hdr, tree.nodes, tree.edges, w.buffers)
            fresh = []
            roots = hdr[:, _m.H_ROOT]
            budget[nodes.count[np.arange(b), roots] == 1] = 0
            if not (nl or started):
                break
            if deadline is not None and self._clock() >= deadline:
                break
        out = np.empty(b, dtype=np.int64)
        for g in range(b):
            tree = f.tree(g)
            out[g] = _m.best_action(tree.hdr, tree.nodes, tree.edges)
        self.last_simulations = f.hdr[:b, _m.H_SIMS].copy()
        return out


def evaluator_of_spec(rollout: str, prior: str) -> Evaluator:
    """The evaluator that a spec's ``ROLLOUT`` and ``PRIOR`` parts name (``mcts:N:random:uniform``);
    :meth:`AgentSpec.parse <agents.spec.AgentSpec.parse>` has checked a spec's already."""
    if rollout not in ROLLOUTS:
        raise ValueError(f"rollout must be one of {ROLLOUTS}, got {rollout!r}")
    if prior not in PRIORS:
        raise ValueError(f"prior must be one of {PRIORS}, got {prior!r}")
    if rollout == "none":
        if prior == "uniform":
            raise ValueError("prior='uniform' needs rollouts (rollout='random' or 'greedy')")
        return GreedyEvaluator()
    return RolloutEvaluator(playout=rollout, prior=prior)


def spec_name(simulations: int, rollout: str = "none", prior: str = "greedy",
              seconds: float | None = None, policy: str | None = None, model: str | None = None) -> str:
    """The ``make_agent`` spec of an MCTS configuration: ``mcts:N[:ROLLOUT[:PRIOR]]``,
    ``mcts:N:policy:PATH`` (``policy``: the path; ``model``: the network's whole spec, such as
    ``unpickle-policy:PATH``), with ``Ts`` for ``N`` under a time budget."""
    name = f"mcts:{seconds:g}s" if seconds is not None else f"mcts:{simulations}"
    if policy is not None:
        model = f"policy:{policy}"
    if model is not None:
        return f"{name}:{model}"
    if prior != "greedy":
        return f"{name}:{rollout}:{prior}"
    return name if rollout == "none" else f"{name}:{rollout}"


def parse_spec(arg: str | None) -> tuple[int, float | None, str, str]:
    """``N[:ROLLOUT[:PRIOR]]`` or ``Ts[...]`` (the part after ``mcts:``; ``None``: plain ``mcts``) →
    (simulations, seconds or None, rollout, prior), as :meth:`AgentSpec.parse
    <agents.spec.AgentSpec.parse>` reads ``mcts:ARG`` (and refuses it: an empty part, a budget out of
    bounds, an unknown rollout or prior).

    >>> parse_spec("12:random:uniform"), parse_spec("0.5s")
    ((12, None, 'random', 'uniform'), (64, 0.5, 'none', 'greedy'))
    """
    spec = AgentSpec.parse("mcts" if arg is None else f"mcts:{arg}")
    if spec.inner is not None:
        raise AgentSpecError(f"{preview(spec.text)} names a network evaluator; parse_spec reads N[:ROLLOUT[:PRIOR]]")
    return spec.simulations or DEFAULT_SIMULATIONS, spec.seconds, spec.rollout, spec.prior


def _network_evaluator(model: AgentSpec) -> NetworkEvaluator:
    """The evaluator of ``mcts:N:policy:PATH`` (``unpickle-policy:PATH``: the user's opt-in)."""
    if model.kind == "unpickle-policy":
        from ..ppo.policy import PolicyAgent

        return NetworkEvaluator(PolicyAgent(model.path, unpickle=True))
    return NetworkEvaluator(model.path)


def _factory(spec: AgentSpec, seed=None, **kw):
    """The ``mcts`` kind from its parsed spec (:mod:`agents.spec`): ``mcts:64``, ``mcts:1s``,
    ``mcts:64:random:uniform``, ``mcts:64:policy:model.zip``."""
    if spec.inner is not None:
        evaluator = _network_evaluator(spec.inner)
    else:
        evaluator = evaluator_of_spec(spec.rollout, spec.prior)
    budget = {"simulations": spec.simulations} if spec.seconds is None else {"seconds": spec.seconds}
    return MCTSAgent(evaluator=evaluator, seed=seed, **budget, **kw)


register_agent("mcts", _factory, reads_spec=True)
