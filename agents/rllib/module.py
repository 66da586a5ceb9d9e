"""The RLlib module of the Tafl policy: the project's board network with action masking.

# TaflMaskedRLModule

| Import            | `from agents.rllib.module import TaflMaskedRLModule` (needs the `rllib` extra) |
|-------------------|-----------------------------------------------------------------------------|
| RLlib API         | new API stack: `TorchRLModule` + `ValueFunctionAPI` (PPO)                    |
| Observation space | `Dict(observation=Box(0, 1, (N, N, 14)), action_mask=Box(0, 1, (A,), int8))`, as the PettingZoo env gives it |
| Action space      | `Discrete(A)`, `A = N*N*4*(N-1) + 1` (the engine's action layout, pass last) |

**What it does.** The network is the one ``tafl train`` trains with Stable-Baselines3
(:mod:`agents.ppo.network`): :class:`~agents.ppo.network.BoardTrunk`, a 3×3 conv stem and residual
blocks over the ``(N, N, 14)`` planes, and :class:`~agents.nn.BoardHeads`, a convolutional
policy head whose channels at each square are that square's moves (so the logits come out in the
action layout) and a small value head; a linear layer maps the value latent to one number. The
module reads ``obs["action_mask"]`` and adds ``log(mask)`` (clamped to RLlib's ``FLOAT_MIN``) to
the logits in every forward pass, inference, exploration and training alike, so no sampler and
no loss ever gives an illegal action any probability; the value function sees the observation
planes only.

**Options** (``model_config`` of its ``RLModuleSpec``):

- ``channels`` (default 32): conv channels of the trunk;
- ``blocks`` (default 3): residual blocks (two 3×3 convs each);
- ``value_hidden`` (default 64): units of the value head's hidden layer.

:meth:`TaflMaskedRLModule.masked_logits` gives the masked logits of a batch of plain arrays
(used by the project's agents, :mod:`agents.rllib.agent`).

**Version history**

* v0: initial release (ray 2.60 new API stack; written on the current ``TorchRLModule`` and
  ``ValueFunctionAPI`` classes, not on RLlib's deprecated ``PPOTorchRLModule`` that its
  action-masking example derives from).

    >>> import numpy as np, torch
    >>> import tafl_env
    >>> from agents.rllib.env import TaflMultiAgentEnv
    >>> env = TaflMultiAgentEnv({"variant": "legacy_ard_ri"})
    >>> module = TaflMaskedRLModule(observation_space=env.observation_spaces["attacker"],
    ...                             action_space=env.action_spaces["attacker"],
    ...                             model_config={"channels": 8, "blocks": 1})
    >>> obs, _ = env.reset(seed=0)
    >>> (agent, o), = obs.items()
    >>> logits = module.masked_logits(o["observation"][None], o["action_mask"][None])
    >>> bool((logits[0, o["action_mask"] == 0] < -1e30).all())   # illegal moves: no probability
    True
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import gymnasium as gym
import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from ray.rllib.utils.torch_utils import FLOAT_MIN
from torch import nn

from ..nn import BoardHeads
from ..ppo.network import BoardTrunk

__all__ = ["TaflMaskedRLModule", "DEFAULT_MODEL_CONFIG"]

DEFAULT_MODEL_CONFIG = {"channels": 32, "blocks": 3, "value_hidden": 64}
"""The module's options and their defaults."""


class TaflMaskedRLModule(TorchRLModule, ValueFunctionAPI):
    """The board network with action masking for RLlib's PPO (module docstring)."""

    def setup(self) -> None:
        space = self.observation_space
        if not (isinstance(space, gym.spaces.Dict) and {"observation", "action_mask"} <= set(space.spaces)):
            raise ValueError("TaflMaskedRLModule needs Dict observations with 'observation' (N, N, 14) planes "
                             f"and 'action_mask' (as the Tafl PettingZoo env gives them), got {space}")
        # RLlib merges its own defaults (fcnet_hiddens, vf_share_layers ...) into model_config:
        # only this module's keys are read
        given = dict(self.model_config or {})
        cfg = {k: given.get(k, v) for k, v in DEFAULT_MODEL_CONFIG.items()}
        planes = space["observation"]
        n = planes.shape[0]
        if self.action_space.n != n * n * 4 * (n - 1) + 1:
            raise ValueError(f"action space {self.action_space} does not match an {n}x{n} board's layout")
        self.trunk = BoardTrunk(planes, channels=int(cfg["channels"]), blocks=int(cfg["blocks"]))
        self.heads = BoardHeads(n, int(cfg["channels"]), int(cfg["value_hidden"]))
        self.value_out = nn.Linear(int(cfg["value_hidden"]), 1)
        # as SB3 does for its action and value layers: a near-uniform first policy, a small first value
        for layer, gain in ((self.heads.policy_out, 0.01), (self.heads.pass_out, 0.01), (self.value_out, 1.0)):
            nn.init.orthogonal_(layer.weight, gain=gain)
            nn.init.zeros_(layer.bias)

    # --- RLlib's forward passes ------------------------------------------------------------------

    def _logits(self, obs: Dict[str, torch.Tensor]) -> torch.Tensor:
        logits = self.heads.forward_actor(self.trunk(obs["observation"].float()))
        return logits + torch.clamp(torch.log(obs["action_mask"].float()), min=FLOAT_MIN)

    def _forward(self, batch: Dict[str, Any], **kwargs) -> Dict[str, Any]:
        return {Columns.ACTION_DIST_INPUTS: self._logits(batch[Columns.OBS])}

    def _forward_train(self, batch: Dict[str, Any], **kwargs) -> Dict[str, Any]:
        obs = batch[Columns.OBS]
        features = self.trunk(obs["observation"].float())
        logits = self.heads.forward_actor(features)
        logits = logits + torch.clamp(torch.log(obs["action_mask"].float()), min=FLOAT_MIN)
        return {Columns.ACTION_DIST_INPUTS: logits, Columns.EMBEDDINGS: features}

    def compute_values(self, batch: Dict[str, Any], embeddings: Optional[Any] = None) -> torch.Tensor:
        if embeddings is None:
            embeddings = self.trunk(batch[Columns.OBS]["observation"].float())
        return self.value_out(self.heads.forward_critic(embeddings)).squeeze(-1)

    # --- for the project's agents ------------------------------------------------------------------

    @torch.no_grad()
    def masked_logits(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """``(B, A)`` masked logits of ``(B, N, N, 14)`` planes and ``(B, A)`` masks (numpy in and out)."""
        return self._logits({"observation": torch.as_tensor(obs), "action_mask": torch.as_tensor(mask)}).numpy()
