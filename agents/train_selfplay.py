"""Self-play training: MaskablePPO, one network for both sides, against a league of opponents.

Run it with ``tafl train --config configs/train/<variant>.yaml`` (or :func:`train` from Python).

**One network for both sides.** The attackers and the defenders share one policy/value network.
The observation is always from the point of view of the side to act (own/enemy piece planes) and
plane 10 says whether that side is the defenders (:mod:`tafl_env.observation`), so the network can
still play two different games; sharing means every game trains it twice (once per side), the
features that both sides need (where the king can run, which pieces hang) are learnt once, and
a single checkpoint plays either side (``tafl play ... --vs policy:PATH`` for both).

**The league.** Each rollout mixes four groups of games, sizes set in the config:

- ``selfplay_games``: the learner plays both sides (two VecEnv slots per game, the waiting slot can
  only pass; :class:`tafl_env.sb3.TaflSB3VecEnv` self-play mode);
- ``snapshot_games``: the learner against a *frozen past version of itself*, drawn at the start of
  every rollout from a pool of the last ``pool_size`` snapshots (one taken every
  ``snapshot_every`` steps; the pool starts with the initial network). The snapshot samples from
  its masked policy. Playing only its latest self lets a policy chase its own tail (forgetting how
  to beat older strategies); the pool keeps old strategies in the mix;
- ``greedy_games`` and ``random_games``: the learner against the greedy agent
  (:mod:`agents.greedy`, acting on the engine state through
  :class:`tafl_env.vector.EngineOpponent`) and against uniform random play: fixed, non-learning
  opponents that anchor the learner to an absolute standard.
- ``greedy_attacker_games`` (optional, 0 by default): more games against the greedy agent in which
  the learner always plays the attackers (group ``greedy_attacker``), for a variant where the
  attackers' side is the harder one to learn (Tablut) and would otherwise get only half of the
  greedy games.

In every other opponent game the learner's side alternates from episode to episode. All groups are
sides of one :class:`tafl_env.sb3.ConcatTaflVecEnv`; PPO sees only the learner's moves.

**Rewards.** +1 win, −1 loss, 0 draw and truncation (DESIGN.md); no shaping.

**Optional warm start** (``imitation_games > 0``; off by default). Before PPO, the network is fitted
to the moves of the greedy agent in ``imitation_games`` greedy-vs-greedy games (a quarter of the
moves played at random for variety, ``imitation_epsilon``): cross-entropy over the legal moves for
the policy, and the discounted game results for the value head (:func:`imitation_data`,
:func:`imitate`). With ``imitation_target: best`` the policy target is instead the whole set of
moves that the greedy agent scores best (it often has several equal moves and picks one at
random; fitting its random pick caps the accuracy and blurs the policy), with the loss ``-log`` of
the probability of that set. ``imitation_lr`` and ``imitation_batch_size`` set the warm start's
own learning rate and minibatch (default: PPO's). It is behaviour cloning, not self-play, and
only a starting point: on a 2-core CPU it replaces the first minutes in which PPO from scratch
learns what a move is worth. The tuned configs of legacy_ard_ri and historical_tablut use it (the
recorded results say so); its time counts towards ``max_minutes``.

**Outputs** (``output_dir``): ``config.yaml`` (the resolved config), ``command.txt``, ``tb/``
(TensorBoard: SB3's ``train/*`` losses, ``league/*`` win rates of finished training games per
group and side, ``eval/*`` win rates of the periodic evaluations), ``checkpoints/step_<T>.zip``
(with ``step_<T>.pool.pt``, the snapshot pool, for resuming), ``final.zip``, ``eval.csv`` and
``eval.json`` (every evaluation: win/draw/loss counts per opponent and side with Wilson 95%
intervals), ``final_eval.json`` and ``learning_curve.png``.

**Evaluation.** Every ``eval_every`` steps and at the end, the current policy (greedy argmax over
legal moves unless ``eval_deterministic: false``) plays ``eval_games`` games per side against each
of ``eval_opponents`` through :func:`agents.evaluate.play_games`.

**Resuming.** ``tafl train --config C --resume OUT/checkpoints/step_T.zip`` reloads the model, the
optimiser and the snapshot pool and continues to ``total_timesteps``.
"""

from __future__ import annotations

import copy
import csv
import json
import math
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from tafl_env.engine import State
from tafl_env.rules import SIDES, VARIANTS, make_rules

from .base import Agent
from .evaluate import (ConfigError, FieldSpec, check_schema, play_games, read_yaml_config,
                       wilson_interval)

__all__ = ["TRAIN_SCHEMA", "validate_train_config", "load_train_config", "train", "make_train_env",
           "NetAgent", "evaluate_agent", "plot_learning_curve"]


def _pos(v):
    return None if v > 0 else f"must be > 0, got {v}"


def _nonneg(v):
    return None if v >= 0 else f"must be >= 0, got {v}"


def _unit(v):
    return None if 0 <= v <= 1 else f"must lie in [0, 1], got {v}"


def _opponents_check(v):
    if not v:
        return "needs at least one opponent"
    for x in v:
        if x not in ("random", "greedy") and not (isinstance(x, str) and x.startswith(("mcts:", "policy:"))):
            return f"unknown opponent {x!r} (random, greedy, mcts:N, policy:PATH)"
    return None


TRAIN_SCHEMA: dict[str, FieldSpec] = {
    "variant": FieldSpec((str,), True, None, "variant id (tafl_env.VARIANTS)",
                         lambda v: None if v in VARIANTS else f"unknown variant {v!r}; one of {', '.join(VARIANTS)}"),
    "description": FieldSpec((str,), False, "", "free text", None),
    "seed": FieldSpec((int,), False, 0, "seed of the network, the envs, the snapshot draws and evaluations", _nonneg),
    "total_timesteps": FieldSpec((int,), True, None, "learner steps (all envs together) to train for", _pos),
    "max_minutes": FieldSpec((int, float, type(None)), False, None,
                             "stop after this many minutes of wall time (null: no limit)",
                             lambda v: None if v is None or v > 0 else f"must be > 0 or null, got {v}"),
    "max_turns": FieldSpec((int, type(None)), False, None, "move cap in turns; null: the variant's default",
                           lambda v: None if v is None or v >= 1 else f"must be >= 1 or null, got {v}"),
    "options": FieldSpec((dict,), False, {}, "rule options (RULES.md) for make_rules", None),
    # the league
    "selfplay_games": FieldSpec((int,), False, 16, "games in which the learner plays both sides", _nonneg),
    "snapshot_games": FieldSpec((int,), False, 16, "games against a frozen past snapshot", _nonneg),
    "greedy_games": FieldSpec((int,), False, 16, "games against the greedy agent", _nonneg),
    "random_games": FieldSpec((int,), False, 0, "games against the random agent", _nonneg),
    "greedy_attacker_games": FieldSpec((int,), False, 0,
                                       "more games against the greedy agent, the learner always attacking",
                                       _nonneg),
    "pool_size": FieldSpec((int,), False, 8, "snapshots kept in the pool", _pos),
    "snapshot_every": FieldSpec((int,), False, 50_000, "steps between snapshots added to the pool", _pos),
    # warm start (off by default)
    "imitation_games": FieldSpec((int,), False, 0,
                                 "greedy-vs-greedy games whose moves the network imitates before PPO (0: none)",
                                 _nonneg),
    "imitation_epsilon": FieldSpec((int, float), False, 0.25,
                                   "chance that a move of those games is played at random (variety)", _unit),
    "imitation_epochs": FieldSpec((int,), False, 3, "passes over the imitation data", _pos),
    "imitation_target": FieldSpec((str,), False, "move",
                                  "what the policy imitates: the greedy agent's move, or its set of best moves",
                                  lambda v: None if v in ("move", "best") else f"must be 'move' or 'best', got {v!r}"),
    "imitation_lr": FieldSpec((int, float, type(None)), False, None,
                              "Adam learning rate of the warm start (null: learning_rate)",
                              lambda v: None if v is None or v > 0 else f"must be > 0 or null, got {v}"),
    "imitation_batch_size": FieldSpec((int, type(None)), False, None,
                                      "minibatch size of the warm start (null: batch_size)",
                                      lambda v: None if v is None or v > 0 else f"must be > 0 or null, got {v}"),
    # the network
    "channels": FieldSpec((int,), False, 32, "conv channels of the trunk", _pos),
    "blocks": FieldSpec((int,), False, 3, "residual blocks of the trunk", _nonneg),
    "value_hidden": FieldSpec((int,), False, 64, "units of the value MLP", _pos),
    "torch_threads": FieldSpec((int,), False, 2, "torch CPU threads", _pos),
    # PPO
    "learning_rate": FieldSpec((int, float), False, 3e-4, "Adam learning rate", _pos),
    "lr_final_fraction": FieldSpec((int, float), False, 1.0,
                                   "learning rate at the end as a fraction of the start (linear decay)", _unit),
    "n_steps": FieldSpec((int,), False, 64, "steps per env per rollout", _pos),
    "batch_size": FieldSpec((int,), False, 512, "minibatch size", _pos),
    "n_epochs": FieldSpec((int,), False, 4, "passes over each rollout", _pos),
    "gamma": FieldSpec((int, float), False, 0.99, "discount per learner step", _unit),
    "gae_lambda": FieldSpec((int, float), False, 0.95, "GAE lambda", _unit),
    "clip_range": FieldSpec((int, float), False, 0.2, "PPO clip range", _pos),
    "ent_coef": FieldSpec((int, float), False, 0.01, "entropy bonus coefficient", _nonneg),
    "vf_coef": FieldSpec((int, float), False, 0.5, "value loss coefficient", _nonneg),
    "max_grad_norm": FieldSpec((int, float), False, 0.5, "gradient clipping norm", _pos),
    "target_kl": FieldSpec((int, float, type(None)), False, None, "stop an update early past this KL (null: never)",
                           lambda v: None if v is None or v > 0 else f"must be > 0 or null, got {v}"),
    # evaluation, checkpoints, output
    "eval_every": FieldSpec((int,), False, 50_000, "steps between evaluations (0: only at the end)", _nonneg),
    "eval_games": FieldSpec((int,), False, 50, "games per side per opponent in a periodic evaluation", _pos),
    "final_eval_games": FieldSpec((int,), False, 200, "games per side per opponent in the final evaluation", _pos),
    "eval_opponents": FieldSpec((list,), False, ["random", "greedy"], "agent specs to evaluate against",
                                _opponents_check),
    "eval_deterministic": FieldSpec((bool,), False, True, "evaluate with the argmax move (else sample)", None),
    "checkpoint_every": FieldSpec((int,), False, 100_000, "steps between checkpoints (0: none)", _nonneg),
    "output_dir": FieldSpec((str,), False, None, "output directory; default runs/<variant>",
                            lambda v: None if v.strip() else "must not be empty"),
    "progress_bar": FieldSpec((bool,), False, True, "show a progress bar", None),
}
"""The fields of a training config: types, whether required, default, meaning and range check."""


def validate_train_config(raw: Any, source: str = "train config") -> dict[str, Any]:
    """Check a parsed config against :data:`TRAIN_SCHEMA`; return it with the defaults filled.

    Raises :class:`agents.evaluate.ConfigError` naming the field (unknown key, missing required
    field, wrong type, value out of range).

    >>> validate_train_config({"variant": "legacy_ard_ri", "total_timesteps": 1000, "gamma": 2})
    Traceback (most recent call last):
    ...
    agents.evaluate.ConfigError: train config: field 'gamma': must lie in [0, 1], got 2
    """
    out = check_schema(raw, TRAIN_SCHEMA, source)
    n_envs = (2 * out["selfplay_games"] + out["snapshot_games"] + out["greedy_games"] + out["random_games"]
              + out["greedy_attacker_games"])
    if n_envs == 0:
        raise ConfigError("selfplay_games", "the league is empty: at least one of selfplay_games, "
                                            "snapshot_games, greedy_games, random_games, greedy_attacker_games "
                                            "must be > 0", source)
    if out["batch_size"] > n_envs * out["n_steps"]:
        raise ConfigError("batch_size", f"{out['batch_size']} is larger than a rollout "
                                        f"({n_envs} envs x {out['n_steps']} steps)", source)
    try:
        _rules(out)
    except ValueError as exc:
        raise ConfigError("options", str(exc), source) from None
    if out["output_dir"] is None:
        out["output_dir"] = f"runs/{out['variant']}"
    return out


def load_train_config(path: str | os.PathLike) -> dict[str, Any]:
    """Read a YAML training config and validate it (:func:`validate_train_config`)."""
    return validate_train_config(read_yaml_config(path), source=str(path))


def _rules(cfg: Mapping[str, Any]):
    opts = dict(cfg["options"])
    if cfg["max_turns"] is not None:
        opts["max_turns"] = cfg["max_turns"]
    return make_rules(cfg["variant"], **opts)


# --- agents and opponents built from a policy -----------------------------------------------------

class NetAgent(Agent):
    """An engine agent (:class:`agents.base.Agent`) from a :class:`agents.networks.TaflBoardPolicy`.

    Observations with :func:`tafl_env.observation.observe` from the side to move, masks from the
    engine; argmax over the legal moves (``deterministic``) or a sample of the masked policy.
    """

    name = "net"

    def __init__(self, policy, deterministic: bool = True, seed: int | None = None):
        super().__init__(seed)
        self.policy = policy
        self.deterministic = deterministic

    def choose(self, engine, state: State) -> np.ndarray:
        import torch as th

        from tafl_env.observation import observe

        from .networks import masked_sample

        obs = observe(engine, state, state.to_move.astype(np.intp))
        mask = engine.legal_action_mask(state)
        with th.no_grad():
            logits = self.policy.action_logits(th.as_tensor(obs))
        return masked_sample(logits, mask, self.rng, self.deterministic)


class FrozenOpponent:
    """A frozen copy of the policy acting on ``(obs, mask)``: a VecEnv opponent (samples)."""

    def __init__(self, policy, seed: int | None = None):
        self.policy = copy.deepcopy(policy)
        self.policy.set_training_mode(False)
        for p in self.policy.parameters():
            p.requires_grad_(False)
        self.rng = np.random.default_rng(seed)

    def load(self, state_dict) -> None:
        self.policy.load_state_dict(state_dict)

    def __call__(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        import torch as th

        from .networks import masked_sample

        with th.no_grad():
            logits = self.policy.action_logits(th.as_tensor(obs))
        return masked_sample(logits, mask, self.rng, deterministic=False)


def _state_dict_copy(policy) -> dict:
    return {k: v.detach().clone() for k, v in policy.state_dict().items()}


# --- the environment ------------------------------------------------------------------------------

GROUPS = ("selfplay", "snapshot", "greedy", "random", "greedy_attacker")


def make_train_env(cfg: Mapping[str, Any], seed: int | None = None):
    """The league VecEnv of a config: ``(venv, groups)`` with ``groups`` the name of each part."""
    from tafl_env.sb3 import ConcatTaflVecEnv, TaflSB3VecEnv

    from .greedy import GreedyAgent

    rules = _rules(cfg)
    parts, groups = [], []
    if cfg["selfplay_games"]:
        parts.append(TaflSB3VecEnv(rules, num_envs=2 * cfg["selfplay_games"]))
        groups.append("selfplay")
    if cfg["snapshot_games"]:
        parts.append(TaflSB3VecEnv(rules, num_envs=cfg["snapshot_games"], opponent="random",
                                   learner_side="alternate"))     # the snapshot is set by the trainer
        groups.append("snapshot")
    if cfg["greedy_games"]:
        greedy = GreedyAgent(seed=None if seed is None else seed + 7)
        parts.append(TaflSB3VecEnv(rules, num_envs=cfg["greedy_games"], opponent=greedy,
                                   learner_side="alternate"))
        groups.append("greedy")
    if cfg["random_games"]:
        parts.append(TaflSB3VecEnv(rules, num_envs=cfg["random_games"], opponent="random",
                                   learner_side="alternate"))
        groups.append("random")
    if cfg.get("greedy_attacker_games"):
        greedy_d = GreedyAgent(seed=None if seed is None else seed + 11)
        parts.append(TaflSB3VecEnv(rules, num_envs=cfg["greedy_attacker_games"], opponent=greedy_d,
                                   learner_side="attacker"))
        groups.append("greedy_attacker")
    venv = ConcatTaflVecEnv(parts)
    if seed is not None:
        venv.seed(seed)
    return venv, groups


# --- evaluation -----------------------------------------------------------------------------------

def evaluate_agent(agent: Agent, cfg: Mapping[str, Any], games: int, seed: int,
                   opponents=None) -> dict[str, Any]:
    """``agent`` against each opponent spec, ``games`` games per side; Wilson 95% intervals.

    Returns ``{opponent: {"attacker": row, "defender": row, "both": row}}`` where a row has
    ``games, wins, draws, losses, win_rate, win_low, win_high, score, score_low, score_high``.
    """
    from .base import make_agent

    rules = _rules(cfg)
    out: dict[str, Any] = {}
    for j, spec in enumerate(opponents or cfg["eval_opponents"]):
        opp = make_agent(spec, seed=seed + j)
        rows = {}
        results = {}
        for s, side in enumerate(SIDES):
            leg_seed = seed * 1000 + 10 * j + s
            if side == "attacker":
                res = play_games(rules, agent, opp, games, seed=leg_seed)
            else:
                res = play_games(rules, opp, agent, games, seed=leg_seed)
            results[side] = [r["result"] for r in res]
            rows[side] = _row([r == side for r in results[side]], [r == "draw" for r in results[side]])
        both_w = [r == side for side in SIDES for r in results[side]]
        both_d = [r == "draw" for side in SIDES for r in results[side]]
        rows["both"] = _row(both_w, both_d)
        out[spec] = rows
    return out


def _row(wins, draws) -> dict[str, Any]:
    n = len(wins)
    w, d = int(sum(wins)), int(sum(draws))
    lo, hi = wilson_interval(w, n)
    slo, shi = wilson_interval(w + 0.5 * d, n)
    return {"games": n, "wins": w, "draws": d, "losses": n - w - d, "win_rate": w / n,
            "win_low": lo, "win_high": hi, "score": (w + 0.5 * d) / n, "score_low": slo, "score_high": shi}


EVAL_CSV_FIELDS = ["timesteps", "minutes", "opponent", "side", "games", "wins", "draws", "losses",
                   "win_rate", "win_low", "win_high", "score", "score_low", "score_high"]


def _eval_rows(ev: Mapping[str, Any], timesteps: int, minutes: float) -> list[dict[str, Any]]:
    rows = []
    for opp, sides in ev.items():
        for side, r in sides.items():
            rows.append({"timesteps": timesteps, "minutes": round(minutes, 2), "opponent": opp, "side": side,
                         **{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}})
    return rows


def plot_learning_curve(eval_csv: str | os.PathLike, path: str | os.PathLike, title: str = "") -> Path:
    """Win rate (with Wilson 95% bands) against each opponent, per side and both, over training."""
    from matplotlib.figure import Figure   # no pyplot: leaves the caller's backend alone

    with open(eval_csv, newline="") as fh:
        rows = list(csv.DictReader(fh))
    opponents = list(dict.fromkeys(r["opponent"] for r in rows))
    fig = Figure(figsize=(5.5 * len(opponents), 4))
    axes = fig.subplots(1, len(opponents), squeeze=False)
    for ax, opp in zip(axes[0], opponents):
        for side, style in (("both", "-"), ("attacker", "--"), ("defender", ":")):
            sel = [r for r in rows if r["opponent"] == opp and r["side"] == side]
            if not sel:
                continue
            x = [int(r["timesteps"]) for r in sel]
            y = [float(r["win_rate"]) for r in sel]
            line, = ax.plot(x, y, style, marker="o", ms=3, label=f"as {side}" if side != "both" else "both sides")
            ax.fill_between(x, [float(r["win_low"]) for r in sel], [float(r["win_high"]) for r in sel],
                            color=line.get_color(), alpha=0.12)
        ax.set_title(f"vs {opp}")
        ax.set_xlabel("training steps")
        ax.set_ylabel("win rate")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    return path


# --- the optional warm start: behaviour cloning of the greedy agent -------------------------------

def _greedy_best(greedy, eng, sub: State) -> tuple[np.ndarray, np.ndarray]:
    """The greedy agent's choice and its whole set of best moves (ties), from one scoring pass:
    ``(actions (R,), packed best-move bits (R, ceil(A/8)) uint8)``. The choice is a uniform draw
    from the set, made by the agent's own tie-break (:meth:`GreedyAgent.pick`)."""
    scores, parent, action = greedy.score_moves(eng, sub)
    r = len(sub)
    top = np.full(r, -np.inf)
    np.maximum.at(top, parent, scores)
    best = scores >= top[parent]
    bits = np.zeros((r, eng.num_actions), dtype=bool)
    bits[parent[best], action[best]] = True
    return greedy.pick(r, scores, parent, action), np.packbits(bits, axis=1)


def imitation_data(cfg: Mapping[str, Any], games: int, seed: int, batch: int = 128):
    """Positions of greedy-vs-greedy games: ``(obs float16, mask bool, greedy action, value target)``,
    and with ``imitation_target: best`` a fifth array, the greedy agent's set of best moves in each
    position (packed bits, ``np.packbits(..., axis=1)`` of a (positions, A) bool array).

    With probability ``imitation_epsilon`` a move is played at random instead (the recorded target
    is still the greedy agent's choice), so the games vary. The value target is the final result
    from the mover's side, discounted by ``gamma`` per own move still to come.
    """
    from tafl_env.game import engine_for
    from tafl_env.observation import observe

    from .greedy import GreedyAgent

    rules = _rules(cfg)
    eng = engine_for(rules)
    rng = np.random.default_rng(seed)
    greedy = GreedyAgent(seed=seed)
    best_mode = cfg.get("imitation_target", "move") == "best"
    obs_l, mask_l, act_l, val_l, best_l = [], [], [], [], []
    done_games = 0
    while done_games < games:
        b = min(batch, games - done_games)
        st = eng.initial_state(b)
        rec = []   # (game idx, side, turn, obs, mask, action)
        while not st.done.all():
            live = np.flatnonzero(~st.done)
            sub = st.take(live)
            if best_mode:
                acts, best = _greedy_best(greedy, eng, sub)
            else:
                acts, best = greedy.act(eng, sub), None
            obs = observe(eng, sub, sub.to_move.astype(np.intp)).astype(np.float16)
            mask = eng.legal_action_mask(sub).astype(bool)
            rec.append((live, sub.to_move.copy(), sub.turn.copy(), obs, mask, acts.copy(), best))
            play = acts.copy()
            rand = rng.random(len(live)) < cfg["imitation_epsilon"]
            if rand.any():
                play[rand] = eng.random_actions(sub, rng)[rand]
            full = np.full(b, -1, dtype=np.int64)
            full[live] = play
            eng.step(st, full)
        winner, final_turn = st.winner.copy(), st.turn.copy()
        for live, side, turn, obs, mask, acts, best in rec:
            w = winner[live]
            z = np.where(w == side, 1.0, np.where(w == 1 - side, -1.0, 0.0))
            remaining = np.maximum(final_turn[live] - turn, 0) / 2.0
            val_l.append((z * cfg["gamma"] ** remaining).astype(np.float32))
            obs_l.append(obs)
            mask_l.append(mask)
            act_l.append(acts)
            if best is not None:
                best_l.append(best)
        done_games += b
    out = (np.concatenate(obs_l), np.concatenate(mask_l), np.concatenate(act_l).astype(np.int64),
           np.concatenate(val_l))
    if best_mode:
        out += (np.concatenate(best_l),)
    return out


def imitate(model, data, cfg: Mapping[str, Any], seed: int, logger=None) -> dict[str, float]:
    """Fit the policy to the greedy moves and the value head to the results (MSE),
    ``imitation_epochs`` passes of minibatches of ``imitation_batch_size`` (default ``batch_size``)
    at the learning rate ``imitation_lr`` (default ``learning_rate``; PPO's rate is restored after).

    The policy loss is the cross-entropy of the greedy agent's move over the legal moves, or, when
    ``data`` holds the best-move sets (``imitation_target: best``), ``-log`` of the probability the
    policy gives to the whole set of moves that the greedy agent scores best: where several moves
    tie, the network is free to prefer any of them (the agent picks one at random), so it is not
    pushed towards a coin flip. ``accuracy`` is the share of positions whose most probable legal
    move is the recorded greedy move; ``best_accuracy`` (with the sets) the share where it is one
    of the best moves."""
    import torch as th

    obs, mask, acts, val = data[:4]
    best_bits = data[4] if len(data) > 4 else None
    policy = model.policy
    policy.set_training_mode(True)
    opt = policy.optimizer
    lr = cfg.get("imitation_lr")
    saved_lr = [g["lr"] for g in opt.param_groups]
    if lr is not None:
        for g in opt.param_groups:
            g["lr"] = float(lr)
    rng = np.random.default_rng(seed)
    n = len(acts)
    bs = cfg.get("imitation_batch_size") or cfg["batch_size"]
    n_actions = mask.shape[1]
    stats = {}
    for epoch in range(cfg["imitation_epochs"]):
        order = rng.permutation(n)
        tot = {"policy_loss": 0.0, "value_loss": 0.0, "accuracy": 0.0}
        if best_bits is not None:
            tot["best_accuracy"] = 0.0
        for i in range(0, n, bs):
            idx = order[i:i + bs]
            o = th.as_tensor(obs[idx].astype(np.float32))
            m = th.as_tensor(mask[idx])
            a = th.as_tensor(acts[idx])
            features = policy.extract_features(o, policy.pi_features_extractor)
            logits = policy.mlp_extractor.forward_actor(features).masked_fill(~m, -1e9)
            v = policy.value_net(policy.mlp_extractor.forward_critic(features)).flatten()
            if best_bits is None:
                pl = th.nn.functional.cross_entropy(logits, a)
            else:
                b = th.as_tensor(np.unpackbits(best_bits[idx], axis=1, count=n_actions).astype(bool))
                logp = th.log_softmax(logits, dim=1)
                pl = -th.logsumexp(logp.masked_fill(~b, -1e9), dim=1).mean()
                tot["best_accuracy"] += float(b[th.arange(len(idx)), logits.argmax(1)].sum())
            vl = th.nn.functional.mse_loss(v, th.as_tensor(val[idx]))
            loss = pl + cfg["vf_coef"] * vl
            opt.zero_grad()
            loss.backward()
            th.nn.utils.clip_grad_norm_(policy.parameters(), cfg["max_grad_norm"])
            opt.step()
            k = len(idx)
            tot["policy_loss"] += pl.item() * k
            tot["value_loss"] += vl.item() * k
            tot["accuracy"] += float((logits.argmax(1) == a).float().sum())
        stats = {key: val_ / n for key, val_ in tot.items()}
        if logger is not None:
            for key, value in stats.items():
                logger.record(f"imitation/{key}", value)
            logger.record("imitation/epoch", epoch + 1)
            logger.dump(0)
    for g, saved in zip(opt.param_groups, saved_lr):
        g["lr"] = saved
    policy.set_training_mode(False)
    return stats


# --- the callback ---------------------------------------------------------------------------------

def _make_callback(cfg, out_dir: Path, venv, groups, pool: list, frozen, state: dict, progress: bool):
    from stable_baselines3.common.callbacks import BaseCallback

    class LeagueCallback(BaseCallback):
        """Snapshots, opponent draws, league stats, evaluations, checkpoints, time limit, progress."""

        def _on_training_start(self) -> None:
            self.t0 = time.time() - state.get("minutes", 0.0) * 60
            self.rng = np.random.default_rng(cfg["seed"] + 1009 * (1 + len(state.get("evals", []))))
            self.next_snapshot = state.get("next_snapshot", cfg["snapshot_every"])
            self.next_eval = state.get("next_eval", cfg["eval_every"] or math.inf)
            self.next_ckpt = state.get("next_ckpt", cfg["checkpoint_every"] or math.inf)
            self.stats = {}
            self.bar = None
            if progress:
                from tqdm.auto import tqdm

                self.bar = tqdm(total=cfg["total_timesteps"], initial=self.num_timesteps, unit="step",
                                desc=f"train {cfg['variant']}", dynamic_ncols=True, mininterval=2.0)

        def _minutes(self) -> float:
            return (time.time() - self.t0) / 60

        def _on_rollout_start(self) -> None:
            if "snapshot" in groups and pool:
                k = int(self.rng.integers(len(pool)))
                frozen.load(pool[k])
                self.logger.record("league/snapshot_drawn", k)

        def _on_step(self) -> bool:
            infos = self.locals["infos"]
            for part_i, sl in enumerate(venv.slices()):
                g = groups[part_i]
                for info in infos[sl]:
                    if "winner" in info:
                        side = SIDES[info["side"]]
                        w = info["winner"]
                        key = (g, side)
                        s = self.stats.setdefault(key, [0, 0, 0, 0])   # games, wins, draws, turns
                        s[0] += 1
                        s[1] += int(w == info["side"])
                        s[2] += int(w == 2)
                        s[3] += info["turns"]
            n = self.num_timesteps
            if self.bar is not None:
                self.bar.update(n - self.bar.n)
            if n >= self.next_snapshot:
                pool.append(_state_dict_copy(self.model.policy))
                del pool[:-cfg["pool_size"]]
                self.next_snapshot += cfg["snapshot_every"]
            if n >= self.next_eval:
                self.evaluate(cfg["eval_games"])
                self.next_eval += cfg["eval_every"]
            if n >= self.next_ckpt:
                self.checkpoint()
                self.next_ckpt += cfg["checkpoint_every"]
            if cfg["max_minutes"] is not None and self._minutes() >= cfg["max_minutes"]:
                state["stopped"] = f"time limit of {cfg['max_minutes']} minutes"
                return False
            return True

        def _on_rollout_end(self) -> None:
            for (g, side), (n, w, d, turns) in self.stats.items():
                self.logger.record(f"league/{g}_{side}_win_rate", w / n)
                self.logger.record(f"league/{g}_{side}_games", n)
                self.logger.record(f"league/{g}_{side}_mean_turns", turns / n)
            self.stats = {}
            self.logger.record("time/minutes", self._minutes())

        def evaluate(self, games: int, final: bool = False) -> dict:
            agent = NetAgent(self.model.policy, deterministic=cfg["eval_deterministic"])
            self.model.policy.set_training_mode(False)
            idx = len(state["evals"])
            ev = evaluate_agent(agent, cfg, games, seed=cfg["seed"] + 7919 * (idx + 1))
            minutes = self._minutes()
            rec = {"timesteps": int(self.num_timesteps), "minutes": round(minutes, 2), "games_per_side": games,
                   "final": final, "results": ev}
            state["evals"].append(rec)
            for opp, sides in ev.items():
                for side, r in sides.items():
                    self.logger.record(f"eval/{opp}_{side}_win_rate", r["win_rate"])
                    self.logger.record(f"eval/{opp}_{side}_score", r["score"])
            self.logger.dump(self.num_timesteps)
            _write_evals(out_dir, state["evals"])
            if self.bar is not None:
                msg = " ".join(f"{o}:{s['both']['win_rate']:.2f}" for o, s in ev.items())
                self.bar.set_postfix_str(f"eval {msg}")
            return rec

        def checkpoint(self) -> Path:
            ck = out_dir / "checkpoints"
            ck.mkdir(parents=True, exist_ok=True)
            path = ck / f"step_{self.num_timesteps}.zip"
            self.model.save(path)
            import torch as th

            every = cfg["checkpoint_every"]
            state.update(minutes=self._minutes(), next_snapshot=self.next_snapshot, next_eval=self.next_eval,
                         next_ckpt=(self.num_timesteps // every + 1) * every if every else math.inf)
            th.save({"pool": pool, "trainer": {k: v for k, v in state.items() if k != "evals"}},
                    ck / f"step_{self.num_timesteps}.pool.pt")
            return path

        def _on_training_end(self) -> None:
            state.update(minutes=self._minutes(), next_snapshot=self.next_snapshot, next_eval=self.next_eval,
                         next_ckpt=self.next_ckpt)
            if self.bar is not None:
                self.bar.close()

    return LeagueCallback()


def _write_evals(out_dir: Path, evals: list) -> None:
    (out_dir / "eval.json").write_text(json.dumps(evals, indent=1))
    with open(out_dir / "eval.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=EVAL_CSV_FIELDS)
        w.writeheader()
        for rec in evals:
            for row in _eval_rows(rec["results"], rec["timesteps"], rec["minutes"]):
                w.writerow(row)


# --- the entry point ------------------------------------------------------------------------------

def _dump_config(cfg: Mapping[str, Any], path: Path) -> None:
    import yaml

    path.write_text(yaml.safe_dump(dict(cfg), sort_keys=False))


def train(config: Mapping[str, Any], *, out_dir: str | os.PathLike | None = None,
          total_timesteps: int | None = None, resume: str | os.PathLike | None = None,
          seed: int | None = None, progress: bool | None = None, final_eval: bool = True,
          command: str | None = None) -> dict[str, Any]:
    """Train from a validated config (:func:`load_train_config`); returns a summary dict.

    ``total_timesteps``, ``seed``, ``out_dir`` override the config; ``resume`` is a checkpoint
    zip written by an earlier run (its ``.pool.pt`` beside it is read when present).
    """
    import torch as th
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.logger import configure

    from .networks import TaflBoardPolicy, board_policy_kwargs, count_parameters

    cfg = dict(config)
    if total_timesteps is not None:
        cfg["total_timesteps"] = int(total_timesteps)
    if seed is not None:
        cfg["seed"] = int(seed)
    if out_dir is not None:
        cfg["output_dir"] = str(out_dir)
    cfg = validate_train_config(cfg)
    if progress is None:
        progress = cfg["progress_bar"]
    out = Path(cfg["output_dir"])
    out.mkdir(parents=True, exist_ok=True)
    _dump_config(cfg, out / "config.yaml")
    cmd = command or " ".join(shlex.quote(a) for a in sys.argv)
    with open(out / "command.txt", "a") as fh:
        fh.write(cmd + "\n")
    th.set_num_threads(cfg["torch_threads"])

    venv, groups = make_train_env(cfg, seed=cfg["seed"])
    lr0, frac = float(cfg["learning_rate"]), float(cfg["lr_final_fraction"])

    def lr_schedule(progress_remaining: float) -> float:
        return lr0 * (frac + (1.0 - frac) * progress_remaining)

    state: dict[str, Any] = {"evals": []}
    pool: list = []
    if resume is not None:
        resume = Path(resume)
        model = MaskablePPO.load(resume, env=venv, device="cpu")
        model.learning_rate = lr_schedule
        model.lr_schedule = lr_schedule
        side = resume.with_suffix(".pool.pt")
        if side.exists():
            saved = th.load(side, weights_only=False)
            pool.extend(saved["pool"])
            state.update(saved["trainer"])
        if (out / "eval.json").exists():
            state["evals"] = [e for e in json.loads((out / "eval.json").read_text())
                              if e["timesteps"] <= model.num_timesteps]
        reset = False
    else:
        model = MaskablePPO(
            TaflBoardPolicy, venv, learning_rate=lr_schedule, n_steps=cfg["n_steps"],
            batch_size=cfg["batch_size"], n_epochs=cfg["n_epochs"], gamma=cfg["gamma"],
            gae_lambda=cfg["gae_lambda"], clip_range=cfg["clip_range"], ent_coef=cfg["ent_coef"],
            vf_coef=cfg["vf_coef"], max_grad_norm=cfg["max_grad_norm"], target_kl=cfg["target_kl"],
            policy_kwargs=board_policy_kwargs(cfg["channels"], cfg["blocks"], cfg["value_hidden"]),
            seed=cfg["seed"], device="cpu", verbose=0)
        reset = True
    state.pop("stopped", None)
    if not pool:
        pool.append(_state_dict_copy(model.policy))
    frozen = FrozenOpponent(model.policy, seed=cfg["seed"] + 31)
    if "snapshot" in groups:
        venv.parts[groups.index("snapshot")].set_opponent(frozen)
    try:
        import tensorboard  # noqa: F401  (SB3's TensorBoard writer needs it)
        formats = ["tensorboard", "csv"]
    except ImportError:  # pragma: no cover - tensorboard is in the train extra
        formats = ["csv"]
    model.set_logger(configure(str(out / "tb"), formats))
    imitation = None
    if reset and cfg["imitation_games"]:
        ti = time.time()
        data = imitation_data(cfg, cfg["imitation_games"], seed=cfg["seed"] + 101)
        imitation = imitate(model, data, cfg, seed=cfg["seed"] + 103, logger=model.logger)
        imitation.update(positions=int(len(data[2])), minutes=round((time.time() - ti) / 60, 2))
        state["minutes"] = (time.time() - ti) / 60     # counts towards max_minutes
        del data
        pool[:] = [_state_dict_copy(model.policy)]
    callback = _make_callback(cfg, out, venv, groups, pool, frozen, state, progress)
    t0 = time.time()
    remaining = cfg["total_timesteps"] - (0 if reset else model.num_timesteps)
    if remaining > 0:
        model.learn(total_timesteps=remaining, callback=callback, reset_num_timesteps=reset)
    else:  # nothing left to train: still let the callback set itself up for the final evaluation
        callback.init_callback(model)
        callback.on_training_start(locals(), globals())
        callback.on_training_end()
    seconds = time.time() - t0
    final_path = out / "final.zip"
    model.save(final_path)
    callback.checkpoint()
    summary: dict[str, Any] = {"variant": cfg["variant"], "seed": cfg["seed"], "timesteps": int(model.num_timesteps),
                               "minutes": round(state.get("minutes", seconds / 60), 2),
                               "stopped": state.get("stopped", "total_timesteps reached"),
                               "parameters": count_parameters(model.policy), "final": str(final_path),
                               "out": str(out), "num_envs": venv.num_envs, "groups": groups}
    if imitation is not None:
        summary["imitation"] = imitation
    if final_eval:
        rec = callback.evaluate(cfg["final_eval_games"], final=True)
        (out / "final_eval.json").write_text(json.dumps(rec, indent=1))
        summary["final_eval"] = {o: {s: {"win_rate": r["win_rate"], "low": r["win_low"], "high": r["win_high"]}
                                     for s, r in sides.items()} for o, sides in rec["results"].items()}
    if state["evals"]:
        plot_learning_curve(out / "eval.csv", out / "learning_curve.png",
                            title=f"{cfg['variant']}: MaskablePPO self-play league (seed {cfg['seed']})")
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    venv.close()
    return summary


def format_summary(summary: Mapping[str, Any]) -> str:
    lines = [f"{summary['variant']}: {summary['timesteps']} steps in {summary['minutes']} min "
             f"({summary['stopped']}); {summary['parameters']} parameters; model {summary['final']}"]
    for opp, sides in summary.get("final_eval", {}).items():
        parts = [f"{s} {r['win_rate']:.3f} [{r['low']:.3f}, {r['high']:.3f}]" for s, r in sides.items()]
        lines.append(f"  vs {opp}: win rate " + "; ".join(parts))
    return "\n".join(lines)
