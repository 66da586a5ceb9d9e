"""The PettingZoo AEC environment of every Tafl variant: a thin front end over a batch of one.

``env(variant, **options)`` is the environment wrapped as PettingZoo's classic games are;
``raw_env(variant, **options)`` (= :class:`TaflEnv`) is the bare one. Importing this module registers
each variant with PettingZoo's registry as ``tafl/<Name>-v0`` (``Name`` = the variant's title without
spaces)::

    >>> import pettingzoo, tafl_env.aec
    >>> e = pettingzoo.make("aec", "tafl/HistorischesTablut-v0")
    >>> e.reset()
    >>> obs, reward, terminated, truncated, info = e.last()
    >>> e.agent_selection, obs["observation"].shape, int(obs["action_mask"].sum()), info
    ('attacker', (9, 9, 14), 80, {'turn': 0})
    >>> e.unwrapped.action_to_notation(441)   # (13*4 + 3)*8 + 1: e2, west, 2 squares
    'e2-c2'
"""

from __future__ import annotations

import operator
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from .engine.state import REASON_NAMES, RESULT_NAMES, TRUNCATED
from .errors import IllegalMoveError, TaflError, check_reset_options, check_seed
from .outcome import illegal_action
from .game import Game, engine_for
from .observation import observation_shape, observe
from .render import HumanRenderer, render_ansi, render_rgb
from .rules import SIDES, RuleSet, make_rules
from .wrappers import wrap
from .registration import ENV_IDS, env_id, register_pettingzoo

AGENTS = SIDES  # ("attacker", "defender"): agent name = side name, index = side code
RESET_OPTIONS = ("position", "to_move")   # the keys reset(options=...) reads


class TaflEnv(AECEnv):
    """
    # Tafl

    | Import             | `from tafl_env.aec import env; env("historical_tablut")` or `pettingzoo.make("aec", "tafl/HistorischesTablut-v0")` |
    |--------------------|-----------------------------------------------------------------|
    | Actions            | Discrete                                                        |
    | Parallel API       | No                                                              |
    | Manual Control     | No                                                              |
    | Agents             | `agents= ['attacker', 'defender']`                              |
    | Agents             | 2                                                               |
    | Action Shape       | Discrete(N\\*N\\*4\\*(N-1)+1): 7×7 → 1177, 9×9 → 2593, 11×11 → 4841, 19×19 → 25993 |
    | Action Values      | [0, N\\*N\\*4\\*(N-1)]                                          |
    | Observation Shape  | (N, N, 14)                                                      |
    | Observation Values | [0, 1]                                                          |

    Tafl ("table") games are the Norse asymmetric board games of the king's escape: the defenders
    (a king and his men, in the centre) try to bring the king to an escape square, the attackers
    (more numerous, around the edges) try to capture him. Every piece moves like a rook
    (one square in Ard Ri) and is captured by custodial capture, between two enemies or an enemy and a
    hostile square. One environment class serves every variant; the variant and every rule option
    are keyword arguments (``env("legacy_tawlbwrdd", repetition="draw", max_turns=100)``).

    ## Rules (summary; the binding text is RULES.md)

    | variant id | board | first | king | escape | specials |
    |---|---|---|---|---|---|
    | `legacy_alea_evangelii` | 19 | attackers | unarmed, 4-side capture (edge hostile) | corners | encirclement |
    | `legacy_tawlbwrdd` | 11 | attackers | unarmed, 4-side capture (edge hostile) | corners | encirclement |
    | `historical_tablut` | 9 | attackers | armed, Tablut capture | any edge square | encirclement |
    | `legacy_ard_ri` | 7 | defenders | armed, 4-side (edge hostile) | corners | one-square moves |
    | `legacy_berserk` | 11 | attackers | armed, 4-side + commander sandwich | corners | knight, commanders, jumps, berserk chains |

    Only the king may stop on the throne (and on restricted corners); the empty throne (and the
    corners, in corner-escape variants) is hostile. The king is captured only on an attackers' move. A
    side with no legal move loses; the third occurrence of a position makes the player who began the
    repetition lose (option ``repetition``). In Berserk, a move that captures lets the same piece move
    again with another capturing move, or **pass** to end the turn: during such a chain the same agent
    is selected again.

    ## Observation space

    ``{"observation": (N, N, 14) float32, "action_mask": (A,) int8}``, from the point of view of the
    agent asked (``tafl_env.observation``; row 0 = rank 1, column 0 = file a):

    | plane | meaning |
    |---|---|
    | 0 | own soldiers |
    | 1 | own special pieces (the knight for the defenders, commanders for the attackers) |
    | 2 | own king |
    | 3 | enemy soldiers |
    | 4 | enemy special pieces |
    | 5 | enemy king |
    | 6 | the throne square |
    | 7 | restricted corner squares (empty plane where corners are plain) |
    | 8 | escape squares (corners, or the whole edge in Historisches Tablut) |
    | 9 | 1 everywhere if the observing agent is to move |
    | 10 | 1 everywhere if the observing agent is the defenders |
    | 11 | the square of the piece that must continue a berserk chain |
    | 12 | 1 everywhere if the current position has occurred before |
    | 13 | turns played / move cap, everywhere (0 without a cap) |

    ``action_mask`` marks exactly the legal actions of the agent to move (all zeros for the other
    agent and once the game is over). ``state()``, in ``state_space`` (the same Box), is the
    observation of the attackers: with planes 9-13 it holds the whole game.

    ## Action space

    ``Discrete(N*N*4*(N-1) + 1)``. The move of the piece on square ``sq`` (``(rank-1)*N + file``,
    a1 = 0) in direction ``d`` (0 north = towards higher ranks, 1 east, 2 south, 3 west) over ``k``
    squares (1 … N-1) is ``(sq*4 + d)*(N-1) + (k-1)``; a jump is the distance-2 action over the jumped
    piece. The last action, ``N*N*4*(N-1)``, is **pass**, legal only to end a berserk chain.
    ``env.unwrapped.action_to_notation(a)`` names an action in OpenTafl notation.

    ## Rewards

    | Winner | Loser | Draw / truncation |
    | :----: | :---: | :---------------: |
    | +1     | -1    | 0                 |

    Rewards are given once, at the end; every other step gives 0. With ``env()`` an illegal action
    ends the game: -1 for the agent that made it, 0 for the other (PettingZoo's
    ``TerminateIllegalWrapper``); ``raw_env`` raises :class:`~tafl_env.errors.IllegalMoveError` and
    changes nothing.

    ## Termination and truncation

    A won, lost or drawn game (king captured, king escaped, encirclement, no legal move, repetition)
    sets ``terminations`` for both agents. When the move cap ``max_turns`` (a rule option, default
    per variant; ``None`` for none) is reached, ``truncations`` is set for both, reward 0. At the end
    ``infos`` hold ``{"turn", "reason", "result"}`` (reason: ``king_captured``, ``escaped``,
    ``encircled``, ``no_moves``, ``repetition`` or ``truncated``; result: ``attacker``,
    ``defender`` or ``draw``; ``env.unwrapped.game.outcome()`` gives them as a
    :class:`tafl_env.Outcome`); while the game runs, ``{"turn"}`` (completed turns; a whole berserk
    chain is one turn).

    ## Arguments

    ``TaflEnv(variant, render_mode=None, *, position=None, to_move=None,
    square_px=32, **options)``: ``position``/``to_move`` start every episode from a position string
    (RULES.md §1) instead of the variant's start (``reset(options={"position": ..., "to_move": ...})``
    does it for one episode); ``square_px`` is the size of a square in ``rgb_array``/``human``
    renderings; ``options`` are rule options (``tafl_env.rules``).

    Search agents read ``env.unwrapped.engine`` and ``env.unwrapped.engine_state`` (the batched engine
    and its state, a batch of one) or ``env.unwrapped.game`` (a :class:`~tafl_env.Game` copy of the
    current position). ``copy.deepcopy`` and ``pickle`` keep a game in progress exactly.

    ## Version history

    * v0: initial release.
    """

    metadata = {
        "render_modes": ["ansi", "rgb_array", "human"],
        "name": "tafl_v0",
        "is_parallelizable": False,
        "render_fps": 4,
    }

    def __init__(self, variant: str | RuleSet, render_mode: str | None = None, *,
                 position: str | None = None, to_move: str | None = None, square_px: int = 32,
                 **options: Any):
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"unknown render_mode {render_mode!r}; expected one of "
                             f"{self.metadata['render_modes']} or None")
        self.rules: RuleSet = make_rules(variant, **options)
        self.engine = engine_for(self.rules)
        self.metadata = {**TaflEnv.metadata, "name": f"tafl_{self.rules.name}_v0"}
        self.render_mode = render_mode
        self.square_px = int(square_px)
        self._start = (position, to_move)
        self.engine.initial_state(1, position, to_move)  # reject a bad position now, not at reset

        self.possible_agents = list(AGENTS)
        self.agents: list[str] = []
        n_actions = self.engine.num_actions
        self.action_spaces = {a: spaces.Discrete(n_actions) for a in self.possible_agents}
        self.observation_spaces = {
            a: spaces.Dict({
                "observation": spaces.Box(0.0, 1.0, observation_shape(self.engine), dtype=np.float32),
                "action_mask": spaces.Box(0, 1, (n_actions,), dtype=np.int8),
            })
            for a in self.possible_agents
        }
        self.state_space = spaces.Box(0.0, 1.0, observation_shape(self.engine), dtype=np.float32)
        self._perspective = {a: np.array([i], dtype=np.intp) for i, a in enumerate(AGENTS)}
        self._action = np.zeros(1, dtype=np.intp)   # step's action, as the engine takes it
        self.engine_state = None
        self.played: list[int] = []
        self.rewards: dict[str, float] = {}
        self._cumulative_rewards: dict[str, float] = {}
        self.terminations: dict[str, bool] = {}
        self.truncations: dict[str, bool] = {}
        self.infos: dict[str, dict] = {}
        self.agent_selection = None
        self._renderer: HumanRenderer | None = None

    # --- spaces ----------------------------------------------------------------------------------

    def observation_space(self, agent: str) -> spaces.Dict:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Discrete:
        return self.action_spaces[agent]

    # --- the game --------------------------------------------------------------------------------

    @property
    def game(self) -> Game:
        """A :class:`~tafl_env.Game` copy of the current position (for search; playing it leaves the env alone)."""
        return Game.from_state(self.rules, self.engine_state)

    def action_to_notation(self, action: int) -> str:
        """The move string (RULES §1, §6.7) of a legal ``action`` now, e.g. ``'e2-c2'`` or ``'pass'``."""
        return self.game.describe(int(action)).notation

    def state(self) -> np.ndarray:
        """The whole game as one array in ``state_space`` (the observation of ``"attacker"``: the
        board, the side to move, a pending chain, repetition and move-cap progress)."""
        self._require_reset("state")
        return observe(self.engine, self.engine_state, self._perspective["attacker"])[0]

    def _require_reset(self, what: str) -> None:
        if self.engine_state is None:
            raise RuntimeError(f"call reset() before {what}()")

    # --- AEC API ---------------------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """Start a new game. ``options`` may hold ``"position"`` and ``"to_move"``; any other key
        changes nothing and is named in a ``UserWarning`` (not an error, unlike the Gymnasium envs:
        PettingZoo's own ``api_test`` resets with ``options={"options": 1}`` and expects it to work).

        The game has no randomness, so ``seed`` changes nothing; it is still checked (None or an
        int >= 0), as every env of the package checks it. A refused reset leaves the env as it was.
        """
        check_seed(seed, "TaflEnv.reset")
        options = check_reset_options(options, RESET_OPTIONS, "TaflEnv.reset", unknown="warn")
        position = options.get("position", self._start[0])
        to_move = options.get("to_move", self._start[1])
        self.engine_state = self.engine.initial_state(1, position, to_move)
        self.played = []
        self.agents = self.possible_agents[:]
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {"turn": 0} for a in self.agents}
        self._skip_agent_selection = None
        if self.engine_state.reason[0]:  # a loaded position with no legal move (RULES §6.6)
            self._finish()
        self.agent_selection = AGENTS[self.engine_state.to_move[0]]
        if self.render_mode == "human":
            self.render()

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        if agent not in self._perspective:
            raise TaflError(f"unknown agent {agent!r}: the agents are 'attacker' and 'defender'")
        self._require_reset("observe")
        st = self.engine_state
        obs = observe(self.engine, st, self._perspective[agent])[0]
        if agent == self.agent_selection:
            mask = self.engine.legal_action_mask(st)[0]  # all zeros once the game is over
        else:
            mask = np.zeros(self.engine.num_actions, dtype=np.int8)
        return {"observation": obs, "action_mask": mask}

    def step(self, action) -> None:
        self._require_reset("step")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        a = self._as_action(action, agent)
        st = self.engine_state
        try:
            self._action[0] = a
            self.engine.step(st, self._action)
        except IllegalMoveError as exc:
            illegal_action("raise", agent, f"{agent} cannot play action {a} in {self.rules.name} "
                                           f"(turn {int(st.turn[0])}): {exc}")
        self.played.append(a)
        self._cumulative_rewards[agent] = 0.0
        if st.reason[0]:
            self._finish()
        else:
            turn = int(st.turn[0])
            self.infos = {"attacker": {"turn": turn}, "defender": {"turn": turn}}
        self.agent_selection = AGENTS[st.to_move[0]]
        if self.render_mode == "human":
            self.render()

    def _as_action(self, action, agent: str) -> int:
        try:
            if isinstance(action, (bool, np.bool_)):
                raise TypeError   # an int to Python, but no action: Game.push(True) is an error too
            a = operator.index(action)
        except TypeError:
            raise IllegalMoveError(f"{agent} must play an action id (an int), got {action!r}") from None
        if not 0 <= a < self.engine.num_actions:
            raise IllegalMoveError(f"{agent} played action {a}, outside Discrete({self.engine.num_actions})")
        return a

    def _finish(self) -> None:
        """Book the end of the game: rewards, terminations or truncations, infos."""
        st = self.engine_state
        winner, reason = int(st.winner[0]), int(st.reason[0])
        info = {"turn": int(st.turn[0]), "reason": REASON_NAMES[reason], "result": RESULT_NAMES[winner]}
        if reason == TRUNCATED:
            self.truncations = {a: True for a in self.agents}
            self.rewards = {a: 0.0 for a in self.agents}
        else:
            self.terminations = {a: True for a in self.agents}
            self.rewards = {a: (0.0 if winner not in (0, 1) else 1.0 if i == winner else -1.0)
                            for i, a in enumerate(AGENTS) if a in self.agents}
        self.infos = {a: dict(info) for a in self.agents}
        self._accumulate_rewards()

    # --- rendering -------------------------------------------------------------------------------

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            gymnasium.logger.warn("You are calling render method without specifying any render mode.")
            return None
        if self.engine_state is None:
            raise RuntimeError("call reset() before render()")
        if self.render_mode == "ansi":
            return render_ansi(self.engine, self.engine_state)
        frame = render_rgb(self.engine, self.engine_state, square_px=self.square_px)
        if self.render_mode == "rgb_array":
            return frame
        if self._renderer is None:
            self._renderer = HumanRenderer(self.rules.title, self.metadata["render_fps"])
        self._renderer.show(frame)
        return None

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None

    # --- copies ----------------------------------------------------------------------------------

    def __getstate__(self) -> dict:
        d = self.__dict__.copy()
        d.pop("engine", None)        # rebuilt from the rules (shared, cached per RuleSet)
        d.pop("_action", None)       # scratch of step()
        d["_renderer"] = None        # a window is not part of the game
        return d

    def __setstate__(self, d: dict) -> None:
        self.__dict__.update(d)
        self.engine = engine_for(self.rules)
        self._action = np.zeros(1, dtype=np.intp)

    def __str__(self) -> str:
        return self.metadata["name"]


raw_env = TaflEnv


def env(variant: str | RuleSet, render_mode: str | None = None, **kwargs: Any) -> AECEnv:
    """The environment wrapped as PettingZoo's classic games are: an illegal action ends the game
    (-1), an action outside the action space is an ``AssertionError``, calls before ``reset()`` are
    errors (PettingZoo's three wrappers, made cheaper to go through: :mod:`tafl_env.wrappers`)."""
    return wrap(TaflEnv(variant, render_mode=render_mode, **kwargs), illegal_reward=-1)


# --- PettingZoo registry ------------------------------------------------------------------------

def registry_id(variant: str | RuleSet) -> str:
    """``'historical_tablut'`` → ``'tafl/HistorischesTablut-v0'``."""
    return env_id(variant.name if isinstance(variant, RuleSet) else variant)


REGISTRY_IDS: dict[str, str] = {name: variant for variant, name in ENV_IDS.items()}
"""Registered id → variant id, for the five variants of RULES.md."""

register_pettingzoo()
