"""UCT Monte Carlo tree search over the batched engine.

One tree per game and per call to :meth:`MCTSAgent.act` (no reuse between calls). Nodes hold a
batch-of-one :class:`~tafl_env.engine.State`; selection and expansion run in Python per tree, but
everything that touches the engine is batched across all trees of the call:

* **Rounds.** Each round selects up to ``leaves_per_tree`` leaves in every tree (virtual loss spreads
  them: every node on a selected path gets a provisional visit that counts as a loss for the side
  that moved into it, removed at backup). All new leaves of all trees are expanded with one
  ``engine.step`` on the concatenated parent states, and their legal actions come from one
  ``engine.legal_action_mask`` call.
* **Rollouts.** The new leaves, each repeated ``rollouts_per_leaf`` times, are played out as one engine
  batch: uniformly random actions (``engine.random_actions``), or the :class:`GreedyAgent` with
  ``rollout="greedy"``, until every game is over or ``max_rollout_turns`` actions have been played.
  An unfinished rollout is worth 0 (no heuristic), a draw 0, a win +1, a loss −1.
* **Values and signs.** A node's value is kept from the point of view of the side that made the move
  into it, i.e. its parent's ``state.to_move``. Inside a berserk chain the same side moves again
  (pass is an action like any other), so the sign is read from the states, never from the depth.
  Selection maximises ``Q + c_uct * sqrt(ln N_parent / N_child)`` over the children (unvisited
  actions first, in a random order from the agent's ``rng``); terminal leaves are scored from their
  winner directly.
* The move played is a child that wins on the spot if one was expanded, else the most visited
  child of the root (ties: higher mean value, then the lowest action). Finished games get −1; a game with a single legal action plays it without search.

Budget: ``simulations`` leaf evaluations per game (the root's visit count after the search).
"""

from __future__ import annotations

import math

import numpy as np

from tafl_env.engine import Engine, State

from .base import Agent, register_agent


class _Node:
    __slots__ = ("state", "to_move", "done", "winner", "untried", "children", "n", "w", "action")

    def __init__(self, action: int):
        self.action = action
        self.state: State | None = None
        self.to_move = -1
        self.done = False
        self.winner = -1
        self.untried: list[int] = []
        self.children: list[_Node] = []
        self.n = 0.0
        self.w = 0.0  # from the point of view of the side that moved into this node


class MCTSAgent(Agent):
    """UCT with batched rollouts (see the module docstring)."""

    name = "mcts"

    def __init__(self, simulations: int = 200, rollout: str = "random", c_uct: float = 1.4,
                 max_rollout_turns: int = 100, rollouts_per_leaf: int = 1, leaves_per_tree: int = 8,
                 seed: int | None = None):
        super().__init__(seed)
        if rollout not in ("random", "greedy"):
            raise ValueError(f"rollout must be 'random' or 'greedy', got {rollout!r}")
        if simulations < 1:
            raise ValueError("simulations must be >= 1")
        self.simulations = int(simulations)
        self.rollout = rollout
        self.c_uct = float(c_uct)
        self.max_rollout_turns = int(max_rollout_turns)
        self.rollouts_per_leaf = int(rollouts_per_leaf)
        self.leaves_per_tree = int(leaves_per_tree)
        self._greedy = None
        self.name = f"mcts:{simulations}" + (":greedy" if rollout == "greedy" else "")

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        if self._greedy is not None and seed is not None:
            self._greedy.reset(seed + 1)

    # ------------------------------------------------------------------------------------------
    def choose(self, engine: Engine, state: State) -> np.ndarray:
        out = np.full(len(state), -1, dtype=np.int64)
        mask = engine.legal_action_mask(state)
        roots = []
        for g in range(len(state)):
            acts = np.flatnonzero(mask[g])
            if len(acts) == 1:
                out[g] = acts[0]
                continue
            root = _Node(-1)
            root.state = state.take([g])
            root.to_move = int(state.to_move[g])
            root.untried = list(self.rng.permutation(acts))
            roots.append((g, root))
        if not roots:
            return out
        self.search(engine, [r for _, r in roots])
        for g, root in roots:
            best = max(root.children, key=lambda c: (c.done and c.winner == root.to_move, c.n,
                                                     c.w / max(c.n, 1), -c.action))
            out[g] = best.action
        return out

    def search(self, engine: Engine, roots: list[_Node]) -> None:
        while True:
            pending: list[tuple[_Node, _Node, list]] = []   # (parent, new child, paths)
            where: dict[int, int] = {}
            terminal: list[list] = []
            for root in roots:
                left = self.simulations - root.n
                for _ in range(int(min(self.leaves_per_tree, left))):
                    path = self._select(root)
                    if path is None:
                        break
                    leaf = path[-1]
                    if leaf.state is None:          # freshly created: to be expanded this round
                        if id(leaf) in where:
                            pending[where[id(leaf)]][2].append(path)
                        else:
                            where[id(leaf)] = len(pending)
                            pending.append((path[-2], leaf, [path]))
                    else:                           # a finished game: value known
                        terminal.append(path)
            if not pending and not terminal:
                return
            for path in terminal:
                leaf = path[-1]
                mover = path[-2].to_move
                self._backup(path, self._result(leaf.winner, mover), virtual=True)
            if pending:
                self._expand_and_rollout(engine, pending)

    # ------------------------------------------------------------------------------------------
    def _select(self, root: _Node) -> list | None:
        """Walk down with UCT, adding a virtual loss on the way; a new child is created (without
        its state) when a node still has untried actions. None when the root has no budget left."""
        node = root
        path = [root]
        while True:
            node.n += 1
            node.w -= 1  # virtual loss for the side that moved into the node
            if node.state is None or node.done:
                return path
            if node.untried:
                child = _Node(int(node.untried.pop()))
                node.children.append(child)
                child.n += 1
                child.w -= 1
                path.append(child)
                return path
            if not node.children:       # a running state without actions cannot happen
                return path
            log_n = math.log(max(node.n, 1))
            best, best_v = None, -math.inf
            for c in node.children:
                v = c.w / c.n + self.c_uct * math.sqrt(log_n / c.n) if c.n else math.inf
                if v > best_v:
                    best, best_v = c, v
            node = best
            path.append(node)

    @staticmethod
    def _result(winner: int, mover: int) -> float:
        if winner < 0 or winner == 2:
            return 0.0
        return 1.0 if winner == mover else -1.0

    @staticmethod
    def _backup(path: list, value_for_leaf_mover: float, virtual: bool) -> None:
        """``value_for_leaf_mover`` is from the side that moved into the leaf; each node stores the
        value for the side that moved into it (its parent's ``to_move``)."""
        leaf_mover = path[-2].to_move if len(path) > 1 else path[0].to_move
        for i, node in enumerate(path):
            mover = path[i - 1].to_move if i else 1 - path[0].to_move
            v = value_for_leaf_mover if mover == leaf_mover else -value_for_leaf_mover
            if virtual:   # undo the virtual loss: the visit stays, the loss is replaced by v
                node.w += 1 + v
            else:
                node.w += v

    def _expand_and_rollout(self, engine: Engine, pending: list) -> None:
        parents = State.concatenate([p.state.copy() for p, _, _ in pending])
        actions = np.array([c.action for _, c, _ in pending], dtype=np.int64)
        engine.step(parents, actions)
        leaves = parents
        mask = engine.legal_action_mask(leaves)
        for i, (_, child, _) in enumerate(pending):
            child.state = leaves.take([i])
            child.to_move = int(leaves.to_move[i])
            child.done = bool(leaves.done[i])
            child.winner = int(leaves.winner[i])
            if not child.done:
                child.untried = list(self.rng.permutation(np.flatnonzero(mask[i])))
        # rollouts: each running leaf repeated rollouts_per_leaf times, one engine batch
        running = np.flatnonzero(~leaves.done)
        values = np.zeros(len(pending))
        if len(running):
            rep = np.repeat(running, self.rollouts_per_leaf)
            roll = leaves.take(rep)
            winners = self._playout(engine, roll)
            movers = np.array([p.to_move for p, _, _ in pending])[rep]
            res = np.where((winners < 0) | (winners == 2), 0.0, np.where(winners == movers, 1.0, -1.0))
            np.add.at(values, rep, res / self.rollouts_per_leaf)
        for i, (parent, child, paths) in enumerate(pending):
            v = values[i] if not child.done else self._result(child.winner, parent.to_move)
            for path in paths:
                self._backup(path, v, virtual=True)

    def _playout(self, engine: Engine, st: State) -> np.ndarray:
        if self.rollout == "greedy" and self._greedy is None:
            from .greedy import GreedyAgent
            self._greedy = GreedyAgent(seed=int(self.rng.integers(2**31)))
        for _ in range(self.max_rollout_turns):
            if st.done.all():
                break
            if self.rollout == "greedy":
                a = self._greedy.act(engine, st)
            else:
                a = engine.random_actions(st, self.rng)
            engine.step(st, a)
        return np.where(st.done, st.winner, -1).astype(np.int64)


def _factory(arg, seed=None, **kw):
    sims, rollout = 200, "random"
    if arg:
        head, _, tail = arg.partition(":")
        sims = int(head) if head else sims
        rollout = tail or rollout
    return MCTSAgent(simulations=sims, rollout=rollout, seed=seed, **kw)


register_agent("mcts", _factory)
