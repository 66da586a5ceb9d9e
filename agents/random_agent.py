"""The uniformly random agent: every legal action equally likely."""

from __future__ import annotations

import numpy as np

from tafl_env.engine import Engine, State

from .base import Agent, register_agent


class RandomAgent(Agent):
    """Uniform over the legal actions of each game (the engine samples from its packed mask)."""

    name = "random"

    def act(self, engine: Engine, state: State) -> np.ndarray:
        return engine.random_actions(state, self.rng).astype(np.int64)


register_agent("random", lambda arg, seed=None, **kw: RandomAgent(seed=seed))
