"""The RLlib env: the PettingZoo AEC env of a variant as an RLlib ``MultiAgentEnv``, with a league.

:class:`TaflMultiAgentEnv` drives :class:`tafl_env.aec.TaflEnv` (the bare PettingZoo env, one game)
turn by turn, as RLlib's own ``PettingZooEnv`` wrapper does: each ``step`` takes the action of the
agent to move and returns the observation of the agent to move next (the same agent again inside a
Berserk capture chain). Observations are the PettingZoo env's ``{"observation", "action_mask"}``,
from the point of view of the agent asked; rewards are its +1/−1/0 at the end.

**The league.** Each episode (``reset``) is drawn, with the env's own random generator, from the
``league`` weights of its config:

- ``selfplay``: agents ``attacker`` and ``defender``, both played by the learner;
- ``snapshot``: the learner plays one side (agent ``attacker`` or ``defender``), the agent
  ``snapshot`` the other, which the mapping function gives to a frozen snapshot module
  (:mod:`agents.rllib.league`);
- ``greedy``, ``random``: the learner plays one side, the project's greedy or random agent
  (:mod:`agents.greedy`, :mod:`agents.random_agent`) the other, inside the env: the learner only
  sees its own turns. They act on the engine state and never play an illegal move.

The learner's side is drawn for every episode (both sides equally often). ``possible_agents`` and
``agents`` stay ``["attacker", "defender", "snapshot"]`` throughout, as in RLlib's PettingZoo
wrapper (its env pre-check wants agent ids it knows). At the end of a game every agent of the
episode receives its last observation, its reward and ``terminated`` (or ``truncated`` at the move
cap); its info then holds ``kind``, ``side``, ``result`` and ``reason``.

An action outside the mask ends the game as PettingZoo's ``TerminateIllegalWrapper`` does (−1 for
the agent that played it, 0 for the other; ``reason: "illegal_action"``, the ruling ``"lose"`` of
:func:`tafl_env.outcome.illegal_action`): RLlib's env pre-check plays unmasked random actions,
while the masking module (:mod:`agents.rllib.module`) never does.

    >>> env = TaflMultiAgentEnv({"variant": "legacy_ard_ri", "league": {"greedy": 1.0}})
    >>> obs, infos = env.reset(seed=1)
    >>> (agent, o), = obs.items()          # the learner's side only: greedy moves inside the env
    >>> agent in ("attacker", "defender"), infos[agent]["kind"], o["observation"].shape
    (True, 'greedy', (7, 7, 14))
"""

from __future__ import annotations

from typing import Any, Mapping

import gymnasium as gym
import numpy as np
from ray.rllib.env.multi_agent_env import MultiAgentEnv

from tafl_env.aec import raw_env
from tafl_env.engine.state import REASON_NAMES, RESULT_NAMES
from tafl_env.outcome import illegal_action
from tafl_env.rules import SIDES

__all__ = ["TaflMultiAgentEnv", "KINDS", "SNAPSHOT", "AGENT_IDS"]

KINDS = ("selfplay", "snapshot", "greedy", "random")
"""Episode kinds of the league, in the order of the ``league`` weights."""
SNAPSHOT = "snapshot"
"""The agent id of a frozen snapshot's side."""
AGENT_IDS = (*SIDES, SNAPSHOT)


class TaflMultiAgentEnv(MultiAgentEnv):
    """One Tafl game as an RLlib multi-agent env (module docstring).

    ``config`` (RLlib's ``env_config``): ``variant`` (required), ``options`` (rule options, with
    ``max_turns``), ``league`` (kind → weight; default ``{"selfplay": 1}``) and ``seed``.
    """

    def __init__(self, config: Mapping[str, Any] | None = None):
        super().__init__()
        config = dict(config or {})
        if "variant" not in config:
            raise ValueError("TaflMultiAgentEnv needs env_config['variant']")
        self.aec = raw_env(config["variant"], **dict(config.get("options") or {}))
        self.engine = self.aec.engine
        league = dict(config.get("league") or {"selfplay": 1.0})
        unknown = set(league) - set(KINDS)
        if unknown or not league or any(w < 0 for w in league.values()) or sum(league.values()) <= 0:
            raise ValueError(f"league weights must be >= 0 for kinds of {KINDS}, not all 0; got {league}")
        total = float(sum(league.values()))
        self.weights = np.array([league.get(k, 0.0) / total for k in KINDS])
        self.possible_agents = list(AGENT_IDS)
        self.agents = list(AGENT_IDS)
        space = self.aec.observation_space("attacker")
        self.observation_spaces = {a: space for a in AGENT_IDS}
        self.action_spaces = {a: self.aec.action_space("attacker") for a in AGENT_IDS}
        self.observation_space = gym.spaces.Dict(self.observation_spaces)
        self.action_space = gym.spaces.Dict(self.action_spaces)
        self.rng = np.random.default_rng(config.get("seed"))
        self._opponents: dict[str, Any] = {}
        self.kind = "selfplay"
        self.ids: list[str | None] = list(SIDES)   # side code -> agent id (None: an opponent inside the env)
        self._seen: set[str] = set()

    # --- opponents inside the env --------------------------------------------------------------------

    def _opponent(self, kind: str):
        if kind not in self._opponents:
            from ..base import make_agent

            self._opponents[kind] = make_agent(kind, seed=int(self.rng.integers(2**31)))
        return self._opponents[kind]

    def _play_opponents(self) -> None:
        """Let the agent inside the env move while it is its turn (several moves in a Berserk chain)."""
        st = self.engine_state
        while not st.done[0] and self.ids[int(st.to_move[0])] is None:
            self.aec.step(int(self._opponent(self.kind).act(self.engine, st)[0]))

    @property
    def engine_state(self):
        return self.aec.engine_state

    # --- the MultiAgentEnv API ------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.kind = KINDS[int(self.rng.choice(len(KINDS), p=self.weights))]
        side = int(self.rng.integers(2))      # the learner's side when it plays one side only
        if self.kind == "selfplay":
            self.ids = list(SIDES)
        else:
            self.ids = [None, None]
            self.ids[side] = SIDES[side]
            self.ids[1 - side] = SNAPSHOT if self.kind == "snapshot" else None
        self.aec.reset(options=options)
        self._seen = set()
        self._play_opponents()
        if self.engine_state.done[0]:       # a start position already decided: start again
            return self.reset(options=options)
        return self._obs_of_mover(), {self._mover(): self._info(self._mover())}

    def step(self, action_dict: Mapping[str, Any]):
        st = self.engine_state
        mover = self._mover()
        if mover not in action_dict:
            raise ValueError(f"no action for the agent to move, {mover!r} (got actions for {sorted(action_dict)})")
        action = int(action_dict[mover])
        mask = self.aec.observe(SIDES[int(st.to_move[0])])["action_mask"]
        if not (0 <= action < len(mask) and mask[action]):
            return self._end(illegal=mover)
        self.aec.step(action)
        self._play_opponents()
        if st.done[0]:
            return self._end()
        obs = self._obs_of_mover()
        # every agent of the episode gets its (zero) reward: RLlib wants one for an agent that
        # acted and receives its next observation
        return obs, {a: 0.0 for a in self._seen}, {"__all__": False}, {"__all__": False}, {}

    # --- helpers --------------------------------------------------------------------------------------

    def _mover(self) -> str:
        return self.ids[int(self.engine_state.to_move[0])]

    def _obs_of_mover(self) -> dict[str, Any]:
        mover = self._mover()
        self._seen.add(mover)
        return {mover: self.aec.observe(SIDES[int(self.engine_state.to_move[0])])}

    def _info(self, agent: str) -> dict[str, Any]:
        side = SIDES[self.ids.index(agent)]
        return {"kind": self.kind, "side": side}

    def _end(self, illegal: str | None = None):
        st = self.engine_state
        if illegal is not None:
            loser = self.ids.index(illegal)
            rewards = {loser: -1.0, 1 - loser: 0.0}
            outcome = illegal_action("lose", SIDES[loser], f"{illegal} played an illegal action")
            result, reason, truncated = outcome.result, outcome.reason, False
        else:
            truncated = REASON_NAMES[int(st.reason[0])] == "truncated"
            result, reason = RESULT_NAMES[int(st.winner[0])], REASON_NAMES[int(st.reason[0])]
            rewards = {s: float(self.aec.rewards.get(SIDES[s], 0.0)) for s in (0, 1)}
        obs, rew, term, trunc, infos = {}, {}, {}, {}, {}
        for s in (0, 1):
            agent = self.ids[s]
            if agent is None or agent not in self._seen:
                continue
            o = self.aec.observe(SIDES[s])
            obs[agent] = {"observation": o["observation"], "action_mask": np.zeros_like(o["action_mask"])}
            rew[agent] = rewards[s]
            term[agent] = not truncated
            trunc[agent] = truncated
            infos[agent] = {**self._info(agent), "result": result, "reason": reason}
        term["__all__"] = not truncated
        trunc["__all__"] = truncated
        return obs, rew, term, trunc, infos
