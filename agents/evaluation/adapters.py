"""Any agent as an :class:`~agents.base.Agent` for rating, and a guard that names a broken one.

:func:`agent_source` accepts what a user of the suite has in hand:

- an agent **spec** (``"mcts:1000"``, ``"policy:PATH"``, ``"rllib:DIR"``: :func:`agents.make_agent`);
- an ``agents`` :class:`~agents.base.Agent` object;
- a **plain callable** ``fn(observation, action_mask) -> action`` over the arrays of the AEC
  observation dict (:meth:`tafl_env.aec.TaflAECEnv.observe`: ``observation`` ``(N, N, 14)``
  float32 from the side to move, ``action_mask`` ``(A,)`` int8), called once per game and move
  (:class:`CallableAgent`);
- a **Stable-Baselines3 model** (``MaskablePPO``, ``PPO``, … with ``.predict``): observations as
  the environments give them, with ``action_masks`` when its ``predict`` takes them
  (:class:`SB3Agent`);
- an **RLlib module** of this project (:class:`agents.rllib.module.TaflMaskedRLModule`, as
  ``agents.rllib.agent.ModuleAgent`` plays it).

:class:`GuardedAgent` wraps the rated agent: an exception, a wrong number of actions, an illegal
move or a refusal of the rules becomes an :class:`AgentError`, one line that names the agent.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any, Callable

import numpy as np

from tafl_env.engine import Engine, State
from tafl_env.observation import observe

from ..base import Agent
from ..spec import AgentSpec, AgentSpecError
from ..checks import is_int
from ..errors import AgentsError

__all__ = ["AgentError", "CallableAgent", "SB3Agent", "GuardedAgent", "agent_source", "with_time_budget"]


class AgentError(AgentsError):
    """The rated agent failed: it raised, played an illegal move or cannot play the variant (one of
    the agents package's user errors, :class:`agents.errors.AgentsError`)."""


def _one_line(exc: BaseException, limit: int = 200) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:limit]}" if text else type(exc).__name__


class CallableAgent(Agent):
    """A plain function ``fn(observation, action_mask) -> action`` as an agent (module docstring).

    >>> import numpy as np
    >>> from agents.evaluation.play import play_games
    >>> from agents import make_agent
    >>> first_legal = CallableAgent(lambda obs, mask: int(np.flatnonzero(mask)[0]))
    >>> len(play_games("legacy_ard_ri", first_legal, make_agent("random"), 2, seed=0, max_turns=20))
    2
    """

    name = "callable"

    def __init__(self, fn: Callable[[np.ndarray, np.ndarray], Any], name: str | None = None):
        super().__init__(None)
        self.fn = fn
        self.name = name or getattr(fn, "__name__", None) or type(fn).__name__

    def choose(self, engine: Engine, state: State) -> np.ndarray:
        obs = observe(engine, state, state.to_move.astype(np.intp))
        masks = engine.legal_action_mask(state)
        return np.array([self._action(self.fn(obs[g], masks[g])) for g in range(len(state))], dtype=np.int64)

    def _action(self, value: Any) -> int:
        # an action is an int: 92.5, "92" or True is a bug in the callable, not a move to round
        if not is_int(value):
            raise TypeError(f"{self.name} returned {str(value)[:40]!r} ({type(value).__name__}); an action "
                            f"is an int")
        return int(value)


class SB3Agent(Agent):
    """A Stable-Baselines3 model as an agent: ``model.predict`` on the batch's observations (from
    the side to move), with ``action_masks`` when its ``predict`` takes them (``MaskablePPO``)."""

    name = "sb3"

    def __init__(self, model, deterministic: bool = True, name: str | None = None):
        super().__init__(None)
        self.model = model
        self.deterministic = deterministic
        self.masked = "action_masks" in inspect.signature(model.predict).parameters
        self.name = name or f"sb3:{type(model).__name__}"

    def check_rules(self, rules) -> str | None:
        n = rules.board_size
        shape = tuple(getattr(self.model.observation_space, "shape", ()) or ())
        if shape != (n, n, 14):
            raise AgentSpecError(f"{self.name} takes observations of shape {shape}; {rules.name} gives "
                                 f"{(n, n, 14)}")
        return None

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        if seed is not None and hasattr(self.model, "set_random_seed"):
            self.model.set_random_seed(seed)

    def choose(self, engine: Engine, state: State) -> np.ndarray:
        obs = observe(engine, state, state.to_move.astype(np.intp))
        if self.masked:
            mask = engine.legal_action_mask(state).astype(bool)
            actions, _ = self.model.predict(obs, action_masks=mask, deterministic=self.deterministic)
        else:
            actions, _ = self.model.predict(obs, deterministic=self.deterministic)
        return np.asarray(actions, dtype=np.int64).reshape(len(state))


def with_time_budget(spec: str, seconds: float) -> str:
    """An ``mcts`` or ``az`` spec with its budget replaced by ``seconds`` a move
    (:meth:`AgentSpec.with_seconds <agents.spec.AgentSpec.with_seconds>`); other specs as they are
    (they do not search).

    >>> with_time_budget("mcts:1000", 0.5), with_time_budget("mcts:64:policy:x.zip", 1), with_time_budget("greedy", 1)
    ('mcts:0.5s', 'mcts:1s:policy:x.zip', 'greedy')
    >>> with_time_budget("az:legacy_ard_ri:64", 0.02), with_time_budget("az:runs/a:b/final.pt", 1)
    ('az:legacy_ard_ri:0.02s', 'az:runs/a:b/final.pt:1s')
    """
    parsed = AgentSpec.parse(spec)
    timed = parsed.with_seconds(seconds)
    return spec if timed is parsed else str(timed)


def agent_source(agent: Any, time_per_move: float | None = None) -> tuple[Any, str]:
    """``(source, label)``: what plays (an :class:`~agents.spec.AgentSpec`, read here once, or an
    Agent object) and the name to report.

    ``time_per_move`` puts a searching agent (an ``mcts`` or ``az`` spec, or an object with a
    ``seconds`` budget such as :class:`agents.mcts.MCTSAgent`) on that many seconds a move.
    """
    if isinstance(agent, (str, AgentSpec)):
        parsed = agent if isinstance(agent, AgentSpec) else AgentSpec.parse(agent)
        timed = parsed.with_seconds(time_per_move) if time_per_move else parsed
        return timed, (agent if timed is parsed and isinstance(agent, str) else str(timed))
    if isinstance(agent, Agent):
        if time_per_move and hasattr(agent, "seconds"):
            agent = copy.deepcopy(agent)
            agent.seconds = float(time_per_move)
        return agent, getattr(agent, "name", type(agent).__name__)
    if hasattr(agent, "predict") and hasattr(agent, "observation_space") and hasattr(agent, "policy"):
        wrapped = SB3Agent(agent)
        return wrapped, wrapped.name
    if hasattr(agent, "masked_logits") and hasattr(agent, "forward_inference"):
        from ..rllib.agent import ModuleAgent

        wrapped = ModuleAgent(agent)
        return wrapped, f"rllib-module:{type(agent).__name__}"
    if callable(agent):
        wrapped = CallableAgent(agent)
        return wrapped, wrapped.name
    raise AgentError(f"cannot rate {type(agent).__name__} object: give an agent spec, an agents.Agent, "
                     "a callable (observation, action_mask) -> action, an SB3 model or an RLlib module")


def _is_spec(source: Any) -> bool:
    """Whether ``source`` is a spec (built where it plays) rather than an agent object."""
    return isinstance(source, (str, AgentSpec))


class GuardedAgent(Agent):
    """The rated agent, checked at every call: anything wrong is an :class:`AgentError` naming it.

    ``source`` is a spec (an :class:`~agents.spec.AgentSpec` or its text: built in the process that
    plays, once) or an Agent object.

    >>> from tafl_env.game import engine_for
    >>> from tafl_env import make_rules
    >>> eng = engine_for(make_rules("legacy_ard_ri"))
    >>> GuardedAgent(CallableAgent(lambda obs, mask: 0), "always-0").act(eng, eng.initial_state(1))
    Traceback (most recent call last):
    ...
    agents.evaluation.adapters.AgentError: agent always-0 played an illegal move in legacy_ard_ri: action 0 (...)
    """

    def __init__(self, source: Any, label: str):
        super().__init__(None)
        self.source, self.label = source, label
        self.name = label
        self._inner: Agent | None = source if isinstance(source, Agent) else None
        self._rules = None      # set by check_rules: a spec built where it plays moves once untimed

    def __getstate__(self):
        state = dict(self.__dict__)
        if _is_spec(self.source):
            state["_inner"] = None     # a spec is built again where the agent plays
        return state

    @property
    def inner(self) -> Agent:
        if self._inner is None:
            from .matches import _agent

            try:
                self._inner = _agent(self.source, "rated", self._rules)
            except AgentSpecError as exc:       # its message names the spec already
                raise AgentError(" ".join(str(exc).split())) from None
        return self._inner

    def reset(self, seed: int | None = None) -> None:
        self.inner.reset(seed)

    def check_rules(self, rules) -> str | None:
        """Check that the agent can play ``rules``; a spec's agent then makes one untimed move, as
        the anchors' do (matches._first_move), and so does its copy in every worker process, so
        that compiling its kernels is not taken out of a ``--time-per-move`` budget."""
        try:
            note = self.inner.check_rules(rules)
        except AgentError:
            raise
        except AgentSpecError as exc:      # its message names the agent already
            raise AgentError(" ".join(str(exc).split())) from None
        except Exception as exc:
            raise AgentError(f"agent {self.label} cannot play {rules.name}: {_one_line(exc)}") from None
        if _is_spec(self.source) and self._rules is None:
            from .matches import _first_move

            try:
                _first_move(self._inner, rules)
            except Exception as exc:
                raise AgentError(f"agent {self.label} failed in {rules.name}: {_one_line(exc)}") from None
        self._rules = rules
        return note

    def act(self, engine: Engine, state: State) -> np.ndarray:
        try:
            actions = np.asarray(self.inner.act(engine, state)).reshape(-1)
        except AgentError:
            raise
        except Exception as exc:
            raise AgentError(f"agent {self.label} failed in {engine.rules.name}: {_one_line(exc)}") from None
        if actions.shape != (len(state),):
            raise AgentError(f"agent {self.label} returned {actions.size} actions for {len(state)} games")
        if not np.issubdtype(actions.dtype, np.integer):
            raise AgentError(f"agent {self.label} returned {actions.dtype} actions, not action ids (ints)")
        actions = actions.astype(np.int64)
        live = np.flatnonzero(~state.done)
        bad = live[(actions[live] < 0) | (actions[live] >= engine.num_actions)]
        if not len(bad):
            legal = engine.check_legal(state.take(live), actions[live])
            bad = live[~legal]
        if len(bad):
            g, a = int(bad[0]), int(actions[bad[0]])
            why = engine.explain_illegal(state, g, a)
            raise AgentError(f"agent {self.label} played an illegal move in {engine.rules.name}: action {a} ({why})")
        return actions
