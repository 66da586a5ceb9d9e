"""LEGACY COPY (the MCTS of before the compiled search), kept only for the strength comparison
(spec ``legacy_mcts:N``, not loaded by default).

Monte Carlo tree search over the batched engine: UCT/PUCT with greedy priors, a solver for
wins and losses, and optional rollouts.

One tree per game and per call to :meth:`MCTSAgent.act` (no reuse between calls). Nodes hold a
batch-of-one :class:`~tafl_env.engine.State`; selection and backup run in Python per tree, but
everything that touches the engine is batched across all trees of the call.

**Expansion and priors** (``prior="greedy"``, the default). A node is expanded by scoring all its
legal moves with the greedy agent (:meth:`agents.greedy.GreedyAgent.score_moves`, one batched call
for every node expanded in a round): whether the move wins at once, whether it lets the opponent
win at once ("unsafe", checked exactly), what it captures and the evaluation ``E`` of the position
after it. The prior of a move is a softmax of ``(captures * W_CAPTURE_VALUE + E_mover) / prior_temperature``
over the safe moves; unsafe moves get a prior of 0 and count as lost (see the solver).
Selection maximises the PUCT score ``Q + c_puct * P * sqrt(N) / (1 + n)``; an edge not yet visited
has ``Q`` = the node's own value (first-play urgency). With ``prior="uniform"`` expansion only
lists the legal moves and selection is plain UCT (UCB1: unvisited moves first, in a random order,
then ``Q + c_uct * sqrt(ln N / n)``), the textbook algorithm, kept for comparison.

**Leaf values.** ``rollout="none"`` (default): a new leaf is worth the greedy evaluation of its best
move, from the side to move there, ``tanh((E_mover(best) + W_CAPTURE_VALUE * captures(best) - E0) / value_scale)``
(``E0``: the evaluation of the start position for that side), i.e. a one-ply look-ahead whose
opponent replies are checked for immediate wins. ``rollout="random"`` or ``"greedy"``: the leaf is
played out (``rollouts_per_leaf`` copies, one engine batch for all leaves of the round) with
uniformly random moves or the greedy agent for at most ``max_rollout_turns`` actions; a finished
rollout is worth ±1 (a draw 0), an unfinished one the static value ``tanh((E - E0) / value_scale)``
of its last position.

**Solver.** A node whose side to move has a winning move is a proven win; an edge into a lost
position (including an unsafe move outside Berserk, where the check is exact for a whole chain)
is a proven loss, and a node whose every edge is a proven loss is a proven loss. Proofs propagate
up the path; proven edges are never explored again, a proven root stops its search. In Berserk an
unsafe move starts with one virtual losing visit instead (a chain may still go on), so it is
avoided unless the search shows otherwise.

**Values and signs.** Each node stores, per edge, visit counts and value sums from the point of
view of its own side to move. Inside a berserk chain the same side moves again (pass is an action
like any other), so signs are read from the states, never from the depth. Several leaves per tree
are selected in each round (``leaves_per_tree``), spread by a virtual loss that backup removes.

**The move played**: a winning move if the root is a proven win (a win in one is played without
search, as is the only legal move), else the most visited edge that is not a proven loss (ties:
higher mean value, then higher prior). Budget: ``simulations`` leaf evaluations per game (nodes
expanded or terminal positions reached) below the root.

Version history: 0.2 greedy priors, heuristic leaf values, the solver (the default); 0.1 plain
UCT with random rollouts (now ``prior="uniform", rollout="random"``, spec ``mcts:N:random:uniform``).
"""

from __future__ import annotations

import math

import numpy as np

from tafl_env.engine import Engine, State

from .base import Agent, register_agent
from .legacy_greedy import GreedyAgent
from .search.tables import LOSS, UNSAFE, WIN

W_CAPTURE_VALUE = 1.0   # a capture's weight in priors and leaf values (on top of E's material term)
_ROLLOUTS = ("none", "random", "greedy")
_PRIORS = ("greedy", "uniform")


class _Node:
    """A position in the tree. Edge arrays are indexed like ``actions``; values are from ``to_move``."""

    __slots__ = ("state", "to_move", "terminal", "winner", "proven", "value", "actions", "prior",
                 "child", "cn", "cw", "lost", "order")

    def __init__(self) -> None:
        self.state: State | None = None
        self.to_move = -1
        self.terminal = False
        self.winner = -1
        self.proven = 0          # +1: the side to move wins, -1: it loses (game-theoretic)
        self.value = 0.0         # heuristic value for the side to move (first-play urgency)
        self.actions: np.ndarray | None = None
        self.prior: np.ndarray | None = None
        self.child: list = []
        self.cn: np.ndarray | None = None
        self.cw: np.ndarray | None = None
        self.lost: np.ndarray | None = None
        self.order: list | None = None   # UCT only: unvisited edges, in random order

    @property
    def expanded(self) -> bool:
        return self.actions is not None

    def known_value(self, side: int) -> float | None:
        """The exact value of this node for ``side`` when it is terminal or proven, else None."""
        if self.terminal:
            if self.winner == 2 or self.winner < 0:
                return 0.0
            return 1.0 if self.winner == side else -1.0
        if self.proven:
            return float(self.proven) if self.to_move == side else -float(self.proven)
        return None


class MCTSAgent(Agent):
    """MCTS with greedy priors and a solver (see the module docstring).

    Args:
        simulations: leaf evaluations per game and move.
        rollout: ``"none"`` (greedy leaf value), ``"random"`` or ``"greedy"`` playouts.
        prior: ``"greedy"`` (PUCT over greedy priors) or ``"uniform"`` (plain UCT).
        c_puct: exploration constant of PUCT; ``c_uct`` that of UCT.
        max_rollout_turns: actions per playout before it is cut and valued statically.
        rollouts_per_leaf: playouts per leaf (averaged).
        leaves_per_tree: leaves selected per tree and round (one engine batch per round).
        value_scale, prior_temperature: the scales of leaf values and priors (evaluation units).
    """

    name = "mcts"

    def __init__(self, simulations: int = 64, rollout: str = "none", prior: str = "greedy",
                 c_puct: float = 1.5, c_uct: float = 1.4, max_rollout_turns: int = 40,
                 rollouts_per_leaf: int = 1, leaves_per_tree: int = 8, value_scale: float = 5.0,
                 prior_temperature: float = 1.0, seed: int | None = None):
        super().__init__(seed)
        if rollout not in _ROLLOUTS:
            raise ValueError(f"rollout must be one of {_ROLLOUTS}, got {rollout!r}")
        if prior not in _PRIORS:
            raise ValueError(f"prior must be one of {_PRIORS}, got {prior!r}")
        if prior == "uniform" and rollout == "none":
            raise ValueError("prior='uniform' needs rollouts (rollout='random' or 'greedy')")
        if int(simulations) < 1:
            raise ValueError(f"simulations must be >= 1, got {simulations!r}")
        for key, val in (("max_rollout_turns", max_rollout_turns), ("rollouts_per_leaf", rollouts_per_leaf),
                         ("leaves_per_tree", leaves_per_tree)):
            if int(val) < 1:
                raise ValueError(f"{key} must be >= 1, got {val!r}")
        for key, val in (("value_scale", value_scale), ("prior_temperature", prior_temperature),
                         ("c_puct", c_puct), ("c_uct", c_uct)):
            if not float(val) > 0:
                raise ValueError(f"{key} must be > 0, got {val!r}")
        self.simulations = int(simulations)
        self.rollout = rollout
        self.prior = prior
        self.c_puct, self.c_uct = float(c_puct), float(c_uct)
        self.max_rollout_turns = int(max_rollout_turns)
        self.rollouts_per_leaf = int(rollouts_per_leaf)
        self.leaves_per_tree = int(leaves_per_tree)
        self.value_scale = float(value_scale)
        self.prior_temperature = float(prior_temperature)
        self.greedy = GreedyAgent(seed=int(self.rng.integers(2**31)))
        self._e0_cache: dict[int, float] = {}
        self.name = spec_name(self.simulations, rollout, prior)

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        if seed is not None:
            self.greedy.reset(seed + 1)

    # --- public entry ---------------------------------------------------------------------------
    def choose(self, engine: Engine, state: State) -> np.ndarray:
        out = np.full(len(state), -1, dtype=np.int64)
        roots = [_Node() for _ in range(len(state))]
        for g, root in enumerate(roots):
            root.state = state.take([g])
            root.to_move = int(state.to_move[g])
        self._expand(engine, roots)
        searching = []
        for g, root in enumerate(roots):
            if root.proven or len(root.actions) == 1:
                out[g] = self._best_edge_action(root)
            else:
                searching.append(g)
        if searching:
            self.search(engine, [roots[g] for g in searching])
            for g in searching:
                out[g] = self._best_edge_action(roots[g])
        return out

    def search(self, engine: Engine, roots: list[_Node]) -> None:
        """Runs the simulations of every (expanded) root, batched across trees."""
        done_sims = [0] * len(roots)
        while True:
            pending: dict[int, tuple[_Node, _Node, int, list]] = {}   # id(leaf) -> (parent, leaf, edge, paths)
            active = False
            for t, root in enumerate(roots):
                for _ in range(min(self.leaves_per_tree, self.simulations - done_sims[t])):
                    if root.proven:
                        break
                    path, leaf = self._select(root)
                    done_sims[t] += 1
                    active = True
                    if leaf.state is not None:       # terminal or proven: the value is exact
                        side = path[-1][0].to_move
                        self._backup(path, leaf.known_value(side), side, virtual=True)
                        self._propagate(path)
                        continue
                    key = id(leaf)
                    if key in pending:
                        pending[key][3].append(path)
                    else:
                        parent, edge = path[-1]
                        pending[key] = (parent, leaf, edge, [path])
            if pending:
                self._evaluate_leaves(engine, list(pending.values()))
            if not active:
                return

    # --- tree walk ---------------------------------------------------------------------------------
    def _select(self, root: _Node) -> tuple[list, _Node]:
        """Walks down from the root to a leaf (a new child, or a terminal / proven node), adding a
        virtual loss on every edge. Returns the path [(node, edge), ...] and the leaf."""
        node, path = root, []
        while True:
            e = self._pick_edge(node)
            path.append((node, e))
            node.cn[e] += 1
            node.cw[e] -= 1
            child = node.child[e]
            if child is None:
                child = node.child[e] = _Node()
                return path, child
            if child.terminal or child.proven or not child.expanded:
                return path, child
            node = child

    def _pick_edge(self, node: _Node) -> int:
        if self.prior == "uniform":
            if node.order:
                return node.order.pop()
            q = node.cw / np.maximum(node.cn, 1)
            u = q + self.c_uct * np.sqrt(math.log(max(node.cn.sum(), 1)) / np.maximum(node.cn, 1))
        else:
            q = np.where(node.cn > 0, node.cw / np.maximum(node.cn, 1), node.value)
            u = q + self.c_puct * node.prior * math.sqrt(node.cn.sum() + 1) / (1 + node.cn)
        if not node.lost.all():
            u = np.where(node.lost, -np.inf, u)
        return int(np.argmax(u))

    def _backup(self, path: list, value: float, side: int, virtual: bool) -> None:
        """Adds ``value`` (from ``side``'s point of view) to every edge of the path; with
        ``virtual``, the provisional loss of selection is replaced (the visit stays)."""
        for node, e in path:
            v = value if node.to_move == side else -value
            node.cw[e] += v + (1.0 if virtual else 0.0)

    @staticmethod
    def _propagate(path: list) -> None:
        """Pushes proofs up the path: a winning edge proves its node won, a node whose edges are
        all lost is lost."""
        for node, e in reversed(path):
            child = node.child[e]
            v = child.known_value(node.to_move) if child is not None else None
            if v is None or v == 0.0:
                return
            if v > 0:
                node.proven = 1
            else:
                node.lost[e] = True
                if not node.lost.all():
                    return
                node.proven = -1

    def _best_edge_action(self, root: _Node) -> int:
        if root.proven > 0:
            for e, c in enumerate(root.child):
                if c is not None and c.known_value(root.to_move) == 1.0:
                    return int(root.actions[e])
            return int(root.actions[int(np.argmax(root.prior))])   # a win in one, found at expansion
        ok = ~root.lost if not root.lost.all() else np.ones(len(root.actions), dtype=bool)
        q = root.cw / np.maximum(root.cn, 1)
        key = np.lexsort((root.prior, q, root.cn))[::-1]
        best = next(e for e in key if ok[e])
        return int(root.actions[best])

    # --- expansion and leaf values -------------------------------------------------------------------
    def _e0(self, engine: Engine, side: int) -> float:
        key = id(engine)
        if key not in self._e0_cache:
            self._e0_cache[key] = float(self.greedy.evaluate(engine, engine.initial_state(1))[0])
        return self._e0_cache[key] if side == 1 else -self._e0_cache[key]

    def _expand(self, engine: Engine, nodes: list[_Node]) -> None:
        """Fills the edges of running nodes (one batched call) and sets their values and proofs."""
        live = [nd for nd in nodes if not nd.terminal]
        if not live:
            return
        st = State.concatenate([nd.state for nd in live]) if len(live) > 1 else live[0].state
        if self.prior == "uniform":
            mask = engine.legal_action_mask(st)
            for i, nd in enumerate(live):
                acts = np.flatnonzero(mask[i])
                k = len(acts)
                nd.actions, nd.prior = acts, np.full(k, 1.0 / k)
                nd.child, nd.cn, nd.cw = [None] * k, np.zeros(k), np.zeros(k)
                nd.lost = np.zeros(k, dtype=bool)
                nd.order = list(self.rng.permutation(k))
            return
        scores, parent, action, caps, e_mover = self.greedy.score_moves(engine, st, details=True)
        bounds = np.searchsorted(parent, np.arange(len(live) + 1))
        berserk = engine.rules.berserk
        for i, nd in enumerate(live):
            sl = slice(bounds[i], bounds[i + 1])
            sc, acts = scores[sl], action[sl]
            k = len(acts)
            win = sc >= WIN / 2
            lost_now = sc <= LOSS / 2
            unsafe = (sc <= UNSAFE / 2) & ~lost_now
            safe = ~(unsafe | lost_now)
            strength = W_CAPTURE_VALUE * caps[sl] + e_mover[sl]
            noise = self.rng.random(k) * 1e-6        # splits exact ties at random
            # priors over the safe moves; when there are none, over the unsafe ones (the least bad)
            pool = safe if safe.any() else (unsafe if unsafe.any() else np.ones(k, dtype=bool))
            logits = np.where(pool, (strength + noise) / self.prior_temperature, -np.inf)
            p = np.exp(logits - logits[pool].max())
            prior = p / p.sum()
            nd.actions, nd.prior = acts, prior
            nd.child, nd.cn, nd.cw = [None] * k, np.zeros(k), np.zeros(k)
            nd.lost = lost_now | (unsafe & (not berserk))
            if berserk and unsafe.any():          # a soft loss: one virtual losing visit
                nd.cn[unsafe], nd.cw[unsafe] = 1.0, -1.0
            if win.any():
                nd.proven, nd.value = 1, 1.0
                nd.prior = win / win.sum()
            elif nd.lost.all():
                nd.proven, nd.value = -1, -1.0
            elif not safe.any():
                nd.value = -1.0
            else:
                best = np.flatnonzero(safe)[np.argmax(sc[safe])]
                nd.value = math.tanh((strength[best] - self._e0(engine, nd.to_move)) / self.value_scale)

    def _evaluate_leaves(self, engine: Engine, pending: list) -> None:
        """Steps the new leaves (one engine batch), expands them, values them (rollouts if asked)
        and backs the values up."""
        parents = State.concatenate([p.state for p, _, _, _ in pending])
        actions = np.array([p.actions[e] for p, _, e, _ in pending], dtype=np.int64)
        engine.step(parents, actions)
        leaves = [leaf for _, leaf, _, _ in pending]
        for i, leaf in enumerate(leaves):
            leaf.state = parents.take([i])
            leaf.to_move = int(parents.to_move[i])
            leaf.terminal = bool(parents.done[i])
            leaf.winner = int(parents.winner[i])
        self._expand(engine, leaves)
        values = [leaf.value for leaf in leaves]
        if self.rollout != "none":
            idx = [i for i, leaf in enumerate(leaves) if not leaf.terminal and not leaf.proven]
            if idx:
                for i, v in zip(idx, self._rollout_values(engine, [leaves[i] for i in idx])):
                    values[i] = v
        for (parent, leaf, _, paths), v in zip(pending, values):
            known = leaf.known_value(parent.to_move)
            for path in paths:
                if known is not None:
                    self._backup(path, known, parent.to_move, virtual=True)
                else:
                    self._backup(path, v, leaf.to_move, virtual=True)
            self._propagate(paths[0])

    def _rollout_values(self, engine: Engine, leaves: list[_Node]) -> np.ndarray:
        """Mean playout value of each leaf, for the side to move at the leaf."""
        rep = np.repeat(np.arange(len(leaves)), self.rollouts_per_leaf)
        st = State.concatenate([leaves[i].state for i in rep]) if len(rep) > 1 else leaves[0].state.copy()
        for _ in range(self.max_rollout_turns):
            if st.done.all():
                break
            if self.rollout == "greedy":
                a = self.greedy.act(engine, st)
            else:
                a = engine.random_actions(st, self.rng)
            engine.step(st, a)
        side = np.array([leaves[i].to_move for i in rep])
        e_def = self.greedy.evaluate(engine, st)
        e0 = self._e0(engine, 1)
        static = np.tanh(np.where(side == 1, e_def - e0, e0 - e_def) / self.value_scale)
        w = st.winner.astype(np.int64)
        result = np.where(w == side, 1.0, -1.0)
        result[(w == 2) | (w < 0)] = 0.0
        vals = np.where(st.done, result, static)
        return np.bincount(rep, weights=vals, minlength=len(leaves)) / self.rollouts_per_leaf


def spec_name(simulations: int, rollout: str = "none", prior: str = "greedy") -> str:
    """The ``make_agent`` spec of this agent: ``legacy_mcts:N[:ROLLOUT[:PRIOR]]``."""
    from .mcts import spec_name as compiled_spec_name

    return "legacy_" + compiled_spec_name(simulations, rollout, prior)


def _factory(arg, seed=None, **kw):
    """``legacy_mcts[:N[:ROLLOUT[:PRIOR]]]``, parsed like ``mcts`` specs (no time budgets)."""
    from .mcts import parse_spec

    sims, seconds, rollout, prior = parse_spec(arg)
    if seconds is not None:
        raise ValueError(f"legacy_mcts takes simulations, not a time, got {arg!r}")
    return MCTSAgent(simulations=sims, rollout=rollout, prior=prior, seed=seed, **kw)


register_agent("legacy_mcts", _factory)
