"""The AlphaZero network: a residual conv trunk with a policy head in the action layout and a
tanh value head (pure torch; no SB3).

Input: the ``(B, N, N, 14)`` float32 planes of :func:`tafl_env.observation.observe` (channels
last, row 0 = rank 1), seen by the side to move. Output: ``(logits (B, A), value (B,))``:

- the **trunk**: a 3×3 conv stem to ``channels`` and ``blocks`` residual blocks of two 3×3 convs
  (ReLU, no normalisation: a block's output is the same function of its input at any batch
  size, so self-play's forward passes of a few leaves and the learner's minibatches agree);
- the **policy head**: a 1×1 conv, then a 1×1 conv to ``4 * (N - 1)`` channels per square, read
  square-major, which is exactly the action id ``(sq * 4 + d) * (N - 1) + (k - 1)`` of DESIGN.md
  (as in :mod:`agents.nn`: a move's logit is computed at its origin square by weights
  shared across the board); one more logit from the pooled features is **pass**;
- the **value head**: a 1×1 conv to 2 channels, a hidden layer of ``value_hidden`` units and
  ``tanh``: the expected result for the side to move (+1 win, -1 loss).

With ``head="sizeless"`` no weight depends on the board's size, so one network plays 7×7 to 19×19
(a network trained on Tawlbwrdd's 11×11 starts Alea Evangelii's 19×19 with the same rules,
RULES §4): a move's logit is a 1×1 conv's map at its origin for its direction and distance (18
distances kept, the first N−1 read) **plus** a 1×1 conv's map at its target square for its
direction (so the head also sees where a move lands: a corner, a capture); the value head pools
a 1×1 conv's 16 maps over the board (mean and max) before its hidden layer.

    >>> import torch
    >>> net = AZNet(7, channels=8, blocks=1, head="sizeless")
    >>> [tuple(t.shape) for t in net(torch.zeros(1, 7, 7, 14))], [tuple(t.shape) for t in net(torch.zeros(1, 19, 19, 14))]
    ([(1, 1177), (1,)], [(1, 25993), (1,)])

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

from ..nn import ResidualBlock
from .config import HEADS

__all__ = ["AZNet", "Evaluator", "shape_problem", "HEADS", "MAX_DISTANCE", "TRUNK"]


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


VALUE_MAPS = 16
"""Maps a sizeless value head pools (each by its mean and its maximum over the board)."""

MAX_DISTANCE = 18
"""The longest move on the largest board (19x19): a sizeless head has a logit map for each
distance up to it and reads the first N-1 on an NxN board."""


TRUNK = ("stem", "blocks", "policy_conv", "pass_out")
"""The modules whose weights mean the same under either head and on every board: a network of
one head can hand them to one of the other (:mod:`.refit`)."""


class AZNet(nn.Module):
    """Policy-value network (module docstring): of one board size (``head="board"``), or whose
    weights play every board size (``head="sizeless"``)."""

    def __init__(self, board_size: int, planes: int = 14, channels: int = 32, blocks: int = 3,
                 value_hidden: int = 64, head: str = "board"):
        super().__init__()
        shape = {"board_size": board_size, "planes": planes, "channels": channels, "blocks": blocks,
                 "value_hidden": value_hidden}
        problem = shape_problem(shape)
        if problem:
            raise ValueError(problem)
        if head not in HEADS:
            raise ValueError(f"head must be one of {HEADS}, got {head!r}")
        n = board_size
        self.n, self.planes, self.channels, self.blocks_count = n, planes, channels, blocks
        self.value_hidden, self.head = value_hidden, head
        self.moves_per_square = 4 * (n - 1)
        self.num_actions = n * n * self.moves_per_square + 1
        self.stem = nn.Conv2d(planes, channels, 3, padding=1)
        self.blocks = nn.Sequential(*[ResidualBlock(channels) for _ in range(blocks)])
        self.policy_conv = nn.Conv2d(channels, channels, 1)
        self.pass_out = nn.Linear(channels, 1)
        if head == "board":
            self.policy_out = nn.Conv2d(channels, self.moves_per_square, 1)
            self.value_conv = nn.Conv2d(channels, 2, 1)
            self.value_hidden_layer = nn.Linear(2 * n * n, value_hidden)
        else:
            self.policy_out = nn.Conv2d(channels, 4 * MAX_DISTANCE, 1)     # at the origin: direction, distance
            self.policy_dest = nn.Conv2d(channels, 4, 1)                   # at the target: direction
            self.value_conv = nn.Conv2d(channels, VALUE_MAPS, 1)
            self.value_hidden_layer = nn.Linear(2 * VALUE_MAPS, value_hidden)  # mean and max over the board
            nn.init.normal_(self.policy_dest.weight, std=0.01)
            nn.init.zeros_(self.policy_dest.bias)
        self.value_out = nn.Linear(value_hidden, 1)
        self._targets: dict[tuple, th.Tensor] = {}
        # a near-uniform first policy and a value near 0: self-play starts from the search alone
        for layer in (self.policy_out, self.pass_out, self.value_out):
            nn.init.normal_(layer.weight, std=0.01)
            nn.init.zeros_(layer.bias)

    def shape(self) -> dict:
        """The constructor's arguments (the checkpoint's JSON record of the network; ``head`` only
        when it is not the board head, so that every earlier record reads the same)."""
        out = {"board_size": self.n, "planes": self.planes, "channels": self.channels,
               "blocks": self.blocks_count, "value_hidden": self.value_hidden}
        return out if self.head == "board" else {**out, "head": self.head}

    def _target_index(self, n: int, device) -> th.Tensor:
        """For each move ``(sq * 4 + d) * (n - 1) + k - 1`` of an n x n board, the index of its
        target square's logit in the flattened ``(4, n * n)`` target map, or ``4 * n * n`` (a zero
        pad) where the move leaves the board: the engine's own table of targets
        (:class:`tafl_env.engine.tables`' ``dest``, directions north, east, south, west)."""
        key = (n, str(device))
        if key not in self._targets:
            import numpy as np

            from tafl_env.engine.tables import D_FILE, D_RANK

            sq = np.arange(n * n)
            ks = np.arange(1, n)
            rank = sq[:, None, None] // n + D_RANK[None, :, None] * ks[None, None, :]
            file = sq[:, None, None] % n + D_FILE[None, :, None] * ks[None, None, :]
            on = (rank >= 0) & (rank < n) & (file >= 0) & (file < n)
            index = np.where(on, np.arange(4)[None, :, None] * n * n + rank * n + file, 4 * n * n)
            # a plain tensor even when first asked for under inference mode (self-play's
            # evaluator): autograd refuses an inference tensor in the learner's later steps
            with th.inference_mode(False):
                self._targets[key] = th.as_tensor(index.reshape(-1), dtype=th.long, device=device)
        return self._targets[key]

    def forward(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        x = obs.permute(0, 3, 1, 2)                      # (B, N, N, C) -> NCHW
        x = self.blocks(th.relu(self.stem(x)))
        p = th.relu(self.policy_conv(x))
        pass_logit = self.pass_out(p.mean(dim=(2, 3)))
        if self.head == "board":
            moves = self.policy_out(p).permute(0, 2, 3, 1).flatten(1)   # (sq*4 + d)*(N-1) + k-1
            v = th.relu(self.value_conv(x)).flatten(1)
        else:
            b, n = obs.shape[0], obs.shape[1]
            if not 3 <= n <= MAX_DISTANCE + 1:
                raise ValueError(f"a sizeless head plays boards of 3x3 to {MAX_DISTANCE + 1}x{MAX_DISTANCE + 1}, got {n}x{n}")
            origin = self.policy_out(p).view(b, 4, MAX_DISTANCE, n, n)[:, :, :n - 1]
            moves = origin.permute(0, 3, 4, 1, 2).reshape(b, -1)            # square, direction, distance
            target = th.cat([self.policy_dest(p).reshape(b, 4 * n * n), p.new_zeros(b, 1)], dim=1)
            moves = moves + target[:, self._target_index(n, p.device)]
            h = th.relu(self.value_conv(x))
            v = th.cat([h.mean(dim=(2, 3)), h.amax(dim=(2, 3))], dim=1)
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
