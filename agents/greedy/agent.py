"""The greedy agent: one ply of look-ahead plus an exact check of the opponent's immediate wins.

Compiled: each game's legal moves are played through the engine's own step kernel, one after the
other, on a work row (:mod:`agents.greedy.kernels`), every child is scored, and the best one is
picked (exact ties broken uniformly at random by the agent's own generator). Board geometry, side
membership and action decoding are the engine's tables (``Engine.kernel_tables``); nothing is
duplicated here. To choose, the agent runs the opponent check (b) lazily: only for children that
could still be the best once checked (``choose_node``); :meth:`GreedyAgent.score_moves` checks
every child.

Order of preference, per game (lexicographic):

(a) **Win now**: a child whose ``winner`` is the mover (king escaped, king captured, encirclement, the
    opponent left without a legal move, a repetition the opponent began).
(b) **Do not allow an immediate win**: a child after which the opponent has a reply (a whole turn,
    berserk chain included) that wins at once is "unsafe" and only chosen when every move is unsafe.
    A child that loses on the spot (e.g. a repetition begun by the mover) is worst of all.
(c) **Captures**: the number of enemy pieces removed by the move (more is better).
(d) **Evaluation** ``E`` of the position after the move, seen from the defenders (the attackers
    maximise ``-E``)::

        E =  3.0 * esc1        escape squares the king reaches with one move
           + 1.0 * esc2        further escape squares he reaches with two moves
           - 0.5 * dist        Manhattan distance from the king to the nearest escape square
           - 1.0 * adj         attackers orthogonally next to the king
           + 0.5 * defenders   material (defender pieces, king included)
           - 0.5 * attackers   material (attacker pieces)

    For the attackers the same terms read: attackers next to the king, escape routes blocked
    (``esc1``/``esc2`` are what remains open), material. King moves for ``esc1/esc2`` are slides
    through empty squares (the king may pass and stop on the throne and corners) of at most
    ``move_range`` squares; jumps are ignored by the evaluation (not by the safety check).
    All weights are multiples of 0.5, so a random tie-break noise below 1e-3 only splits ties.

**Berserk chains.** A child in which the mover's capture opened a chain is judged as the position
after its pass (a lower bound: the chain could still go on). When the agent is asked to act inside a
chain, its candidates are the continuations and the pass, scored the same way (the pass child is the
position after the pass).

**The exact check (b).** For every running child the opponent's replies that could possibly win
are singled out by sound filters (:mod:`agents.greedy.kernels` lists them: the king's moves onto
escape squares, moves landing next to the king judged with the engine's own king-capture rule,
the pieces left with free squares for "no legal move", the repetition table looked up with the key
a quiet reply would make, the articulation filter for encirclement, and in Berserk the replies
that capture, judged on the board by the engine's ``move_captures``, once the king's
neighbourhood shows he might fall); those replies are played through the engine's step, which
judges them with every rule, and berserk chains they open are searched to their end.

Version history: 0.3, the compiled agent: the repetition check is now exact. The Python agent
checked every reply only when the child's position had occurred twice, and so missed a third
occurrence reached by a different move order; the compiled one looks every quiet reply's key up in
the repetition table. Everything else chooses as before.

0.4, the lazy check: the choice is still a move of the highest score, exact ties
uniform, but the check (b) runs best child first and stops once no child left can beat or tie the
choice; ties are broken by a random key per child. Greedy Tablut went from about 11k to 24k moves
a second in one game (benchmarks/RESULTS.md). The same seed now plays other (equally good) games
than 0.3 did.

0.5, Berserk's filters: the check (b) skips the attackers' replies while the king cannot fall and
keeps a move, and plays only the replies that capture; the same choices, the same games, and
``mcts:N`` in Berserk about 7 times faster (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import numpy as np

from tafl_env.engine import Engine, State
from tafl_env.engine.step import INFO_WIDTH, SCRATCH

from ..base import Agent, register_agent
from . import kernels as _k
from .scoring import LOSS, UNSAFE, W_CAPTURE, WIN, agent_tables  # noqa: F401 (re-exported)

VALUE_SCALE = 5.0
"""Evaluation units per unit of ``tanh`` in :meth:`GreedyAgent.defender_value` (the MCTS agent's
``value_scale`` by default)."""

ATTACKER, DEFENDER = 0, 1


class SearchWork:
    """Work rows and buffers of the compiled searches for one engine and one State layout
    (history width and piece slots): ``rows`` copies of a game, and the arrays the kernels
    write into (serial kernels allocate nothing)."""

    def __init__(self, engine: Engine, state: State, rows: int):
        self.key = (id(engine), state.history.shape[1], state.pieces.shape[2])
        n, s = engine.n, engine.s
        self.state = state.take(np.zeros(rows, dtype=np.intp))
        self.W = self.state.arrays()
        na = engine.num_actions
        self.acts = np.zeros(na, dtype=np.int64)
        self.scores = np.zeros(na)
        self.caps = np.zeros(na, dtype=np.int64)
        self.emov = np.zeros(na)
        self.info = np.zeros(INFO_WIDTH, dtype=np.int64)
        self.scratch = np.zeros(SCRATCH, dtype=np.int64)
        depth = max(1, rows - 3)
        self.cacts = np.zeros((depth, 4 * (n - 1) + 2), dtype=np.int64)
        self.ccnt = np.zeros(depth, dtype=np.int64)
        self.cidx = np.zeros(depth, dtype=np.int64)
        self.rw = np.zeros((_k.RW_ROWS, n), dtype=np.int64)
        self.stamp = np.zeros(s + 1, dtype=np.int64)
        self.gen = np.zeros(1, dtype=np.int64)
        self.ties = np.zeros(na)
        self.engine = engine
        self.at = agent_tables(engine)
        self.buffers = self.node_buffers() + (self.ties,)
        """What the searches' kernels take: the node's buffers, then a choice's tie-break keys."""

    def node_buffers(self) -> tuple:
        """The buffers of scoring one node (``score_node``)."""
        return (self.acts, self.scores, self.caps, self.emov, self.info, self.scratch, self.cacts,
                self.ccnt, self.cidx, self.rw, self.stamp, self.gen)


def prepare(state: State, extra_turns: int) -> None:
    """Make room in ``state``'s history for ``extra_turns`` more turns (a search's look-ahead)."""
    need = int(state.turn.max()) + extra_turns + 2 if len(state) else 0
    if need >= state.history.shape[1]:
        state.grow_history(need + 1)


class GreedyAgent(Agent):
    """One ply, with captures, the opponent's immediate wins and a small evaluation (module doc)."""

    name = "greedy"

    def __init__(self, seed: int | None = None, chunk: int = 4096):
        super().__init__(seed)
        self.chunk = chunk   # kept for compatibility; the compiled agent needs no chunking
        self._work: dict = {}
        self._start: dict = {}     # E0 by rules: searches ask for it at every batch of leaves
        self._seed_kernel_rng()

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        if seed is not None:
            self._seed_kernel_rng()

    def _seed_kernel_rng(self) -> None:
        self._krng = self.rng.integers(1, 2**63, size=1, dtype=np.int64).astype(np.uint64)

    def work(self, engine: Engine, state: State) -> SearchWork:
        if len(state) and int(state.turn.max()) + 5 >= state.history.shape[1]:
            prepare(state, 3)
        w = self._work.get(id(engine))
        if (w is None or w.key[1] != state.history.shape[1] or w.key[2] != state.pieces.shape[2]
                or w.engine is not engine):
            w = self._work[id(engine)] = SearchWork(engine, state, 4 + state.pieces.shape[2])
        return w

    # ------------------------------------------------------------------------------------------
    def act(self, engine: Engine, state: State) -> np.ndarray:
        w = self.work(engine, state)
        games = np.flatnonzero(state.reason == 0)
        out = np.full(len(state), -1, dtype=np.int64)
        if len(games):
            chosen = np.empty(len(games), dtype=np.int64)
            _k.greedy_choose(state.buffer, games, w.state.buffer, engine.packed_tables, w.at,
                             self._krng, chosen, *w.buffers)
            out[games] = chosen
        return out

    def choose(self, engine: Engine, state: State) -> np.ndarray:
        return self.act(engine, state)

    def pick(self, games: int, scores: np.ndarray, parent: np.ndarray, action: np.ndarray) -> np.ndarray:
        """(games,) the best-scored action of each game, exact ties broken uniformly at random with
        the agent's ``rng`` (one draw per scored move); −1 for a game without scored moves."""
        out = np.full(games, -1, dtype=np.int64)
        noise = self.rng.random(len(scores)) * 1e-3
        order = np.lexsort((scores + noise, parent))
        last = np.r_[parent[order][1:] != parent[order][:-1], True]
        best = order[last]
        out[parent[best]] = action[best]
        return out

    def score_moves(self, engine: Engine, state: State, details: bool = False):
        """Scores of every legal action of every running game: (scores, parent row, action).

        With ``details``, two more arrays follow: the number of enemy pieces each move captures
        and the evaluation ``E`` of the position after it, seen from the mover. The score is
        ``WIN`` / ``LOSS`` for moves that end the game (a draw: 0), else
        ``W_CAPTURE * captures + E_mover``, plus ``UNSAFE`` when the opponent can then win at once.
        """
        w = self.work(engine, state)
        tb, at = engine.kernel_tables, agent_tables(engine)
        parts = []
        for g in np.flatnonzero(~state.done):
            n = _k.greedy_scores(state.arrays(), int(g), w.W, tb, at, *w.node_buffers())
            parts.append((w.scores[:n].copy(), np.full(n, g, dtype=np.int64), w.acts[:n].copy(),
                          w.caps[:n].copy(), w.emov[:n].copy()))
        if not parts:
            parts = [(np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64),
                      np.zeros(0, np.int64), np.zeros(0))]
        out = tuple(np.concatenate(x) for x in zip(*parts))
        return out if details else out[:3]

    def evaluate(self, engine: Engine, state: State) -> np.ndarray:
        """(B,) the evaluation ``E`` of each position, seen from the defenders (module docstring,
        (d)); −100 where the king is gone."""
        out = np.empty(len(state))
        stamp = np.zeros(engine.s + 1, dtype=np.int64)
        _k.evaluate_rows(state.arrays(), engine.kernel_tables, agent_tables(engine), out, stamp,
                         np.zeros(1, dtype=np.int64))
        return out

    def defender_value(self, engine: Engine, state: State, scale: float = VALUE_SCALE) -> np.ndarray:
        """(B,) the static value of each position for the defenders, ``tanh((E - E0) / scale)``
        in [-1, 1] (``E0``: the start position's evaluation): the MCTS agent's heuristic leaf
        value (agents/mcts/agent.py); the attackers' value is its negative."""
        return np.tanh((self.evaluate(engine, state) - self.start_evaluation(engine)) / scale)

    def start_evaluation(self, engine: Engine) -> float:
        """``E0``: the evaluation of the variant's start position (from the defenders' side),
        evaluated once per rules."""
        e0 = self._start.get(engine.rules)
        if e0 is None:
            e0 = self._start[engine.rules] = float(self.evaluate(engine, engine.initial_state(1))[0])
        return e0

    def opponent_can_win(self, engine: Engine, st: State) -> np.ndarray:
        """(M,) bool for running, chain-free states: the side to move has a reply that wins at once."""
        w = self.work(engine, st)
        tb, at = engine.kernel_tables, agent_tables(engine)
        b = w.node_buffers()
        return np.array([bool(_k.opponent_wins(st.arrays(), g, w.W, tb, at, *b[4:10]))
                         for g in range(len(st))], dtype=bool)


register_agent("greedy", lambda arg, seed=None, **kw: GreedyAgent(seed=seed, **kw))
