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

from .errors import AgentsError

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

    def check_rules(self, rules) -> str | None:
        """Called before any game under ``rules``: raise :class:`AgentSpecError` (one line) if this
        agent cannot play them; may return a note for the user. Search agents play any rules."""
        return None

    def __call__(self, engine: Engine, state: State) -> np.ndarray:
        return self.act(engine, state)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class AgentSpecError(AgentsError):
    """An agent cannot be built from its spec: not a string, an unknown kind, an argument the kind
    does not take or cannot read, a missing file."""


_NO_ARGUMENT: set[str] = {"random", "greedy"}
"""Kinds that take no ``:ARG`` (``random:5`` is an error, not a silently ignored 5)."""


def register_agent(kind: str, factory: Callable[..., Agent], *, takes_argument: bool | None = None) -> None:
    """Make ``make_agent("kind[:arg]")`` build agents with ``factory(arg, seed=...)``.

    With ``takes_argument=False`` a spec ``kind:ARG`` is rejected before the factory is called.
    """
    _REGISTRY[kind] = factory
    if takes_argument is False:
        _NO_ARGUMENT.add(kind)
    elif takes_argument is True:
        _NO_ARGUMENT.discard(kind)


def known_kinds() -> list[str]:
    """Every agent kind ``make_agent`` can build (loading the built-in agent modules)."""
    _load_builtin_agents()
    return sorted(_REGISTRY)


def split_spec(spec: object) -> tuple[str, str | None]:
    """``"mcts:64"`` → ``("mcts", "64")``; checks the spec's type, kind and argument presence.

    >>> split_spec("mcts:64"), split_spec("random")
    (('mcts', '64'), ('random', None))
    >>> split_spec("random:5")
    Traceback (most recent call last):
    ...
    agents.base.AgentSpecError: agent 'random' takes no argument, got 'random:5'
    """
    if not isinstance(spec, str) or not spec.strip():
        raise AgentSpecError(f"an agent spec must be a non-empty string such as 'random', 'greedy', "
                             f"'mcts:64' or 'policy:PATH', got {spec!r}")
    kind, sep, arg = spec.partition(":")
    if kind not in _REGISTRY:
        _load_builtin_agents()
    if kind not in _REGISTRY:
        raise AgentSpecError(f"unknown agent {spec!r}; known kinds: {', '.join(sorted(_REGISTRY))}")
    if kind in _NO_ARGUMENT and sep:
        raise AgentSpecError(f"agent {kind!r} takes no argument, got {spec!r}")
    if sep and not arg.strip():
        raise AgentSpecError(f"agent spec {spec!r} has nothing after its colon: write {kind!r} alone for "
                             f"the default, or {kind}:ARG")
    return kind, (arg if sep else None)


UNPICKLING_KINDS: frozenset[str] = frozenset({"unpickle-policy", "rllib"})
"""Kinds whose loading unpickles the file they name, and so runs any code a crafted file holds
(SB3's own ``MaskablePPO.load``; RLlib checkpoints). A user opts in to them on the command line or
in a call's own argument; a data file (an anchor file, the leaderboard, a config, a match record)
never may: :func:`check_data_spec`."""


def check_data_spec(spec: object, where: str) -> str:
    """``spec`` read from a data file (``where`` names it), refused with one line if it is not a
    spec or if it, or a spec nested in it (``mcts:N:policy:PATH``), names a kind of
    :data:`UNPICKLING_KINDS`; nothing is built or loaded.

    >>> check_data_spec("mcts:100:policy:legacy_ard_ri", "anchors.json")
    'mcts:100:policy:legacy_ard_ri'
    >>> check_data_spec("mcts:100:unpickle-policy:evil.zip", "anchors.json")
    Traceback (most recent call last):
    ...
    agents.base.AgentSpecError: anchors.json: agent spec 'mcts:100:unpickle-policy:evil.zip' names 'unpickle-policy', which unpickles its file (runs any code in it); a data file may not ask for that, only a command line or a call's own argument
    """
    if not isinstance(spec, str) or not spec.strip():
        raise AgentSpecError(f"{where}: an agent spec must be a non-empty string, got {_short(spec)}")
    # every colon-separated field is checked, not only the kind: a nested spec is one of them
    for part in spec.split(":"):
        if part.strip() in UNPICKLING_KINDS:
            raise AgentSpecError(f"{where}: agent spec {_short(spec)} names {part.strip()!r}, which unpickles its "
                                 f"file (runs any code in it); a data file may not ask for that, only a command "
                                 f"line or a call's own argument")
    return spec


def _short(value: object, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters (a data file's field may be huge)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def make_agent(spec: str, seed: int | None = None, **kwargs) -> Agent:
    """An agent from a short spec: ``"random"``, ``"greedy"``, ``"mcts:64"``, ``"policy:path.zip"``.

    The part after the first ``:`` is passed to the agent's factory as its argument. A bad spec is
    an :class:`AgentSpecError` (a ``ValueError``) that names it.
    """
    kind, arg = split_spec(spec)
    return _REGISTRY[kind](arg, seed=seed, **kwargs)


def _load_builtin_agents() -> None:
    """Import the agent modules that register themselves (kept lazy: torch only when needed)."""
    import importlib

    for module in ("agents.random_agent", "agents.greedy", "agents.mcts", "agents.policy",
                   "agents.rllib.agent", "agents.az.agent"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:  # a module not written yet, or an optional dependency
            if exc.name not in (module, "torch", "stable_baselines3", "sb3_contrib", "ray"):
                raise
