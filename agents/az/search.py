"""The search driver: one batched AlphaZero search over many games at once.

:class:`BatchedSearch` searches the positions of a :class:`~tafl_env.engine.State` (one tree per
game, all trees as one forest) with a policy-value function, in rounds (:mod:`agents.mcts.netsearch`):
one kernel call walks every tree to its leaves, **one forward pass** evaluates the leaves of all
trees, one kernel call expands them and backs their values up. Each game has its own budget of
simulations, so that fast and full searches (playout-cap randomisation) share the rounds.

**The root** (:class:`SearchSettings`):

- ``root="gumbel"`` (the default): Gumbel-top-k sampling of ``considered`` actions, Sequential
  Halving over them (:mod:`agents.mcts.gumbel`), the move among the most visited by ``g + logits +
  sigma(q)``, and the improved policy ``softmax(logits + sigma(completed Q))`` as the policy
  target (Danihelka et al. 2022; mctx's ``gumbel_muzero_policy``). With ``gumbel_scale = 0`` the
  noise is off (a deterministic agent).
- ``root="puct"``: PUCT with the priors mixed with Dirichlet noise, ``(1 - fraction) p +
  fraction Dir(alpha)`` (AlphaZero), the most visited move, and the visit shares as the target.

Inner nodes choose by Gumbel MuZero's deterministic rule (``interior="gumbel"``) or by PUCT.
Every root also gets the greedy scoring's exact check once (``root_check``, as the MCTS agent's
roots do: :func:`agents.mcts.kernels.check_root`): a win in one is played at once, moves that lose
at once are left out of the search and of the target.

**The leaf value** is the network's, or with ``static_value_weight = w > 0`` the mix ``(1 - w) v +
w s``, where ``s`` is the greedy evaluation's static value of the leaf for its side to move,
``tanh((E - E0) / 5)`` for the defenders and its negative for the attackers (the MCTS agent's
heuristic leaf value: :meth:`agents.greedy.agent.GreedyAgent.defender_value`). AlphaGo mixed its
value network with rollouts the same way (lambda = 0.5; Silver et al. 2016): a handcrafted term that
knows at once what a young network has not learned yet (open lines to the escape squares,
pieces en prise).

Trees are not kept between moves (Sequential Halving plans a fresh budget at each root).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tafl_env.engine import Engine, State
from tafl_env.engine.rows import load_rows

from ..greedy.agent import DEFENDER, GreedyAgent, SearchWork, prepare
from ..mcts import kernels as _m
from ..mcts.forest import Forest, round_buffers
from ..mcts import netsearch as _f
from ..mcts.gumbel import halving_table

__all__ = ["SearchSettings", "SearchResult", "BatchedSearch", "ROOT_RULES", "INTERIOR_RULES"]

ROOT_RULES = ("gumbel", "puct")
INTERIOR_RULES = ("gumbel", "puct")
MAX_DEPTH = 64       # plies below the root a walk may go
LOAD_ROWS = 5        # work rows of the root check (the scoring's rows)


@dataclass(frozen=True)
class SearchSettings:
    """How the search chooses (module docstring). ``c_visit``/``c_scale``: sigma's constants;
    ``rescale_q``: completed Q-values rescaled to [0, 1] per node; ``leaves_per_tree``: walks per
    tree and forward pass (spread by a virtual loss)."""

    root: str = "gumbel"
    interior: str = "gumbel"
    considered: int = 16
    gumbel_scale: float = 1.0
    c_visit: float = 50.0
    c_scale: float = 0.1
    rescale_q: bool = True
    c_puct: float = 1.5
    dirichlet_alpha: float = 0.3
    dirichlet_fraction: float = 0.25
    leaves_per_tree: int = 4
    root_check: bool = True
    static_value_weight: float = 0.0

    def __post_init__(self):
        if self.root not in ROOT_RULES:
            raise ValueError(f"root must be one of {ROOT_RULES}, got {self.root!r}")
        if self.interior not in INTERIOR_RULES:
            raise ValueError(f"interior must be one of {INTERIOR_RULES}, got {self.interior!r}")
        for key in ("considered", "leaves_per_tree"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{key} must be an int >= 1, got {v!r}")
        for key in ("c_visit", "c_scale", "c_puct", "dirichlet_alpha"):
            if not float(getattr(self, key)) > 0:
                raise ValueError(f"{key} must be > 0, got {getattr(self, key)!r}")
        for key in ("gumbel_scale", "dirichlet_fraction", "static_value_weight"):
            v = float(getattr(self, key))
            if not 0 <= v <= (float("inf") if key == "gumbel_scale" else 1):
                raise ValueError(f"{key} out of range, got {getattr(self, key)!r}")


@dataclass
class SearchResult:
    """What a search returns, per game: ``action`` to play; the root's legal ``actions`` (-1
    padded), their ``visits`` and the policy ``target``; ``value``, the search's value for the
    side to move; ``simulations`` run."""

    action: np.ndarray
    actions: np.ndarray
    visits: np.ndarray
    target: np.ndarray
    value: np.ndarray
    simulations: np.ndarray


class BatchedSearch:
    """Batched search of one engine's positions with ``evaluate(engine, state) -> (logits (R, A)
    float, values (R,))`` (the side to move's value), e.g. :class:`agents.az.network.Evaluator`.

    ``rng`` draws the Gumbel and Dirichlet noise.
    """

    def __init__(self, engine: Engine, evaluate, settings: SearchSettings,
                 rng: np.random.Generator | None = None):
        self.engine, self.evaluate, self.settings = engine, evaluate, settings
        self.rng = rng if rng is not None else np.random.default_rng()
        self._forest: Forest | None = None
        self._work: SearchWork | None = None
        self._rules = np.array([_f.RULE_GUMBEL if settings.root == "gumbel" else _f.RULE_PUCT,
                                _f.RULE_GUMBEL if settings.interior == "gumbel" else _f.RULE_PUCT],
                               dtype=np.int64)
        self._qp = np.array([settings.c_visit, settings.c_scale, float(settings.rescale_q),
                             settings.c_puct])
        na = engine.num_actions
        self._sig = np.zeros(na)
        self._probs = np.zeros(na)
        self.leaf_evaluations = 0       # positions sent to the network, all searches together
        self._judge = GreedyAgent(seed=0) if settings.static_value_weight > 0 else None

    def _setup(self, state: State) -> SearchWork:
        prepare(state, MAX_DEPTH + 4)
        w = self._work
        if (w is None or w.key[1] != state.history.shape[1] or w.key[2] != state.pieces.shape[2]):
            w = self._work = SearchWork(self.engine, state, 7 + state.pieces.shape[2])
        return w

    def run(self, state: State, simulations, noise: bool = True) -> SearchResult:
        """Search every (running) game of ``state`` with ``simulations`` (an int or one per game)
        and return the :class:`SearchResult`. ``noise``: draw the root's Gumbel (or Dirichlet)
        noise; without it the search is deterministic."""
        engine, st = self.engine, self.settings
        b = len(state)
        sims = np.broadcast_to(np.asarray(simulations, dtype=np.int64), (b,)).copy()
        if (sims < 0).any():
            raise ValueError(f"simulations must be >= 0, got {sims.min()}")
        state = state.copy()
        w = self._setup(state)
        tb, at = engine.kernel_tables, w.at
        lpt = st.leaves_per_tree
        smax = int(sims.max()) if b else 0
        f = self._forest
        cap = max(64, smax + 2 * lpt + 8)
        if f is None or f.nodes.first.shape[1] < cap:
            f = self._forest = Forest(max(b, 1), cap, cap * 48)
        elif f.games < b:
            f.grow(games=b - f.games)
        arrays = state.arrays()
        hdr, nodes, edges = f.rows(b)
        for g in range(b):
            load_rows(arrays, g, w.W, 1)
            th, tn, te = f.tree(g)
            _m.expand_root(w.W, tb, at, th, tn, te, w.buffers, 0.0, 1.0, 1.0, -1)
        bufs = round_buffers(state, b, lpt, MAX_DEPTH)
        budget = np.ones(b, dtype=np.int64)       # round 0 expands the roots only (no simulation)
        seq = np.zeros((b, max(smax, 1)), dtype=np.int64)
        gum = np.zeros((b, engine.num_actions))
        rules = _f.Rules(self._rules, self._qp, seq, gum, self._sig, self._probs)
        first = True
        while True:
            nl, started = _f.search_round(f, b, engine, w, bufs, budget, lpt, rules, self._evaluate_leaves, True)
            if first:
                first = False
                budget = self._prepare_roots(state, w, f, b, sims, seq, gum, noise)
                continue
            if not (nl or started):
                break
        hdr, nodes, edges = f.rows(b)
        width = int(max(1, nodes.count[np.arange(b), hdr[:, _m.H_ROOT]].max())) if b else 1
        acts = np.zeros((b, width), dtype=np.int64)
        visits = np.zeros((b, width), dtype=np.int64)
        target = np.zeros((b, width))
        choice = np.zeros(b, dtype=np.int64)
        value = np.zeros(b)
        _f.root_outputs(hdr, nodes, edges, self._rules, self._qp, gum, acts, visits, target,
                        choice, value, self._sig, self._probs)
        return SearchResult(choice, acts, visits, target, value, hdr[:, _m.H_SIMS].copy())

    def _evaluate_leaves(self, engine: Engine, leaves: State) -> tuple[np.ndarray, np.ndarray]:
        logits, values = self.evaluate(engine, leaves)
        self.leaf_evaluations += len(leaves)
        if self._judge is not None:
            values = self._mix_static(engine, leaves, values)
        return np.ascontiguousarray(logits, dtype=np.float32), np.ascontiguousarray(values, dtype=np.float64)

    def _mix_static(self, engine: Engine, leaves: State, values: np.ndarray) -> np.ndarray:
        """``(1 - w) values + w s`` (module docstring, "The leaf value")."""
        w = self.settings.static_value_weight
        defenders = self._judge.defender_value(engine, leaves)
        static = np.where(leaves.to_move == DEFENDER, defenders, -defenders)
        return (1.0 - w) * np.asarray(values, dtype=np.float64) + w * static

    def _prepare_roots(self, state, w, f, b, sims, seq, gum, noise) -> np.ndarray:
        """After round 0 (every root expanded): the root check, the noise and the halving
        schedule; returns each game's budget (0 for a proven root or a single legal move)."""
        st, engine = self.settings, self.engine
        tb, at = engine.kernel_tables, w.at
        arrays = state.arrays()
        budget = sims.copy()
        for g in range(b):
            th, tn, te = f.tree(g)
            root = th[_m.H_ROOT]
            if st.root_check:
                load_rows(arrays, g, w.W, LOAD_ROWS)
                _m.check_root(w.W, tb, at, th, tn, te, w.buffers)
            base, cnt = tn.first[root], tn.count[root]
            sl = slice(base, base + cnt)
            # the check's "one losing visit" for unsafe Berserk moves would upset the halving
            te.visits[sl] = 0
            te.value_sum[sl] = 0.0
            lost = int(te.lost[sl].sum())
            live = int(cnt - lost) if lost < cnt else int(cnt)
            if tn.proven[root] != 0 or cnt <= 1:
                budget[g] = 0
                continue
            if st.root == "gumbel":
                if noise and st.gumbel_scale > 0:
                    gum[g, :cnt] = self.rng.gumbel(size=cnt) * st.gumbel_scale
                else:
                    gum[g, :cnt] = 0.0
                if sims[g] > 0:
                    seq[g, :sims[g]] = halving_table(st.considered, int(sims[g]))[min(st.considered, live)]
            elif noise and st.dirichlet_fraction > 0:
                eta = self.rng.dirichlet(np.full(cnt, st.dirichlet_alpha))
                te.prior[sl] = (1 - st.dirichlet_fraction) * te.prior[sl] + st.dirichlet_fraction * eta
        return budget
