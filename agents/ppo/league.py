"""The league: the VecEnv of a training run (:func:`make_train_env`) and its frozen snapshot opponent.

Each rollout mixes groups of games (``GROUPS``, sizes from the config): self-play, games against a
frozen past snapshot (:class:`FrozenOpponent`, reloaded from the pool at each rollout), against
the greedy agent, against random play and, optionally, more greedy games in which the learner
always attacks. The module docstring of :mod:`agents.ppo` explains why.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

import numpy as np

from ..train_fields import rules_of

__all__ = ["GROUPS", "make_train_env", "FrozenOpponent", "state_dict_copy"]


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

        from ..nn import masked_sample

        with th.no_grad():
            logits = self.policy.action_logits(th.as_tensor(obs))
        return masked_sample(logits, mask, self.rng, deterministic=False)


def state_dict_copy(policy) -> dict:
    """A detached copy of the policy's weights: a plain ``{name: tensor}`` dict (a pool entry)."""
    return {k: v.detach().clone() for k, v in policy.state_dict().items()}


GROUPS = ("selfplay", "snapshot", "greedy", "random", "greedy_attacker")


def make_train_env(cfg: Mapping[str, Any], seed: int | None = None):
    """The league VecEnv of a config: ``(venv, groups)`` with ``groups`` the name of each part."""
    from tafl_env.sb3 import ConcatTaflVecEnv, TaflSB3VecEnv

    from ..greedy import GreedyAgent

    rules = rules_of(cfg)
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


