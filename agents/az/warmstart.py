"""An optional warm start: games of a teacher agent against itself whose positions enter the
replay window before self-play, so that both sides begin with the teacher's play instead of none.

Measured reason (results/training/legacy_ard_ri_az/): tabula rasa, Ard Ri's attackers won 36 of
6,948 self-play games in 40 minutes, so the attackers' value targets were almost all -1 and
their policy targets carried no sign of a winning line. A teacher's games give both sides games
that end by their own moves: ``greedy`` (agents/greedy/agent.py; its attackers won 11% of its
Ard Ri games) or the compiled MCTS, ``mcts:N`` (between MCTS players of one budget the two sides
of Ard Ri win about equally often, results/anchors/legacy_ard_ri/).

Each position records the legal moves with the teacher's target -- the visit counts of its
root where it searched one (:meth:`agents.mcts.MCTSAgent.root_policy`), else one-hot on its move --
and the game's result as the value target (``draw_value`` / ``capped_value`` as in self-play).
For variety, the first ``opening_moves`` turns of a game play a move drawn in proportion to the
target, and any move is replaced by a random legal one with probability ``epsilon`` (the target
stays the teacher's).
"""

from __future__ import annotations

import numpy as np

from tafl_env.engine import Engine
from tafl_env.engine.state import TRUNCATED
from tafl_env.observation import observe

from .replay import encode_planes
from .selfplay import GameBatch

__all__ = ["teacher_games"]


def _target(agent, i: int, legal: np.ndarray, move: int) -> np.ndarray:
    """The teacher's policy over ``legal`` for row ``i`` of its last batch."""
    policy = agent.root_policy(i) if hasattr(agent, "root_policy") else None
    target = np.zeros(len(legal), dtype=np.float32)
    if policy is None:
        target[legal == move] = 1.0
        return target
    actions, visits = policy
    where = np.searchsorted(legal, actions)
    ok = (where < len(legal)) & (legal[np.minimum(where, len(legal) - 1)] == actions)
    np.add.at(target, where[ok], visits[ok])
    if target.sum() <= 0:
        target[legal == move] = 1.0
    return target / target.sum()


def teacher_games(engine: Engine, agent, games: int, epsilon: float, rng: np.random.Generator,
                  draw_value: float = 0.0, capped_value: float = 0.0, opening_moves: int = 0,
                  batch: int = 128, progress=None) -> GameBatch:
    """``games`` games of ``agent`` (an :class:`agents.base.Agent`) against itself, ``batch`` at a
    time, every position recorded (module docstring)."""
    if hasattr(agent, "reuse"):
        agent.reuse = False         # the batch's rows change as games end: no tree to keep
    out = GameBatch()
    left = games
    while left > 0:
        b = min(batch, left)
        left -= b
        state = engine.initial_state(b)
        recs: list[list] = [[] for _ in range(b)]
        while True:
            live = np.flatnonzero(~state.done)
            if not len(live):
                break
            sub = state.take(live)
            moves = agent.act(engine, sub)
            mask = engine.legal_action_mask(sub).astype(bool)
            obs = encode_planes(observe(engine, sub, sub.to_move.astype(np.intp)))
            played = moves.copy()
            for i, g in enumerate(live):
                legal = np.flatnonzero(mask[i])
                target = _target(agent, i, legal, int(moves[i]))
                recs[g].append((obs[i], legal.astype(np.int32), target, int(sub.to_move[i]), 0.0))
                if rng.random() < epsilon:
                    played[i] = legal[rng.integers(len(legal))]
                elif sub.turn[i] < opening_moves:
                    p = target.astype(np.float64)
                    played[i] = legal[rng.choice(len(legal), p=p / p.sum())]
            actions = np.full(b, -1, dtype=np.int64)
            actions[live] = played
            engine.step(state, actions)
            out.moves += len(live)
        for g in range(b):
            out.add_game(recs[g], int(state.winner[g]), int(state.reason[g]) == TRUNCATED,
                         int(state.turn[g]), draw_value, capped_value)
        if progress is not None:
            progress(b)
    return out
