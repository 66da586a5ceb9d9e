"""An optional warm start: greedy-vs-greedy games whose positions enter the replay window before
self-play, so that both sides begin with the greedy agent's play instead of none.

Measured reason (results/training/legacy_ard_ri_az/): tabula rasa, Ard Ri's attackers won 36 of
6,948 self-play games in 40 minutes, so the attackers' value targets were almost all -1 and
their policy targets carried no sign of a winning line. Greedy games (agents/greedy/agent.py) give both
sides games that end by their own moves.

Each position records the legal moves with a one-hot target on the greedy agent's move and the
game's result as the value target (``draw_value`` / ``capped_value`` as in self-play); with
probability ``epsilon`` the move played is a random legal one instead (the target stays the
greedy move), for variety.
"""

from __future__ import annotations

import numpy as np

from tafl_env.engine import Engine
from tafl_env.engine.state import DRAW, TRUNCATED
from tafl_env.observation import observe

from ..greedy import GreedyAgent
from .replay import encode_planes
from .selfplay import GameBatch

__all__ = ["greedy_games"]


def greedy_games(engine: Engine, games: int, epsilon: float, rng: np.random.Generator,
                 draw_value: float = 0.0, capped_value: float = 0.0, batch: int = 128,
                 progress=None) -> GameBatch:
    """``games`` greedy-vs-greedy games (``batch`` at a time), every position recorded."""
    agent = GreedyAgent(seed=int(rng.integers(2**31)))
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
            greedy = agent.act(engine, sub)
            mask = engine.legal_action_mask(sub).astype(bool)
            obs = encode_planes(observe(engine, sub, sub.to_move.astype(np.intp)))
            played = greedy.copy()
            for i, g in enumerate(live):
                legal = np.flatnonzero(mask[i])
                target = (legal == greedy[i]).astype(np.float32)
                recs[g].append((obs[i], legal.astype(np.int32), target, int(sub.to_move[i])))
                if rng.random() < epsilon:
                    played[i] = legal[rng.integers(len(legal))]
            actions = np.full(b, -1, dtype=np.int64)
            actions[live] = played
            engine.step(state, actions)
            out.moves += len(live)
        for g in range(b):
            winner = int(state.winner[g])
            capped = int(state.reason[g]) == TRUNCATED
            out.games += 1
            out.turns += int(state.turn[g])
            out.results["capped" if capped else ("draw" if winner == DRAW else ("attacker", "defender")[winner])] += 1
            width = max(len(r[1]) for r in recs[g])
            acts = np.full((len(recs[g]), width), -1, dtype=np.int32)
            tgts = np.zeros((len(recs[g]), width), dtype=np.float32)
            vals = np.zeros(len(recs[g]), dtype=np.float32)
            for i, (_, a, t, side) in enumerate(recs[g]):
                acts[i, :len(a)] = a
                tgts[i, :len(t)] = t
                vals[i] = (capped_value if capped else draw_value) if (capped or winner == DRAW) else \
                    (1.0 if winner == side else -1.0)
            out.planes.append(np.stack([r[0] for r in recs[g]]))
            out.actions.append(acts)
            out.targets.append(tgts)
            out.values.append(vals)
        if progress is not None:
            progress(b)
    return out
