"""The board network of Stable-Baselines3 / sb3-contrib's ``MaskablePPO`` (imports torch and SB3).

The observation is ``(N, N, 14)`` float32 planes (:mod:`tafl_env.observation`, channels last, row 0 =
rank 1). The network is:

- :class:`BoardTrunk` (an SB3 ``BaseFeaturesExtractor``): the planes permuted to NCHW, a 3×3 conv
  stem and ``blocks`` residual blocks (:class:`agents.nn.ResidualBlock`: two 3×3 convs,
  ``channels`` wide, ReLU, no batch norm). Its output is the whole feature map, flattened
  (``channels * N * N``), so the heads can still see it square by square.
- :class:`agents.nn.BoardHeads` (used as the policy's ``mlp_extractor``): the policy head, a 1×1
  conv whose channels at each square are that square's moves (the logits come out in the action
  layout, pass last), and a small value head; SB3's ``value_net`` maps its latent to one number.
- :class:`TaflBoardPolicy`: ``MaskableActorCriticPolicy`` wired to the two pieces above, with the
  policy's ``action_net`` replaced by the identity (the head already produces the logits in the
  action layout) and the last policy layer initialised small (gain 0.01, as SB3 does for its
  ``action_net``) so that the initial policy is close to uniform over the legal moves.

The RLlib module (:mod:`agents.rllib.module`) is built of the same trunk and heads.

Use it with ``MaskablePPO(TaflBoardPolicy, env, policy_kwargs=board_policy_kwargs(...))`` (see
:func:`board_policy_kwargs`). A saved model names this class (and :class:`BoardTrunk`) by its
module: zips saved from here name ``agents.ppo.network``; older zips name ``agents.networks``,
which is kept, as an alias of this module, for SB3 to unpickle them with (``unpickle-policy:``,
resuming a run). The safe loader (:func:`agents.ppo.policy.load_network`) reads neither. The
default size (32 channels, 3 blocks, ≈ 60 k parameters on 7×7) runs a PPO update of a few
thousand samples in seconds on two CPU cores.

    >>> import numpy as np, torch
    >>> from tafl_env.sb3 import TaflSB3VecEnv
    >>> from sb3_contrib import MaskablePPO
    >>> venv = TaflSB3VecEnv("legacy_ard_ri", num_envs=2, seed=0)
    >>> model = MaskablePPO(TaflBoardPolicy, venv, n_steps=8, batch_size=8,
    ...                     policy_kwargs=board_policy_kwargs(channels=8, blocks=1), seed=0)
    >>> logits = model.policy.action_logits(torch.as_tensor(venv.reset()))
    >>> tuple(logits.shape)      # one logit per action id, pass last
    (2, 1177)
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from ..nn import BoardHeads, ResidualBlock

__all__ = ["BoardTrunk", "TaflBoardPolicy", "board_policy_kwargs", "count_parameters"]


class BoardTrunk(BaseFeaturesExtractor):
    """Conv trunk over the ``(N, N, C)`` planes; returns the flattened ``(channels, N, N)`` map."""

    def __init__(self, observation_space: spaces.Box, channels: int = 32, blocks: int = 3):
        n, n2, planes = observation_space.shape
        if n != n2:
            raise ValueError(f"expected square (N, N, C) observations, got {observation_space.shape}")
        super().__init__(observation_space, features_dim=channels * n * n)
        self.n, self.channels = n, channels
        self.stem = nn.Conv2d(planes, channels, 3, padding=1)
        self.blocks = nn.Sequential(*[ResidualBlock(channels) for _ in range(blocks)])

    def forward(self, obs: th.Tensor) -> th.Tensor:
        x = obs.permute(0, 3, 1, 2)              # (B, N, N, C) channels last -> NCHW
        x = self.blocks(th.relu(self.stem(x)))
        return x.flatten(1)


class TaflBoardPolicy(MaskableActorCriticPolicy):
    """``MaskableActorCriticPolicy`` with :class:`BoardTrunk` and :class:`~agents.nn.BoardHeads` (module docstring).

    Extra keyword: ``value_hidden`` (units of the value MLP). The trunk's size comes from
    ``features_extractor_kwargs`` (``channels``, ``blocks``).
    """

    def __init__(self, observation_space, action_space, lr_schedule, value_hidden: int = 64, **kwargs):
        kwargs.setdefault("features_extractor_class", BoardTrunk)
        kwargs.setdefault("share_features_extractor", True)
        self.value_hidden = value_hidden
        n = observation_space.shape[0]
        if action_space.n != n * n * 4 * (n - 1) + 1:
            raise ValueError(f"action space {action_space.n} does not match an {n}x{n} board's layout")
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)

    def _build_mlp_extractor(self) -> None:
        fe = self.features_extractor
        self.mlp_extractor = BoardHeads(fe.n, fe.channels, self.value_hidden)

    def _build(self, lr_schedule) -> None:
        # MaskableActorCriticPolicy._build without its action_net: the heads already give the logits
        # in the action layout. Building SB3's dense (A x A) layer only to replace it cost Alea
        # (A = 25,993) 2.7 GB of weights, 11 GB and minutes during its orthogonal init; the modules
        # that result are the same, so models saved before this load unchanged.
        self._build_mlp_extractor()
        self.action_net = nn.Identity()
        self.value_net = nn.Linear(self.mlp_extractor.latent_dim_vf, 1)
        if self.ortho_init:
            gains = {self.features_extractor: np.sqrt(2), self.mlp_extractor: np.sqrt(2), self.value_net: 1}
            if not self.share_features_extractor:
                del gains[self.features_extractor]
                gains[self.pi_features_extractor] = gains[self.vf_features_extractor] = np.sqrt(2)
            for module, gain in gains.items():
                module.apply(partial(self.init_weights, gain=gain))
            for layer in (self.mlp_extractor.policy_out, self.mlp_extractor.pass_out):
                layer.apply(partial(self.init_weights, gain=0.01))
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data["value_hidden"] = self.value_hidden
        return data

    def action_logits(self, obs: th.Tensor) -> th.Tensor:
        """Raw (unmasked) logits ``(B, A)`` of a batch of observations."""
        features = self.extract_features(obs, self.pi_features_extractor)
        return self.mlp_extractor.forward_actor(features)


def board_policy_kwargs(channels: int = 32, blocks: int = 3, value_hidden: int = 64) -> dict[str, Any]:
    """``policy_kwargs`` for ``MaskablePPO(TaflBoardPolicy, ...)``."""
    return {"features_extractor_class": BoardTrunk,
            "features_extractor_kwargs": {"channels": int(channels), "blocks": int(blocks)},
            "value_hidden": int(value_hidden)}


def count_parameters(module: nn.Module) -> int:
    return int(sum(p.numel() for p in module.parameters()))

