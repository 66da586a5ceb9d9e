"""Every variant as an OpenSpiel game: ``pyspiel.load_game("tafl_<variant>")``.

Importing this module registers one Python OpenSpiel game per variant (the five of RULES.md and the
extra ones), each a front end of the same engine as the environments (a batch of one), so that
OpenSpiel's algorithms and bots play exactly the rules of RULES.md::

    >>> import pyspiel, tafl_env.openspiel
    >>> game = pyspiel.load_game("tafl_historical_tablut")
    >>> state = game.new_initial_state()
    >>> state.current_player(), len(state.legal_actions()), state.action_to_string(441)
    (0, 80, 'e2-c2')
    >>> game.observation_tensor_shape(), game.num_distinct_actions(), game.max_game_length()
    ([9, 9, 14], 2593, 200)
    >>> pyspiel.load_game("tafl_legacy_ard_ri(max_turns=40)").new_initial_state().current_player()
    1

The game:

- **Players**: player 0 is always the attackers and player 1 the defenders (the engine's side codes
  and the AEC agents' order), whichever side moves first in the variant: in Legacy Ard Ri the
  defenders move first, so the first ``current_player()`` is 1.
- **Sequential, two players, zero-sum, perfect information, deterministic, terminal rewards**:
  ``returns()`` is ``[+1, -1]`` or ``[-1, +1]`` at the end of a won game, ``[0, 0]`` for a draw and for
  a game stopped by the move cap, and ``[0, 0]`` before the end.
- **Actions**: the action ids of DESIGN.md (``num_distinct_actions() = N*N*4*(N-1) + 1``, the last
  one the pass); ``legal_actions()`` are the ids the action mask marks. A berserk chain is a run of
  consecutive plies of the same player: ``current_player()`` stays the same until the chain ends.
  ``action_to_string`` writes the move in notation (RULES §1.4, captures included).
- **Observation**: ``observation_tensor(player)`` is the ``(N, N, 14)`` plane stack of
  ``tafl_env.observation`` seen by ``player`` (height × width × planes, row 0 = rank 1), flattened as
  OpenSpiel keeps tensors; ``observation_string(player)`` is the board with the side to move.
- **Parameters**: every rule option of RULES §8 whose type OpenSpiel has (a bool, an int or a
  string), with the variant's values as defaults: ``move_range`` 0 stands for ``None`` (any
  distance); ``max_turns`` must be a number of turns (OpenSpiel needs a finite game). Besides,
  ``position`` (a position string, ``""`` for the variant's start) and ``to_move`` (``"attacker"``,
  ``"defender"`` or ``""`` for the variant's first mover) start the game elsewhere.
- **Length**: ``max_game_length()`` counts plies. Without berserk chains a ply is a turn, so it is
  ``max_turns``. With them a turn is its first move plus continuations and at most one pass; every
  continuation captures, and every pass ends a chain opened by a capture, so over a whole game the
  extra plies are at most the pieces that can be captured: the bound is ``max_turns`` plus the number
  of pieces on the start position.
- **Copies**: ``clone()`` copies the engine state (its arrays), the game's engine is shared.
  ``serialize()`` is OpenSpiel's form for Python games, the actions played and the state's Python
  attributes pickled; here the pickle holds no position (deserializing replays the actions from the
  game's start), unless the state's ``engine_state`` was set from outside. ``deserialize_state``
  (and ``pickle``) unpickle it, so load only what you trust.

Beyond OpenSpiel's API a state of these games has ``outcome()`` (a :class:`tafl_env.Outcome` or
``None``), ``game_copy()`` (a :class:`tafl_env.Game` of the position) and ``engine_state`` (the batch of
one that agents act on).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .extras import require

require("openspiel", "tafl_env.openspiel", modules=("pyspiel", "open_spiel.python.observation"))
import pyspiel  # noqa: E402
from open_spiel.python.observation import IIGObserverForPublicInfoGame  # noqa: E402

from .engine.state import RUNNING
from .errors import IllegalMoveError, InvalidOptionError
from .game import Game, engine_for
from .notation import PASS, board_diagram, format_move, parse_position, square_name
from .observation import observation_shape, observer_for
from .outcome import Outcome
from .rules import EXTRA_VARIANTS, SIDES, VARIANTS, RuleSet, base_rules, make_rules

__all__ = ["GAME_PREFIX", "game_name", "load_game", "game_for_rules", "default_parameters", "rules_of",
           "params_of", "max_game_length", "TaflGame", "TaflState", "TaflObserver", "GAME_CLASSES",
           "REGISTERED"]

GAME_PREFIX = "tafl_"
"""An OpenSpiel game name is this prefix and the variant id."""

START_PARAMETERS = {"position": "", "to_move": ""}
"""The parameters that are not rule options: where the game starts (``""``: the variant's start)."""

_NOT_PARAMETERS = ("name", "title", "summary")
"""``RuleSet`` fields that name a variant rather than a rule."""

NOTATION_CACHE = 8
"""Positions whose moves' notations a game keeps (:meth:`TaflGame.notations`)."""

MAX_LENGTH = 2**31 - 1
"""OpenSpiel holds a game's length as a C++ int."""


def game_name(variant: str) -> str:
    """``'historical_tablut'`` → ``'tafl_historical_tablut'``."""
    return GAME_PREFIX + variant


def _parameter_value(value):
    """A rule value as an OpenSpiel parameter (``None`` of ``move_range`` → 0)."""
    return 0 if value is None else value


def default_parameters(variant: str) -> dict:
    """The parameters of ``variant``'s game and their defaults (its rules, then the start)."""
    rules = base_rules(variant)
    params = {f.name: _parameter_value(getattr(rules, f.name))
              for f in dataclasses.fields(RuleSet) if f.name not in _NOT_PARAMETERS}
    return {**params, **START_PARAMETERS}


def rules_of(variant: str, params: dict | None = None) -> tuple[RuleSet, str | None, str | None]:
    """``(rules, position, to_move)`` of a game's parameters (a mistake: a ``TaflError`` naming it)."""
    params = dict(params or {})
    unknown = sorted(set(params) - set(default_parameters(variant)))
    if unknown:
        raise InvalidOptionError(f"unknown parameter(s) {', '.join(unknown)} of {game_name(variant)}")
    position = params.pop("position", "") or None
    to_move = params.pop("to_move", "") or None
    base = base_rules(variant)
    options = {name: value for name, value in params.items() if value != _parameter_value(getattr(base, name))}
    if options.get("move_range", None) == 0:
        options["move_range"] = None
    if "max_turns" in options and options["max_turns"] < 1:
        raise InvalidOptionError(f"parameter max_turns={options['max_turns']} of {game_name(variant)}: "
                                 "an OpenSpiel game needs a finite length, a cap of 1 turn or more")
    return make_rules(variant, **options), position, to_move


def params_of(rules: RuleSet) -> dict:
    """The game parameters of ``rules`` (those that differ from its variant's defaults): the inverse
    of :func:`rules_of`. A rule set without a move cap has none (an OpenSpiel game is finite)."""
    if rules.max_turns is None:
        raise InvalidOptionError(f"{rules.name} without a move cap (max_turns=None) cannot be an OpenSpiel "
                                 "game, which needs a finite length: give max_turns")
    defaults = default_parameters(rules.name)
    return {name: _parameter_value(getattr(rules, name)) for name in defaults
            if name not in START_PARAMETERS and _parameter_value(getattr(rules, name)) != defaults[name]}


def game_for_rules(rules: RuleSet) -> "TaflGame":
    """The game of a ``RuleSet`` (its variant with its options as parameters)."""
    return load_game(rules.name, **params_of(rules))


def max_game_length(rules: RuleSet, position: str | None = None) -> int:
    """The most plies a game can last: ``max_turns``, plus the pieces of the start position when
    berserk chains are on (each continuation and each pass follows a capture; module docstring)."""
    pieces = int(np.count_nonzero(parse_position(position or rules.layout, rules.board_size)))
    length = rules.max_turns + (pieces if rules.berserk else 0)
    if length > MAX_LENGTH:
        raise InvalidOptionError(f"max_turns={rules.max_turns} is too large for OpenSpiel "
                                 f"(a game may last at most {MAX_LENGTH} plies)")
    return length


def _game_type(variant: str) -> pyspiel.GameType:
    rules = base_rules(variant)
    return pyspiel.GameType(
        short_name=game_name(variant),
        long_name=f"Tafl: {rules.title}",
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.DETERMINISTIC,
        information=pyspiel.GameType.Information.PERFECT_INFORMATION,
        utility=pyspiel.GameType.Utility.ZERO_SUM,
        reward_model=pyspiel.GameType.RewardModel.TERMINAL,
        max_num_players=2,
        min_num_players=2,
        provides_information_state_string=True,
        provides_information_state_tensor=False,
        provides_observation_string=True,
        provides_observation_tensor=True,
        parameter_specification=default_parameters(variant))


class TaflGame(pyspiel.Game):
    """One variant under the given parameters (rule options, move cap, start). Each variant has
    its subclass (:data:`GAME_CLASSES`), which OpenSpiel's registry builds from the parameters."""

    variant: str = ""

    def __init__(self, params: dict | None = None):
        if not self.variant:
            raise TypeError("TaflGame is built per variant: pyspiel.load_game('tafl_<variant>') or "
                            "tafl_env.openspiel.load_game(variant)")
        self.rules, self.position, self.to_move = rules_of(self.variant, params)
        self.engine = engine_for(self.rules)
        self.engine.initial_state(1, self.position, self.to_move)   # a bad start is refused here
        self._notations: dict = {}
        super().__init__(
            _game_type(self.variant),
            pyspiel.GameInfo(num_distinct_actions=self.engine.num_actions, max_chance_outcomes=0,
                             num_players=2, min_utility=-1.0, max_utility=1.0, utility_sum=0.0,
                             max_game_length=max_game_length(self.rules, self.position)),
            {**default_parameters(self.variant), **(params or {})})

    def new_initial_state(self) -> "TaflState":
        return TaflState(self)

    def notations(self, engine_state) -> dict[int, str]:
        """Every legal action of a position → its notation, from one batched step of all of them.

        OpenSpiel asks ``action_to_string`` of each legal action in turn (its conformance test does
        at every ply); the last few positions' answers are kept, keyed by the board, the side to
        move and the open chain (all that a move's notation depends on).
        """
        st = engine_state
        key = (st.board[0].tobytes(), int(st.to_move[0]), int(st.chain[0]), int(st.reason[0]))
        cache = self._notations
        found = cache.get(key)
        if found is None:
            found = _notations(self.engine, st)
            if len(cache) >= NOTATION_CACHE:
                del cache[next(iter(cache))]
            cache[key] = found
        return found

    def make_py_observer(self, iig_obs_type=None, params=None):
        """The plane observer for plain observations; OpenSpiel's public-information observer
        (the action history) for information states."""
        if iig_obs_type is None or (iig_obs_type.public_info and not iig_obs_type.perfect_recall):
            return TaflObserver(self, params)
        return IIGObserverForPublicInfoGame(iig_obs_type, params)


def _notations(engine, engine_state) -> dict[int, str]:
    """Each legal action → its notation (as :meth:`tafl_env.Game.legal_moves` writes it), from one
    batched step of the position's copies and one decoding of all the actions."""
    mask = engine.legal_action_mask(engine_state)[0]
    actions = mask.view(np.bool_).nonzero()[0]
    notations = {}
    if actions[-1:].tolist() == [engine.pass_action]:
        actions, notations[engine.pass_action] = actions[:-1], PASS
    if not len(actions):
        return notations
    info = engine.step(engine_state.take(np.zeros(len(actions), dtype=np.intp)), actions)
    origins, _, _, targets = engine.decode(actions)
    captured, jumps, continued = info.captured.tolist(), info.jump.tolist(), info.continuation.tolist()
    n, s = engine.n, engine.s
    for i, action in enumerate(actions.tolist()):
        notations[action] = format_move(int(origins[i]), int(targets[i]), n, jump=jumps[i],
                                        continuation=continued[i],
                                        captures=tuple(c for c in captured[i] if c < s))
    return notations


class _Position:
    """The engine state of a :class:`TaflState`, as OpenSpiel copies and pickles the attributes of
    a Python state: a clone copies the arrays once; a pickle (``serialize()``) holds nothing when
    the state is its game's start plus the actions of its history, which deserializing replays,
    and the arrays otherwise (a position set from outside, :attr:`TaflState.engine_state`)."""

    __slots__ = ("state", "replayable")

    def __init__(self, state=None, replayable: bool = True):
        self.state, self.replayable = state, replayable

    def __deepcopy__(self, memo) -> "_Position":
        return _Position(self.state.copy(), self.replayable)

    def __reduce__(self):
        return (_Position, ()) if self.replayable else (_Position, (self.state, False))


class TaflState(pyspiel.State):
    """A game in progress: the engine's batch of one, stepped in place.

    Its only Python attribute is its :class:`_Position`: OpenSpiel's ``clone()`` makes a new
    initial state and deep-copies the attributes of a Python state into it, and ``serialize()``
    pickles them, so the engine and the rules are reached through ``get_game()`` instead of being
    copied, and a new state builds its start position only when first asked (a clone never needs
    it).
    """

    @property
    def engine_state(self):
        """The engine's batch of one that this state steps (what agents act on). Setting it puts
        the state on another position of the same rules; its OpenSpiel history is left as it was."""
        position = self.__dict__.get("_position")
        if position is None or position.state is None:
            position = self._position = _Position(self._replay())
        return position.state

    @engine_state.setter
    def engine_state(self, state) -> None:
        self._position = _Position(state, replayable=False)

    def _replay(self):
        """The game's start with the actions of this state's history played."""
        game = self.get_game()
        state = game.engine.initial_state(1, game.position, game.to_move)
        for action in self.history():
            game.engine.step(state, np.array([action], dtype=np.intp))
        return state

    # --- OpenSpiel's API ----------------------------------------------------------------------

    def current_player(self) -> int:
        st = self.engine_state
        return pyspiel.PlayerId.TERMINAL if st.reason[0] != RUNNING else int(st.to_move[0])

    def _legal_actions(self, player: int) -> list[int]:
        st = self.engine_state
        if st.reason[0] != RUNNING or player != st.to_move[0]:
            return []
        return self.get_game().engine.legal_action_mask(st)[0].view(np.bool_).nonzero()[0].tolist()

    def _apply_action(self, action: int) -> None:
        st, engine = self.engine_state, self.get_game().engine
        try:
            engine.step(st, np.array([action], dtype=np.intp))
        except IllegalMoveError:
            raise IllegalMoveError(f"illegal action {action} in {engine.rules.name}: "
                                   f"{engine.explain_illegal(st, 0, int(action))}") from None

    def _action_to_string(self, player: int, action: int) -> str:
        """The move in notation, captures included, when ``action`` is legal now; else its squares."""
        game = self.get_game()
        notation = game.notations(self.engine_state).get(action)
        if notation is not None:
            return notation
        engine = game.engine
        if not 0 <= action < engine.pass_action:
            return "pass" if action == engine.pass_action else f"action {action}"
        origin, _, _, target = (int(v[0]) for v in engine.decode(np.array([action])))
        return format_move(origin, target, engine.n) if target < engine.s else f"action {action}"

    def is_terminal(self) -> bool:
        return self.engine_state.reason[0] != RUNNING

    def returns(self) -> list[float]:
        st = self.engine_state
        winner = int(st.winner[0])
        if st.reason[0] == RUNNING or winner not in (0, 1):
            return [0.0, 0.0]
        return [1.0, -1.0] if winner == 0 else [-1.0, 1.0]

    def __str__(self) -> str:
        st = self.engine_state
        n = self.get_game().engine.n
        outcome = self.outcome()
        if outcome is None:
            chain = f", chain on {square_name(int(st.chain[0]), n)}" if st.chain[0] >= 0 else ""
            status = f"{SIDES[int(st.to_move[0])]} to move, turn {int(st.turn[0])}{chain}"
        else:
            status = f"over after {int(st.turn[0])} turns: {outcome.result} ({outcome.reason})"
        return f"{board_diagram(st.board[0], n)}\n{status}"

    # --- beyond OpenSpiel's API ---------------------------------------------------------------

    def outcome(self) -> Outcome | None:
        """How the game ended (:class:`tafl_env.Outcome`: result and reason), or ``None``."""
        return Outcome.from_codes(int(self.engine_state.winner[0]), int(self.engine_state.reason[0]))

    def game_copy(self) -> Game:
        """A :class:`tafl_env.Game` of the current position (playing it leaves this state alone)."""
        return Game.from_state(self.get_game().rules, self.engine_state)


class TaflObserver:
    """The observation planes (``tafl_env.observation``) of a state, seen by the player asked:
    OpenSpiel's Python observer interface (``tensor``, ``dict``, ``set_from``, ``string_from``)."""

    def __init__(self, game: TaflGame, params=None):
        if params:
            raise ValueError(f"the tafl observer takes no parameters, got {params!r}")
        self._observer = observer_for(game.engine)
        self.tensor = np.zeros(int(np.prod(observation_shape(game.engine))), dtype=np.float32)
        self.dict = {"observation": self.tensor.reshape(observation_shape(game.engine))}

    def set_from(self, state: TaflState, player: int) -> None:
        self.dict["observation"][...] = self._observer.observe(state.engine_state, None, int(player))[0]

    def string_from(self, state: TaflState, player: int) -> str:
        return str(state)


def load_game(variant: str, **params) -> TaflGame:
    """``pyspiel.load_game(game_name(variant), params)``: the game of ``variant`` with some parameters."""
    return pyspiel.load_game(game_name(variant), params)


GAME_CLASSES: dict[str, type[TaflGame]] = {
    variant: type(f"TaflGame_{variant}", (TaflGame,), {"variant": variant, "__module__": __name__})
    for variant in VARIANTS + EXTRA_VARIANTS}
"""The game class of each variant: the factory OpenSpiel's registry holds (a class, not a closure:
the registry outlives the interpreter, and a class is never freed under it at exit)."""

REGISTERED: tuple[str, ...] = tuple(game_name(v) for v in GAME_CLASSES)
"""The names of the games this module registers: the five variants, then the extra ones."""

for _variant, _cls in GAME_CLASSES.items():
    if game_name(_variant) not in pyspiel.registered_names():
        pyspiel.register_game(_game_type(_variant), _cls)
