"""A network policy as an engine agent: :class:`NetAgent`.

:class:`agents.policy.PolicyAgent` loads a saved ``MaskablePPO`` zip and asks ``model.predict``;
:class:`NetAgent` wraps a policy object already in memory (a :class:`agents.networks.TaflBoardPolicy`,
e.g. ``model.policy`` of the model being trained) and reads its logits directly, so training can
evaluate the current network without saving it. Both pick the same moves for the same weights.
"""

from __future__ import annotations

import numpy as np

from tafl_env.engine import State

from .base import Agent

__all__ = ["NetAgent"]


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

