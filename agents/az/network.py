"""The AlphaZero network: a residual conv trunk with a policy head in the action layout and a
tanh value head (pure torch; no SB3).

Input: the ``(B, N, N, 14)`` float32 planes of :func:`tafl_env.observation.observe` (channels
last, row 0 = rank 1), seen by the side to move. Output: ``(logits (B, A), value (B,))``:

- the **trunk**: a 3×3 conv stem to ``channels`` and ``blocks`` residual blocks of two 3×3 convs
  (ReLU, no normalisation: a block's output is the same function of its input at any batch
  size, so self-play's forward passes of a few leaves and the learner's minibatches agree);
- the **policy head**: a 1×1 conv, then a 1×1 conv to ``4 * (N - 1)`` channels per square, read
  square-major, which is exactly the action id ``(sq * 4 + d) * (N - 1) + (k - 1)`` of DESIGN.md
  (as in :mod:`agents.networks`: a move's logit is computed at its origin square by weights
  shared across the board); one more logit from the pooled features is **pass**;
- the **value head**: a 1×1 conv to 2 channels, a hidden layer of ``value_hidden`` units and
  ``tanh``: the expected result for the side to move (+1 win, -1 loss).

    >>> import torch
    >>> net = AZNet(7, channels=8, blocks=1)
    >>> logits, value = net(torch.zeros(2, 7, 7, 14))
    >>> tuple(logits.shape), tuple(value.shape)
    ((2, 1177), (2,))
    >>> net.shape()
    {'board_size': 7, 'planes': 14, 'channels': 8, 'blocks': 1, 'value_hidden': 64}
"""

from __future__ import annotations

import torch as th
from torch import nn

from ..networks import ResidualBlock

__all__ = ["AZNet", "Evaluator", "shape_problem"]


def shape_problem(shape: dict) -> str | None:
    """What is wrong with a network shape (:meth:`AZNet.shape`: the constructor's arguments), or
    None: each size an int within :data:`agents.schema.NETWORK_BOUNDS` (a float is refused, not
    truncated), checked before anything is built.

    >>> shape_problem({"board_size": 7, "planes": 14, "channels": 32.9, "blocks": 2, "value_hidden": 64})
    'channels must be an int from 1 to 1024, got 32.9'
    """
    from ..schema import NETWORK_BOUNDS, int_problem

    for key, (low, high) in NETWORK_BOUNDS.items():
        if key in shape:
            problem = int_problem(shape[key], low, high)
            if problem:
                return f"{key} {problem}"
    return None


class AZNet(nn.Module):
    """Policy-value network of one board size (module docstring)."""

    def __init__(self, board_size: int, planes: int = 14, channels: int = 32, blocks: int = 3,
                 value_hidden: int = 64):
        super().__init__()
        shape = {"board_size": board_size, "planes": planes, "channels": channels, "blocks": blocks,
                 "value_hidden": value_hidden}
        problem = shape_problem(shape)
        if problem:
            raise ValueError(problem)
        n = board_size
        self.n, self.planes, self.channels, self.blocks_count = n, planes, channels, blocks
        self.value_hidden = value_hidden
        self.moves_per_square = 4 * (n - 1)
        self.num_actions = n * n * self.moves_per_square + 1
        self.stem = nn.Conv2d(planes, channels, 3, padding=1)
        self.blocks = nn.Sequential(*[ResidualBlock(channels) for _ in range(blocks)])
        self.policy_conv = nn.Conv2d(channels, channels, 1)
        self.policy_out = nn.Conv2d(channels, self.moves_per_square, 1)
        self.pass_out = nn.Linear(channels, 1)
        self.value_conv = nn.Conv2d(channels, 2, 1)
        self.value_hidden_layer = nn.Linear(2 * n * n, value_hidden)
        self.value_out = nn.Linear(value_hidden, 1)
        # a near-uniform first policy and a value near 0: self-play starts from the search alone
        for layer in (self.policy_out, self.pass_out, self.value_out):
            nn.init.normal_(layer.weight, std=0.01)
            nn.init.zeros_(layer.bias)

    def shape(self) -> dict:
        """The constructor's arguments (the checkpoint's JSON record of the network)."""
        return {"board_size": self.n, "planes": self.planes, "channels": self.channels,
                "blocks": self.blocks_count, "value_hidden": self.value_hidden}

    def forward(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        x = obs.permute(0, 3, 1, 2)                      # (B, N, N, C) -> NCHW
        x = self.blocks(th.relu(self.stem(x)))
        p = th.relu(self.policy_conv(x))
        moves = self.policy_out(p).permute(0, 2, 3, 1).flatten(1)   # (sq*4 + d)*(N-1) + k-1
        pass_logit = self.pass_out(p.mean(dim=(2, 3)))
        v = th.relu(self.value_conv(x)).flatten(1)
        value = th.tanh(self.value_out(th.relu(self.value_hidden_layer(v)))).squeeze(1)
        return th.cat([moves, pass_logit], dim=1), value


class Evaluator:
    """The network as the search's policy-value function: ``evaluator(engine, state)`` returns
    ``(logits (R, A) float32, values (R,))`` for the positions of ``state``, seen by their side to
    move (:func:`tafl_env.observation.observe`), in one forward pass on ``device``."""

    def __init__(self, net: AZNet, device: str = "cpu"):
        self.net = net
        self.device = th.device(device)
        self.calls = 0

    def __call__(self, engine, state) -> tuple:
        from tafl_env.observation import observe

        obs = observe(engine, state, state.to_move.astype("intp"))
        was_training = self.net.training
        self.net.eval()
        try:
            with th.inference_mode():
                logits, values = self.net(th.from_numpy(obs).to(self.device))
        finally:
            self.net.train(was_training)
        self.calls += 1
        return logits.float().cpu().numpy(), values.double().cpu().numpy()
