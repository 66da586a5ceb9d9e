"""Batched self-play: ``games`` games at once, every move chosen by the batched search
(:class:`~agents.az.search.BatchedSearch`), positions recorded with their targets, finished games
restarted at once.

What each move does (the settings are the config's, :class:`SelfPlaySettings`):

- **playout-cap randomisation** (Wu 2019, KataGo): a move gets a full search (``simulations``)
  with probability ``full_search_fraction``, else a fast one (``fast_simulations``); only full
  searches are recorded as policy targets, the fast ones are only played;
- **opening variety**: for the first ``opening_moves`` turns of a game the move is drawn in
  proportion to the root's visit counts (afterwards it is the search's own choice, which under a
  Gumbel root is already a sample: the Gumbel noise);
- **games against past checkpoints** (``past_share`` of the games, the learner's side drawn at
  random): the other side is played by a past network of the pool with its own search; only the
  current network's positions are recorded. The Tablut AlphaZero paper cured role forgetting (one
  side's play collapsing while the other improves) with 25% of such games;
- **games against a sparring agent** (``sparring_share`` of the games, when the run names one,
  e.g. ``mcts:100``; the learner attacks in ``sparring_attacks`` of them, 0.5 by default: its side
  drawn at random): the other side is played by that fixed agent, so each side of the learner
  keeps meeting an opponent that punishes its mistakes even while its own other side is weak
  (measured need: Ard Ri's self-play attackers won 7% of the games, so the defenders never met a
  real attack); only the learner's positions are recorded. Where ``sparring_defender`` names
  another agent, that one defends when the learner attacks: an attack that never wins against
  the sparring agent (Berserk's against ``mcts:100``) still meets a defence it can beat, so that
  its value and policy targets hold wins;
- **value targets**: +1 / -1 for the side to move at each recorded position by the game's
  result; ``draw_value`` for a drawn game and ``capped_value`` for a game cut at the move cap
  (both sides get the same value), or with ``capped_value = "evaluation"`` the static value of
  the cut game's last position (:func:`capped_values`: the MCTS agent's heuristic, where games
  that run to the cap would otherwise teach the value head that every position is worth 0); then
  mixed with the root's search value, ``(1 - value_mix) z + value_mix v_search``.

Games that are running when :meth:`SelfPlay.play` returns go on at the next call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tafl_env.engine import Engine
from tafl_env.engine.state import DRAW, RESULT_NAMES, TRUNCATED
from tafl_env.observation import observe
from tafl_env.rules import SIDES

from ..evaluation.stats import attacker_score
from ..greedy.agent import GreedyAgent

from .replay import encode_planes
from .search import BatchedSearch, SearchSettings

__all__ = ["SelfPlaySettings", "SelfPlay", "GameBatch", "CAPPED_BY_EVALUATION", "capped_values"]

CAPPED_BY_EVALUATION = "evaluation"
"""The ``capped_value`` that scores a game cut at the move cap by its last position's evaluation."""


def capped_values(engine: Engine, state, capped_value, judge=None):
    """The value targets ``(attackers', defenders')`` of the game in ``state`` (one row) when it
    was cut at the move cap: ``capped_value`` for both sides, or for :data:`CAPPED_BY_EVALUATION`
    the defenders' static value ``tanh((E - E0) / VALUE_SCALE)`` of the last position and its
    negative for the attackers (:meth:`agents.greedy.agent.GreedyAgent.defender_value`; ``judge``: the greedy
    agent to reuse)."""
    if capped_value != CAPPED_BY_EVALUATION:
        return float(capped_value), float(capped_value)
    d = float((judge or GreedyAgent(seed=0)).defender_value(engine, state)[0])
    return -d, d


@dataclass(frozen=True)
class SelfPlaySettings:
    games: int = 128
    simulations: int = 32
    fast_simulations: int = 8
    full_search_fraction: float = 0.25
    opening_moves: int = 4
    past_share: float = 0.25
    sparring_share: float = 0.0
    sparring_attacks: float = 0.5
    draw_value: float = 0.0
    capped_value: float | str = 0.0
    value_mix: float = 0.0


@dataclass
class GameBatch:
    """Recorded positions of finished games (concatenated) and what the games did."""

    planes: list = field(default_factory=list)
    actions: list = field(default_factory=list)
    targets: list = field(default_factory=list)
    values: list = field(default_factory=list)
    games: int = 0
    results: dict = field(default_factory=lambda: {"attacker": 0, "defender": 0, "draw": 0, "capped": 0})
    sparring: dict = field(default_factory=lambda: {"attacker": [0.0, 0], "defender": [0.0, 0]})
    """The learner's score (a win 1, a draw or a capped game 1/2) and games against the sparring
    agent, by the learner's side: how each side of it fares against a fixed opponent as it trains."""
    turns: int = 0
    moves: int = 0
    leaf_evaluations: int = 0
    complete: bool = True
    """False when play was stopped before every game asked for was played (a deadline)."""

    @property
    def positions(self) -> int:
        return int(sum(len(v) for v in self.values))

    def arrays(self) -> tuple:
        """(planes, actions, targets, values) of every position, actions -1 padded to one width."""
        if not self.values:
            return None
        width = max(a.shape[1] for a in self.actions)
        pad = lambda a, fill: np.pad(a, ((0, 0), (0, width - a.shape[1])), constant_values=fill)
        return (np.concatenate(self.planes), np.concatenate([pad(a, -1) for a in self.actions]),
                np.concatenate([pad(t, 0.0) for t in self.targets]), np.concatenate(self.values))

    def add_game(self, records: list, winner: int, capped: bool, turns: int, draw_value: float,
                 capped_value: float | tuple, value_mix: float = 0.0) -> None:
        """Count a finished game and add its records ``(planes, legal actions, policy target, side
        to move, search value)``: the value target of each is ``(1 - value_mix) z + value_mix v``,
        ``z`` +1 / -1 by the result for that side (``draw_value`` for a draw, ``capped_value``
        for a game cut at the move cap: one value for both sides, or the pair (attackers',
        defenders') of :func:`capped_values`)."""
        per_side = capped_value if isinstance(capped_value, tuple) else (capped_value, capped_value)
        self.games += 1
        self.turns += turns
        self.results["capped" if capped else ("draw" if winner == DRAW else SIDES[winner])] += 1
        if not records:
            return
        width = max(len(r[1]) for r in records)
        acts = np.full((len(records), width), -1, dtype=np.int32)
        tgts = np.zeros((len(records), width), dtype=np.float32)
        vals = np.zeros(len(records), dtype=np.float32)
        for i, (_, a, t, side, v) in enumerate(records):
            acts[i, :len(a)] = a
            tgts[i, :len(t)] = t
            if capped or winner == DRAW:
                z = per_side[side] if capped else draw_value
            else:
                z = 1.0 if winner == side else -1.0
            vals[i] = (1 - value_mix) * z + value_mix * v
        self.planes.append(np.stack([r[0] for r in records]))
        self.actions.append(acts)
        self.targets.append(tgts)
        self.values.append(vals)

    def add_finished(self, engine: Engine, state, g: int, records: list, draw_value: float, capped_value,
                     value_mix: float = 0.0, judge=None) -> None:
        """:meth:`add_game` for row ``g`` of ``state``, a finished game: its result, whether it was
        cut at the move cap (then valued by :func:`capped_values`) and its length."""
        capped = int(state.reason[g]) == TRUNCATED
        if capped:
            capped_value = capped_values(engine, state.take(np.array([g])), capped_value, judge)
        self.add_game(records, int(state.winner[g]), capped, int(state.turn[g]), draw_value, capped_value, value_mix)

    def merge(self, other: "GameBatch") -> None:
        for name in ("planes", "actions", "targets", "values"):
            getattr(self, name).extend(getattr(other, name))
        for k, v in other.results.items():
            self.results[k] += v
        for k, (score, games) in other.sparring.items():
            self.sparring[k][0] += score
            self.sparring[k][1] += games
        self.games += other.games
        self.turns += other.turns
        self.moves += other.moves
        self.leaf_evaluations += other.leaf_evaluations


class SelfPlay:
    """``settings.games`` games of ``engine`` played by ``evaluate`` (the current network) and,
    in ``sparring_share`` of them, the ``sparring`` agent (an :class:`agents.base.Agent`; none by
    default; ``sparring_defender``, where given, defends in those the learner attacks), in
    ``past_share`` of them a past network (:meth:`set_pool`)."""

    def __init__(self, engine: Engine, evaluate, search: SearchSettings, settings: SelfPlaySettings,
                 rng: np.random.Generator, sparring=None, sparring_defender=None):
        self.engine, self.settings, self.rng = engine, settings, rng
        self.sparring = sparring
        self.sparring_defender = sparring if sparring_defender is None else sparring_defender
        for agent in (self.sparring, self.sparring_defender):
            if agent is not None and hasattr(agent, "reuse"):
                agent.reuse = False      # it moves in a different subset of the games each turn
        self.search_settings = search
        self.search = BatchedSearch(engine, evaluate, search, rng)
        self.pool: list[BatchedSearch] = []
        b = settings.games
        self.state = engine.initial_state(b)
        self.opponent = np.full(b, -1, dtype=np.int64)     # -1: self-play, k: pool[k], -2: sparring
        self.learner_side = np.zeros(b, dtype=np.int64)
        self._records: list[list] = [[] for _ in range(b)]
        self._judge = GreedyAgent(seed=0) if settings.capped_value == CAPPED_BY_EVALUATION else None
        self._fresh = engine.initial_state(1)

    def set_pool(self, evaluators: list) -> None:
        """The past networks' evaluators; games against a network no longer in the pool go on
        as self-play."""
        self.pool = [BatchedSearch(self.engine, ev, self.search_settings, self.rng) for ev in evaluators]
        self.opponent[self.opponent >= len(self.pool)] = -1

    def _new_game(self, g: int) -> None:
        self.state.put(np.array([g]), self._fresh)
        self._records[g] = []
        sparring = self.settings.sparring_share if self.sparring is not None else 0.0
        draw = self.rng.random()
        if draw < sparring:
            self.opponent[g] = -2
        elif self.pool and draw < sparring + self.settings.past_share:
            self.opponent[g] = self.rng.integers(len(self.pool))
        else:
            self.opponent[g] = -1
        if self.opponent[g] == -2:     # side 0 attacks (tafl_env.engine.state)
            self.learner_side[g] = 0 if self.rng.random() < self.settings.sparring_attacks else 1
        else:
            self.learner_side[g] = self.rng.integers(2)

    def play(self, positions: int) -> GameBatch:
        """Play on until the games finished since this call hold at least ``positions`` recorded
        positions; returns them."""
        out = GameBatch()
        st, eng = self.settings, self.engine
        b = st.games
        if not hasattr(self, "_started"):
            self._started = True
            for g in range(b):
                self._new_game(g)
        while out.positions < positions:
            state = self.state
            full = self.rng.random(b) < st.full_search_fraction
            sims = np.where(full, st.simulations, st.fast_simulations)
            actions = np.full(b, -1, dtype=np.int64)
            mine = (self.opponent == -1) | (state.to_move == self.learner_side)
            groups = [(self.search, np.flatnonzero(mine))]
            for k, search in enumerate(self.pool):
                groups.append((search, np.flatnonzero(~mine & (self.opponent == k))))
            sparring = np.flatnonzero(~mine & (self.opponent == -2))
            if self.sparring_defender is self.sparring:     # one agent: one call over all its games
                movers = ((self.sparring, sparring),)
            else:
                defends = self.learner_side[sparring] == 0      # the learner attacks (side 0)
                movers = ((self.sparring, sparring[~defends]), (self.sparring_defender, sparring[defends]))
            for agent, rows in movers:
                if len(rows):
                    actions[rows] = agent.act(eng, state.take(rows))
            for gi, (search, rows) in enumerate(groups):
                if not len(rows):
                    continue
                sub = state.take(rows)
                before = search.leaf_evaluations
                res = search.run(sub, sims[rows], noise=True)
                out.leaf_evaluations += search.leaf_evaluations - before
                chosen = res.action.copy()
                opening = np.flatnonzero(sub.turn < st.opening_moves)
                for i in opening:
                    v = res.visits[i].astype(np.float64)
                    if v.sum() > 0:
                        chosen[i] = res.actions[i, self.rng.choice(len(v), p=v / v.sum())]
                actions[rows] = chosen
                if gi == 0:
                    rec = np.flatnonzero(full[rows] & (res.simulations > 0))
                    if len(rec):
                        obs = encode_planes(observe(eng, sub.take(rec), sub.to_move[rec].astype(np.intp)))
                        for j, i in enumerate(rec):
                            cnt = int((res.actions[i] >= 0).sum())
                            self._records[rows[i]].append(
                                (obs[j], res.actions[i, :cnt].astype(np.int32),
                                 res.target[i, :cnt].astype(np.float32), int(sub.to_move[i]), float(res.value[i])))
            eng.step(state, actions)
            out.moves += b
            for g in np.flatnonzero(state.done):
                self._finish(g, out)
                self._new_game(g)
        return out

    def _finish(self, g: int, out: GameBatch) -> None:
        st, state = self.settings, self.state
        if self.opponent[g] == -2:
            side = int(self.learner_side[g])
            attacker = attacker_score(RESULT_NAMES[int(state.winner[g])] or "draw")     # a capped game: 1/2
            tally = out.sparring[SIDES[side]]
            tally[0] += attacker if side == 0 else 1.0 - attacker
            tally[1] += 1
        out.add_finished(self.engine, state, g, self._records[g], st.draw_value, st.capped_value, st.value_mix,
                         self._judge)
