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

The games are a fixed function of their inputs (the rules, the teacher, the count, ``epsilon``,
the seed, the draw and cap values, ``opening_moves``): a complete warm start is kept in
:data:`CACHE_DIR` under those inputs (:func:`cache_key`), and a later run with the same ones
reads it instead of playing it again. A run's time limit bounds the warm start too: play stops
at the deadline, the games finished by then are kept (not cached), and training goes on from them.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np

from tafl_env.engine import Engine
from tafl_env.observation import observe

from ..greedy.agent import GreedyAgent
from .replay import encode_planes
from .selfplay import CAPPED_BY_EVALUATION, GameBatch

__all__ = ["teacher_games", "cache_key", "load_cached", "save_cached", "CACHE_DIR"]


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
                  draw_value: float = 0.0, capped_value: float | str = 0.0, opening_moves: int = 0,
                  batch: int = 128, progress=None, deadline: float | None = None) -> GameBatch:
    """``games`` games of ``agent`` (an :class:`agents.base.Agent`) against itself, ``batch`` at a
    time, every position recorded (module docstring). Each game is recorded as it finishes; at
    ``deadline`` (a :func:`time.monotonic` time) play stops and the unfinished games are dropped
    (the batch's ``complete`` is then False)."""
    if hasattr(agent, "reuse"):
        agent.reuse = False         # the batch's rows change as games end: no tree to keep
    judge = GreedyAgent(seed=0) if capped_value == CAPPED_BY_EVALUATION else None
    out = GameBatch()
    left = games
    late = lambda: deadline is not None and time.monotonic() >= deadline
    while left > 0 and not late():
        b = min(batch, left)
        left -= b
        state = engine.initial_state(b)
        recs: list[list] = [[] for _ in range(b)]
        recorded = np.zeros(b, dtype=bool)
        while not late():
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
            for g in np.flatnonzero(state.done & ~recorded):
                recorded[g] = True
                out.add_finished(engine, state, g, recs[g], draw_value, capped_value, judge=judge)
                recs[g] = []
                if progress is not None:
                    progress(1)
    out.complete = out.games == games
    return out


CACHE_DIR = Path("runs") / "cache" / "warm_start"
"""Where finished warm starts are kept (relative to the working directory), by their inputs."""

CACHE_ARRAYS = {"planes": np.uint8, "actions": np.int32, "targets": np.float32, "values": np.float32,
                "counts": np.int64}


def cache_key(rules, spec: str, games: int, epsilon: float, seed: int, draw_value: float, capped_value: float,
              opening_moves: int) -> str:
    """The warm start's inputs as a file name: every one changes its games."""
    from ..model_rules import model_info

    inputs = {"rules": model_info(rules), "teacher": spec, "games": games, "epsilon": epsilon, "seed": seed,
              "draw_value": draw_value, "capped_value": capped_value, "opening_moves": opening_moves,
              "format": 1}
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()[:20]
    return f"{rules.name}-{digest}"


def load_cached(path: Path, n: int) -> GameBatch | None:
    """The cached warm start at ``path`` (``None`` when there is none, or it cannot be used: then
    it is played again and written anew)."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as npz:
            d = {k: npz[k] for k in CACHE_ARRAYS}
        ok = all(d[k].dtype == np.dtype(t) for k, t in CACHE_ARRAYS.items()) and d["planes"].ndim == 4 \
            and d["planes"].shape[1:3] == (n, n) and len(d["values"]) == len(d["planes"]) == len(d["actions"]) \
            and np.isfinite(d["targets"]).all() and np.isfinite(d["values"]).all() and d["counts"].shape == (6,)
    except (OSError, ValueError, KeyError, EOFError):
        return None
    if not ok:
        return None
    gb = GameBatch()
    gb.planes, gb.actions, gb.targets, gb.values = [d["planes"]], [d["actions"]], [d["targets"]], [d["values"]]
    c = [int(x) for x in d["counts"]]
    gb.games, gb.moves = c[0], c[1]
    gb.results = dict(zip(("attacker", "defender", "draw", "capped"), c[2:]))
    gb.complete = True
    return gb


def save_cached(path: Path, gb: GameBatch) -> None:
    """Write a complete warm start to ``path`` (atomically)."""
    planes, actions, targets, values = gb.arrays()
    counts = np.array([gb.games, gb.moves] + [gb.results[k] for k in ("attacker", "defender", "draw", "capped")],
                      dtype=np.int64)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, planes=planes, actions=actions, targets=targets, values=values, counts=counts)
    os.replace(tmp, path)
