"""Torch building blocks of the board networks, shared by the stacks that train them: the PPO
policy (:mod:`agents.ppo.network`), the RLlib module (:mod:`agents.rllib.module`) and the AZ
network (:mod:`agents.az.network`). Pure torch (no SB3, no Ray).

- :class:`ResidualBlock`: two 3×3 convs and a skip, ReLU, no normalisation (PPO trains on small
  shuffled minibatches and evaluates single positions, where batch statistics only hurt; the AZ
  learner's minibatches and self-play's few leaves agree the same way);
- :class:`BoardHeads`: the policy head in the action layout and a small value head over a trunk's
  feature map (SB3's ``mlp_extractor`` interface; the RLlib module calls the same methods):

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
    SB3's ``value_net`` (or the RLlib module's ``value_out``) maps that to one number.

- :func:`masked_sample`: actions from logits restricted to the legal moves (the agents of a
  network held in memory).

    >>> import torch
    >>> heads = BoardHeads(7, channels=4)
    >>> tuple(heads.forward_actor(torch.zeros(2, 4 * 7 * 7)).shape)     # one logit per action id, pass last
    (2, 1177)
"""

from __future__ import annotations

import numpy as np
import torch as th
from torch import nn

__all__ = ["ResidualBlock", "BoardHeads", "masked_sample"]


class ResidualBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: th.Tensor) -> th.Tensor:
        return th.relu(x + self.conv2(th.relu(self.conv1(x))))


class BoardHeads(nn.Module):
    """Policy and value heads over a trunk's feature map (SB3's ``mlp_extractor`` interface).

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


def masked_sample(logits: th.Tensor, mask: np.ndarray, rng: np.random.Generator,
                  deterministic: bool = False) -> np.ndarray:
    """Actions from ``(B, A)`` logits restricted to ``mask`` (B, A) (argmax, or a Gumbel-max sample)."""
    z = logits.detach().cpu().numpy().astype(np.float64)
    z = np.where(mask.astype(bool), z, -np.inf)
    if not deterministic:
        z = z + rng.gumbel(size=z.shape)
    return z.argmax(axis=1).astype(np.int64)
