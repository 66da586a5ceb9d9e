"""Agents and OpenSpiel bots both ways, over the OpenSpiel games of :mod:`tafl_env.openspiel`.

- :class:`AgentBot` is any agent of this project (an :func:`agents.make_agent` spec or an
  :class:`~agents.base.Agent`) as a ``pyspiel.Bot`` for the ``tafl_<variant>`` games, so that
  OpenSpiel's tools (``evaluate_bots``, its match scripts) play it;
- ``openspiel-mcts:N`` is OpenSpiel's ``MCTSBot`` (UCT with ``RandomRolloutEvaluator``: one
  random rollout per leaf, N simulations a move, the MCTS-solver on) as an agent
  (:class:`OpenSpielMCTSAgent`), playable wherever agents play (``tafl play``, ``tafl eval``,
  ``tafl rate``).

Importing this module needs no OpenSpiel (it registers the agent kind); building either needs the
``openspiel`` extra, and without it fails with one line naming the extra.
"""

from __future__ import annotations

import numpy as np

from tafl_env.engine import Engine, State
from tafl_env.errors import preview

from .base import Agent, make_agent, register_agent
from .spec import DEFAULT_SIMULATIONS, AgentSpec, AgentSpecError, budget_problem

__all__ = ["AgentBot", "OpenSpielMCTSAgent", "UCT_C"]

UCT_C = 2.0
"""The exploration constant of the MCTS bot (OpenSpiel's examples use 2 for win/loss games)."""


def _openspiel():
    """:mod:`tafl_env.openspiel` (which registers the games), or the one-line missing-extra error."""
    import tafl_env.openspiel

    return tafl_env.openspiel


class OpenSpielMCTSAgent(Agent):
    """OpenSpiel's ``MCTSBot`` with random rollouts, ``simulations`` a move, as an agent.

    Each running game of the batch becomes an OpenSpiel state holding a copy of that game's engine
    state (its history included, so repetitions and the move cap count as in the game itself), and
    the bot searches it; a bot per rule set, built on first use, seeded from the agent's generator.
    """

    def __init__(self, simulations: int = DEFAULT_SIMULATIONS, seed: int | None = None,
                 uct_c: float = UCT_C):
        problem = budget_problem(simulations)
        if problem:
            raise AgentSpecError(f"openspiel-mcts: {problem}")
        super().__init__(seed)
        self.simulations = int(simulations)
        self.uct_c = float(uct_c)
        self.name = f"openspiel-mcts:{self.simulations}"
        self._bots: dict = {}       # RuleSet -> (game, MCTSBot)

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        if seed is not None:
            self._bots = {}

    def _bot(self, rules):
        found = self._bots.get(rules)
        if found is None:
            from open_spiel.python.algorithms import mcts

            openspiel = _openspiel()
            try:
                game = openspiel.game_for_rules(rules)
            except ValueError as exc:
                raise AgentSpecError(f"{self.name} cannot play {rules.name}: {exc}") from None
            random_state = np.random.RandomState(int(self.rng.integers(2**32)))
            bot = mcts.MCTSBot(game, self.uct_c, self.simulations,
                               mcts.RandomRolloutEvaluator(n_rollouts=1, random_state=random_state),
                               solve=True, random_state=random_state)
            found = self._bots[rules] = (game, bot)
        return found

    def check_rules(self, rules) -> str | None:
        self._bot(rules)
        return None

    def choose(self, engine: Engine, state: State) -> np.ndarray:
        game, bot = self._bot(engine.rules)
        out = np.empty(len(state), dtype=np.int64)
        for g in range(len(state)):
            position = game.new_initial_state()
            position.engine_state = state.take([g])
            out[g] = bot.step(position)
        return out

    def __getstate__(self) -> dict:
        d = dict(self.__dict__)
        d["_bots"] = {}             # OpenSpiel's bots are rebuilt where the agent plays
        return d


def _mcts_factory(argument, seed=None, **kwargs) -> OpenSpielMCTSAgent:
    if argument is None:
        return OpenSpielMCTSAgent(seed=seed, **kwargs)
    text, spec = argument.strip(), preview(f"openspiel-mcts:{argument}")
    if not (text.isascii() and text.isdigit()):
        raise AgentSpecError(f"{spec}: the simulations a move must be an integer, got {preview(argument)}; "
                             f"write openspiel-mcts[:N]")
    problem = budget_problem(int(text))
    if problem:
        raise AgentSpecError(f"{spec}: {problem}")
    return OpenSpielMCTSAgent(int(text), seed=seed, **kwargs)


register_agent("openspiel-mcts", _mcts_factory, takes_argument=True)


def _agent_bot_class():
    import pyspiel

    class AgentBot(pyspiel.Bot):
        """An agent of this project as an OpenSpiel bot for the ``tafl_<variant>`` games.

        ``agent`` is a spec (``"greedy"``, ``"mcts:200"``, ``"policy:legacy_ard_ri"``) or an
        :class:`~agents.base.Agent`. ``step(state)`` hands the agent the state's engine batch of
        one and returns its action; the agent checks the game's rules on its first move.
        """

        def __init__(self, agent: str | AgentSpec | Agent, seed: int | None = None):
            pyspiel.Bot.__init__(self)
            _openspiel()
            self.agent = agent if isinstance(agent, Agent) else make_agent(agent, seed=seed)
            self._rules = None

        def restart_at(self, state) -> None:
            self.agent.reset()

        def inform_action(self, state, player_id: int, action: int) -> None:
            pass

        def provides_policy(self) -> bool:
            return False

        def step(self, state) -> int:
            game = state.get_game()
            if not isinstance(game, _openspiel().TaflGame):
                raise TypeError(f"an AgentBot plays the tafl_<variant> games, not {game}")
            if self._rules is not game.rules:
                self.agent.check_rules(game.rules)
                self._rules = game.rules
            return int(self.agent.act(game.engine, state.engine_state)[0])

    AgentBot.__module__ = __name__
    return AgentBot


def __getattr__(name: str):
    # AgentBot subclasses pyspiel.Bot, so it is defined when first asked for: importing this
    # module (which registers the openspiel-mcts kind) needs no OpenSpiel.
    if name == "AgentBot":
        _openspiel()
        cls = globals()["AgentBot"] = _agent_bot_class()
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
