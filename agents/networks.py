"""A small board network for Stable-Baselines3 / sb3-contrib's ``MaskablePPO`` (imports torch).

The observation is ``(N, N, 14)`` float32 planes (:mod:`tafl_env.observation`, channels last, row 0 =
rank 1). The network is:

- :class:`BoardTrunk` (an SB3 ``BaseFeaturesExtractor``): the planes permuted to NCHW, a 3×3 conv
  stem and ``blocks`` residual blocks of two 3×3 convs (``channels`` wide, ReLU, no batch norm: PPO
  trains on small shuffled minibatches and evaluates single positions, where batch statistics only
  hurt). Its output is the whole feature map, flattened (``channels * N * N``), so the heads can
  still see it square by square.
- :class:`BoardHeads` (used as the policy's ``mlp_extractor``):

  * the **policy head** is a 1×1 conv to ``4 * (N - 1)`` channels per square. Read at square ``sq``
    (row-major, ``sq = rank_index * N + file``) and channel ``c = d * (N - 1) + (k - 1)``, and
    flattened square-major, that is exactly the action id ``(sq * 4 + d) * (N - 1) + (k - 1)`` of
    DESIGN.md; one extra logit (a linear map of the pooled features) is the **pass** action (the
    last id). So every move's logit is computed at its origin square by weights shared across the
    board: a move "two squares north" has the same parameters everywhere, which generalises
    across the board from far fewer games than a dense ``features → 1177`` (7×7) or
    ``→ 2593`` (9×9) linear layer, and it keeps the head small (``channels * 4 * (N - 1)``
    weights instead of ``channels * N² * A``).
  * the **value head** is a 1×1 conv to 2 channels, then a small MLP to ``value_hidden`` units;
    SB3's ``value_net`` maps that to one number.

- :class:`TaflBoardPolicy`: ``MaskableActorCriticPolicy`` wired to the two pieces above, with the
  policy's ``action_net`` replaced by the identity (the head already produces the logits in the
  action layout) and the last policy layer initialised small (gain 0.01, as SB3 does for its
  ``action_net``) so that the initial policy is close to uniform over the legal moves.

Use it with ``MaskablePPO(TaflBoardPolicy, env, policy_kwargs=board_policy_kwargs(...))`` (see
:func:`board_policy_kwargs`); a saved model names this class, so loading it needs ``agents.networks``
importable (it is part of the package). The default size (32 channels, 3 blocks, ≈ 60 k
parameters on 7×7) runs a PPO update of a few thousand samples in seconds on two CPU cores.

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

__all__ = ["BoardTrunk", "BoardHeads", "TaflBoardPolicy", "board_policy_kwargs", "count_parameters"]


class ResidualBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: th.Tensor) -> th.Tensor:
        return th.relu(x + self.conv2(th.relu(self.conv1(x))))


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


class BoardHeads(nn.Module):
    """Policy and value heads over the trunk's feature map (SB3's ``mlp_extractor`` interface).

    ``forward_actor`` returns the ``N*N*4*(N-1) + 1`` action logits in the action layout;
    ``forward_critic`` a ``value_hidden`` latent for SB3's ``value_net``.
    """

    def __init__(self, n: int, channels: int, value_hidden: int = 64):
        super().__init__()
        self.n, self.channels = n, channels
        self.moves_per_square = 4 * (n - 1)
        self.latent_dim_pi = n * n * self.moves_per_square + 1
        self.latent_dim_vf = value_hidden
        self.policy_conv = nn.Conv2d(channels, channels, 1)
        self.policy_out = nn.Conv2d(channels, self.moves_per_square, 1)
        self.pass_out = nn.Linear(channels, 1)
        self.value_conv = nn.Conv2d(channels, 2, 1)
        self.value_mlp = nn.Sequential(nn.Linear(2 * n * n, value_hidden), nn.ReLU())

    def _map(self, features: th.Tensor) -> th.Tensor:
        return features.view(-1, self.channels, self.n, self.n)

    def forward_actor(self, features: th.Tensor) -> th.Tensor:
        x = th.relu(self.policy_conv(self._map(features)))
        moves = self.policy_out(x)                             # (B, 4(N-1), N, N): [b, d*(N-1)+k-1, rank, file]
        moves = moves.permute(0, 2, 3, 1).flatten(1)           # (B, N*N*4(N-1)): (sq*4 + d)*(N-1) + k-1
        pass_logit = self.pass_out(x.mean(dim=(2, 3)))         # (B, 1): the last action id
        return th.cat([moves, pass_logit], dim=1)

    def forward_critic(self, features: th.Tensor) -> th.Tensor:
        v = th.relu(self.value_conv(self._map(features)))
        return self.value_mlp(v.flatten(1))

    def forward(self, features: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)


class TaflBoardPolicy(MaskableActorCriticPolicy):
    """``MaskableActorCriticPolicy`` with :class:`BoardTrunk` and :class:`BoardHeads` (module docstring).

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


def masked_sample(logits: th.Tensor, mask: np.ndarray, rng: np.random.Generator,
                  deterministic: bool = False) -> np.ndarray:
    """Actions from ``(B, A)`` logits restricted to ``mask`` (B, A) (argmax, or a Gumbel-max sample)."""
    z = logits.detach().cpu().numpy().astype(np.float64)
    z = np.where(mask.astype(bool), z, -np.inf)
    if not deterministic:
        z = z + rng.gumbel(size=z.shape)
    return z.argmax(axis=1).astype(np.int64)
