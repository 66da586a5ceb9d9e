"""The agent interface: act on a batch of engine states, many games at once.

An agent is given the engine and a batched :class:`~tafl_env.engine.State` and returns one action per
game for the side to move there (−1 for finished games). Working on states rather than observations
lets search agents (greedy, MCTS) use the engine directly; a learned policy builds its observations
with :func:`tafl_env.observation.observe` and masks with ``engine.legal_action_mask``, exactly as the
environments do. Agents must never return an illegal action for a running game.

    >>> import numpy as np
    >>> from tafl_env import make_rules
    >>> from tafl_env.engine import Engine
    >>> from agents import make_agent
    >>> eng = Engine(make_rules("legacy_ard_ri"))
    >>> agent = make_agent("random", seed=0)
    >>> state = eng.initial_state(4)
    >>> bool(eng.check_legal(state, agent.act(eng, state)).all())
    True
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from tafl_env.engine import Engine, State

_REGISTRY: dict[str, Callable[..., "Agent"]] = {}


class Agent:
    """Base class. Subclasses set ``name`` and implement :meth:`choose` (running games only;
    :meth:`act` hands it the running games of a batch and answers −1 for the finished ones)."""

    name: str = "agent"

    def __init__(self, seed: int | None = None):
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Start afresh (new games); reseeds the agent's random generator when ``seed`` is given."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, engine: Engine, state: State) -> np.ndarray:
        """(B,) int64 actions for the side to move in each game; −1 where the game is over."""
        b = len(state)
        out = np.full(b, -1, dtype=np.int64)
        live = np.flatnonzero(~state.done)
        if len(live):
            out[live] = self.choose(engine, state if len(live) == b else state.take(live))
        return out

    def choose(self, engine: Engine, state: State) -> np.ndarray:
        """(R,) actions for a batch of running games (subclasses implement this, or ``act``)."""
        raise NotImplementedError

    def __call__(self, engine: Engine, state: State) -> np.ndarray:
        return self.act(engine, state)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def register_agent(kind: str, factory: Callable[..., Agent]) -> None:
    """Make ``make_agent("kind[:arg]")`` build agents with ``factory(arg, seed=...)``."""
    _REGISTRY[kind] = factory


def make_agent(spec: str, seed: int | None = None, **kwargs) -> Agent:
    """An agent from a short spec: ``"random"``, ``"greedy"``, ``"mcts:64"``, ``"policy:path.zip"``.

    The part after the first ``:`` is passed to the agent's factory as its argument.
    """
    kind, _, arg = spec.partition(":")
    if kind not in _REGISTRY:
        _load_builtin_agents()
    try:
        factory = _REGISTRY[kind]
    except KeyError:
        raise ValueError(f"unknown agent {spec!r}; known kinds: {', '.join(sorted(_REGISTRY))}") from None
    return factory(arg or None, seed=seed, **kwargs)


def _load_builtin_agents() -> None:
    """Import the agent modules that register themselves (kept lazy: torch only when needed)."""
    import importlib

    for module in ("agents.random_agent", "agents.greedy", "agents.mcts", "agents.policy"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:  # a module not written yet, or an optional dependency
            if exc.name not in (module, "torch", "stable_baselines3", "sb3_contrib"):
                raise
