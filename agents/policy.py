"""A trained policy: an sb3-contrib ``MaskablePPO`` checkpoint acting on the engine's observations.

Observations are ``observe(engine, state, state.to_move)`` — (B, N, N, 14) float32 planes seen by the
side to move (see :mod:`tafl_env.observation`) — and masks are ``engine.legal_action_mask(state)``,
exactly what the training environments produce; the model is asked with
``model.predict(obs, action_masks=mask, deterministic=...)`` for the running games only (finished
games get −1). torch and SB3 are imported lazily, when the agent is built.
"""

from __future__ import annotations

import numpy as np

from tafl_env.engine import Engine, State
from tafl_env.observation import observe

from .base import Agent, register_agent


class PolicyAgent(Agent):
    """Acts with a saved ``MaskablePPO`` model (``path`` as given to ``MaskablePPO.load``)."""

    name = "policy"

    def __init__(self, path, deterministic: bool = True, device: str = "cpu", seed: int | None = None):
        super().__init__(seed)
        from sb3_contrib import MaskablePPO  # lazy: torch only when a policy is used

        self.path = str(path)
        self.deterministic = bool(deterministic)
        self.model = MaskablePPO.load(self.path, device=device)
        if seed is not None:
            self.model.set_random_seed(seed)
        self.name = f"policy:{self.path}"

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        if seed is not None:
            self.model.set_random_seed(seed)

    def choose(self, engine: Engine, state: State) -> np.ndarray:
        sub = state
        space = self.model.observation_space
        if tuple(space.shape) != (engine.n, engine.n, 14):
            raise ValueError(f"the model expects observations of shape {space.shape}, "
                             f"this variant gives {(engine.n, engine.n, 14)}")
        obs = observe(engine, sub, sub.to_move)
        mask = engine.legal_action_mask(sub).astype(bool)
        actions, _ = self.model.predict(obs, action_masks=mask, deterministic=self.deterministic)
        actions = np.asarray(actions, dtype=np.int64).reshape(len(sub))
        # guard: a masked distribution never samples an illegal action, but never trust it blindly
        bad = ~mask[np.arange(len(sub)), actions]
        if bad.any():
            actions[bad] = engine.random_actions(sub.take(np.flatnonzero(bad)), self.rng)
        return actions


def _factory(arg, seed=None, **kw):
    if not arg:
        raise ValueError("policy agent needs a checkpoint path: 'policy:PATH'")
    return PolicyAgent(arg, seed=seed, **kw)


register_agent("policy", _factory)
