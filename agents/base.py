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
from tafl_env.errors import preview

from .spec import BUILTIN_KINDS, AgentSpec, AgentSpecError, declare_kind

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


_READS_SPEC: set[Callable[..., Agent]] = set()
"""Factories that take the parsed :class:`~agents.spec.AgentSpec` rather than its raw argument."""


def register_agent(kind: str, factory: Callable[..., Agent], *, takes_argument: bool | None = None,
                   reads_spec: bool = False) -> None:
    """Make ``make_agent("kind[:arg]")`` build agents with ``factory(arg, seed=...)``: ``arg`` is the
    raw text after the colon (None without one), or with ``reads_spec`` the parsed
    :class:`~agents.spec.AgentSpec`.

    With ``takes_argument=False`` a spec ``kind:ARG`` is rejected before the factory is called. The
    built-in kinds keep their own grammar (:mod:`agents.spec`).
    """
    declare_kind(kind, takes_argument)
    _REGISTRY[kind] = factory
    if reads_spec:
        _READS_SPEC.add(factory)
    else:
        _READS_SPEC.discard(factory)


def known_kinds() -> list[str]:
    """Every agent kind ``make_agent`` can build (loading the built-in agent modules)."""
    _load_builtin_agents()
    return sorted(_REGISTRY)


UNPICKLING_KINDS: frozenset[str] = frozenset({"unpickle-policy", "rllib"})
"""Kinds whose loading unpickles the file they name, and so runs any code a crafted file holds
(SB3's own ``MaskablePPO.load``; RLlib checkpoints). A user opts in to them on the command line or
in a call's own argument; a data file (an anchor file, the leaderboard, a config, a match record)
never may: :func:`check_data_spec`."""

PROGRAM_KINDS: frozenset[str] = frozenset({"otep"})
"""Kinds that run the program they name (``otep:COMMAND``, an engine over the OpenTafl protocol):
like :data:`UNPICKLING_KINDS`, only a command line or a call's own argument may name them."""


def parse_data_spec(spec: object, where: str) -> AgentSpec:
    """``spec`` read from a data file (``where`` names it), refused with one line if it is not a
    valid spec or if it, or a spec nested in it (``mcts:N:unpickle-policy:PATH``), names a kind of
    :data:`UNPICKLING_KINDS`; nothing is built or loaded.

    A kind registered by another module has a grammar this cannot read: every colon-separated
    part of its argument is checked instead (it may hand that text on to ``make_agent``).

    >>> parse_data_spec("mcts:100:policy:legacy_ard_ri", "anchors.json").inner
    AgentSpec('policy:legacy_ard_ri')
    >>> parse_data_spec("mcts:100:unpickle-policy:evil.zip", "anchors.json")
    Traceback (most recent call last):
    ...
    agents.spec.AgentSpecError: anchors.json: agent spec 'mcts:100:unpickle-policy:evil.zip' names 'unpickle-policy', which unpickles its file (runs any code in it); a data file may not ask for that, only a command line or a call's own argument
    >>> parse_data_spec("mcts:lots", "anchors.json")
    Traceback (most recent call last):
    ...
    agents.spec.AgentSpecError: anchors.json: 'mcts:lots': mcts simulations must be an integer (or a time such as 1s), got 'lots'
    """
    prefix = f"{where}: " if where else ""
    try:
        parsed = spec if isinstance(spec, AgentSpec) else AgentSpec.parse(spec)
    except AgentSpecError as exc:
        raise AgentSpecError(f"{prefix}{exc}") from None
    for part in parsed.walk():
        names = [part.kind]
        if part.kind not in BUILTIN_KINDS and part.argument is not None:
            names += [field.strip() for field in part.argument.split(":")]
        unpickling = next((name for name in names if name in UNPICKLING_KINDS), None)
        if unpickling:
            raise AgentSpecError(f"{prefix}agent spec {preview(parsed.text)} names {unpickling!r}, which unpickles "
                                 f"its file (runs any code in it); a data file may not ask for that, only a "
                                 f"command line or a call's own argument")
        program = next((name for name in names if name in PROGRAM_KINDS), None)
        if program:
            raise AgentSpecError(f"{prefix}agent spec {preview(parsed.text)} names {program!r}, which runs the "
                                 f"program it names; a data file may not ask for that, only a command line or a "
                                 f"call's own argument")
    return parsed


def check_data_spec(spec: str | AgentSpec, where: str) -> str | AgentSpec:
    """``spec`` as given, if :func:`parse_data_spec` accepts it (else its one-line error).

    >>> check_data_spec("mcts:100:policy:legacy_ard_ri", "anchors.json")
    'mcts:100:policy:legacy_ard_ri'
    """
    parse_data_spec(spec, where)
    return spec


def make_agent(spec: str | AgentSpec, seed: int | None = None, **kwargs) -> Agent:
    """An agent from a short spec: ``"random"``, ``"greedy"``, ``"mcts:64"``, ``"policy:path.zip"``
    (text, read by :meth:`AgentSpec.parse <agents.spec.AgentSpec.parse>`, or an ``AgentSpec``).

    The kind's registered factory builds it (:func:`register_agent`). A bad spec is an
    :class:`AgentSpecError` (a ``ValueError``) that names it.
    """
    parsed = spec if isinstance(spec, AgentSpec) else AgentSpec.parse(spec)
    factory = _factory_of(parsed)
    return factory(parsed if factory in _READS_SPEC else parsed.argument, seed=seed, **kwargs)


def first_move_problem(spec: str | AgentSpec, rules) -> str | None:
    """Why the agent of ``spec`` cannot play ``rules`` (built, checked against them and asked for
    the opening's first move), in one line, or None: what a config's agents meet before any work,
    so that a bad one is refused now and not after a whole training budget."""
    from tafl_env.game import engine_for

    try:
        agent = make_agent(spec, seed=0)
        agent.check_rules(rules)
        eng = engine_for(rules)
        state = eng.initial_state(1)
        if not eng.check_legal(state, agent.act(eng, state)).all():
            return "it chose an illegal move"
    except Exception as exc:  # noqa: BLE001 -- whatever fails here, the agent cannot be used
        return " ".join(str(exc).split())[:300] or type(exc).__name__
    return None


_BUILTIN_MODULES = {"random": "agents.random_agent", "greedy": "agents.greedy", "mcts": "agents.mcts",
                    "policy": "agents.ppo.policy", "unpickle-policy": "agents.ppo.policy", "rllib": "agents.rllib.agent",
                    "az": "agents.az.agent", "azpolicy": "agents.az.agent", "otep": "agents.otep.host",
                    "openspiel-mcts": "agents.openspiel_bots"}
"""The module that registers each built-in kind (imported when first needed: torch only then)."""

_OPTIONAL = ("torch", "stable_baselines3", "sb3_contrib", "ray")
"""Optional dependencies: a built-in kind that needs a missing one is not available."""


def _factory_of(spec: AgentSpec) -> Callable[..., Agent]:
    """The factory registered for ``spec``'s kind, importing the built-in module that registers it."""
    if spec.kind not in _REGISTRY and spec.kind in _BUILTIN_MODULES:
        import importlib

        try:
            importlib.import_module(_BUILTIN_MODULES[spec.kind])
        except ModuleNotFoundError as exc:
            if exc.name not in _OPTIONAL:
                raise
            raise AgentSpecError(f"agent {preview(spec.text)} needs {exc.name}, which is not installed") from None
    if spec.kind not in _REGISTRY:
        raise AgentSpecError(f"unknown agent {preview(spec.text)}; known kinds: {', '.join(known_kinds())}")
    return _REGISTRY[spec.kind]


def _load_builtin_agents() -> None:
    """Import the agent modules that register themselves (kept lazy: torch only when needed)."""
    import importlib

    for module in dict.fromkeys(_BUILTIN_MODULES.values()):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:  # an optional dependency
            if exc.name not in _OPTIONAL:
                raise
