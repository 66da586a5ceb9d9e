"""One game, for scripts, search agents and people: a batch of one over the same engine.

    >>> from tafl_env import Game
    >>> g = Game("historical_tablut")
    >>> g.to_move, len(g.legal_moves())
    ('attacker', 80)
    >>> g.push("e2-c2").notation
    'e2-c2'
    >>> g.position
    '/3ttt3/2t6/4T4/t3T3t/ttTTKTTtt/t3T3t/4T4/4t4/3ttt3/'
    >>> g.result, g.reason, g.turns
    (None, None, 1)
    >>> Game("historical_tablut").push("e2-e3")
    Traceback (most recent call last):
    ...
    tafl_env.errors.IllegalMoveError: illegal move 'e2-e3' in historical_tablut: e2-e3: the path is blocked, the target is restricted, or the move is too long

Moves are read as RULES.md §1/§6.7 say (``-`` for any move type, optional piece letters, a capture
suffix compared as a set, ``pass``, and an opponent's move during a berserk chain implying the pass);
they are written in the full form (``^`` for jumps, ``=`` inside a chain, captures listed).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .engine import Engine, State
from .engine.state import REASON_NAMES, RESULT_NAMES, RUNNING
from .engine.tables import SIDE_OF
from .errors import IllegalMoveError, InvalidMoveError, preview
from .notation import (PASS, ParsedMove, board_diagram, format_move, format_position, parse_move,
                       square_name)
from .outcome import Outcome
from .rules import SIDES, RuleSet, make_rules, side_index


@lru_cache(maxsize=64)
def engine_for(rules: RuleSet) -> Engine:
    """The shared :class:`Engine` of a ``RuleSet`` (tables are built once per rule set)."""
    return Engine(rules)


@dataclass(frozen=True)
class Move:
    """A move as played: its action id, squares, kind and captures; ``str(move)`` is its notation."""

    action: int
    notation: str
    origin: int | None = None
    target: int | None = None
    jump: bool = False
    continuation: bool = False
    captures: tuple[int, ...] = ()

    @property
    def is_pass(self) -> bool:
        return self.origin is None

    def __str__(self) -> str:
        return self.notation


class Game:
    """A single Tafl game with legal moves, notation, results and copies.

    Args:
        variant: a variant id (``tafl_env.VARIANTS``) or a :class:`~tafl_env.rules.RuleSet`.
        position: a position string to start from (a fresh ``Q0``); default the variant's start.
        to_move: ``"attacker"`` or ``"defender"``; default the variant's first mover.
        **options: rule options (see :mod:`tafl_env.rules`).
    """

    def __init__(self, variant: str | RuleSet = "historical_tablut", position: str | None = None,
                 to_move: str | None = None, **options):
        self.rules = make_rules(variant, **options)
        self.engine = engine_for(self.rules)
        if to_move is not None:
            side_index(to_move)  # a side name, 0 or 1 (not 1.0, not True): an error naming it
        self.state: State = self.engine.initial_state(1, position, to_move)
        self.moves: list[Move] = []
        self._base: State | None = None
        self._base_len = 0

    @classmethod
    def from_state(cls, rules: RuleSet, state: State, moves: list[Move] | None = None) -> "Game":
        """Wrap a batch-of-one state (copied) in a ``Game``."""
        if len(state) != 1:
            raise ValueError(f"a Game holds one game; got a batch of {len(state)}")
        game = cls.__new__(cls)
        game.rules = rules
        game.engine = engine_for(rules)
        game.state = state.copy()
        game.moves = list(moves or [])
        game._base, game._base_len = None, 0
        return game

    # --- reading the state -------------------------------------------------------------------

    @property
    def variant(self) -> str:
        return self.rules.name

    @property
    def n(self) -> int:
        return self.rules.board_size

    @property
    def position(self) -> str:
        """The position string (RULES.md §1)."""
        return format_position(self.state.board[0], self.n)

    @property
    def to_move(self) -> str:
        """The side to move (after the end: the side the last turn handed the move to)."""
        return SIDES[int(self.state.to_move[0])]

    @property
    def chain(self) -> str | None:
        """The square of the piece that must continue a berserk chain, or ``None``."""
        c = int(self.state.chain[0])
        return square_name(c, self.n) if c >= 0 else None

    @property
    def turns(self) -> int:
        """Completed turns (a whole berserk chain is one turn)."""
        return int(self.state.turn[0])

    @property
    def result(self) -> str | None:
        return RESULT_NAMES[int(self.state.winner[0])]

    @property
    def reason(self) -> str | None:
        return REASON_NAMES[int(self.state.reason[0])]

    def is_over(self) -> bool:
        return int(self.state.reason[0]) != RUNNING

    def outcome(self) -> Outcome | None:
        """:class:`~tafl_env.outcome.Outcome` ``(termination, winner)`` once the game is over, else
        ``None`` (it also compares equal to the pair ``(result, reason)``)."""
        return Outcome.from_codes(int(self.state.winner[0]), int(self.state.reason[0]))

    def action_mask(self) -> np.ndarray:
        """int8 0/1 over all actions (DESIGN.md encoding)."""
        return self.engine.legal_action_mask(self.state)[0]

    def legal_actions(self) -> np.ndarray:
        return np.flatnonzero(self.action_mask())

    def legal_moves(self) -> list[Move]:
        """Every legal move, with its captures, in action order (one batched engine step)."""
        actions = self.legal_actions()
        if not len(actions):
            return []
        children = self.state.take(np.zeros(len(actions), dtype=np.intp))
        info = self.engine.step(children, actions)
        return [self._describe(int(a), info, i) for i, a in enumerate(actions)]

    def describe(self, action: int) -> Move:
        """The :class:`Move` that ``action`` would be now (checked for legality, not applied)."""
        if isinstance(action, Move):
            action = action.action
        if isinstance(action, str):
            raise InvalidMoveError(f"describe() takes an action id, not the move string {preview(action)}: "
                                   "push() plays a move string, legal_moves() lists the moves")
        if not isinstance(action, (int, np.integer)) or isinstance(action, bool):
            raise InvalidMoveError(f"cannot describe {preview(action)}: expected an action id (an int)")
        child = self.state.copy()
        info = self._step(child, int(action))
        return self._describe(int(action), info, 0)

    def _describe(self, action: int, info, row: int) -> Move:
        eng = self.engine
        if action == eng.pass_action:
            return Move(action, PASS)
        origin, _, _, target = (int(v[0]) for v in eng.decode(np.array([action])))
        caps = tuple(int(c) for c in info.captured[row] if c < eng.s)
        jump, cont = bool(info.jump[row]), bool(info.continuation[row])
        return Move(action, format_move(origin, target, self.n, jump=jump, continuation=cont, captures=caps),
                    origin, target, jump, cont, caps)

    # --- playing -----------------------------------------------------------------------------

    def _step(self, state: State, action: int):
        if state.reason[0] != RUNNING:  # the batched engine skips finished games silently
            raise IllegalMoveError(f"illegal action {action} in {self.variant}: the game is over "
                                   f"({REASON_NAMES[int(state.reason[0])]})")
        try:
            return self.engine.step(state, np.array([action]))
        except IllegalMoveError:
            raise IllegalMoveError(
                f"illegal action {action} in {self.variant}: "
                f"{self.engine.explain_illegal(state, 0, action)}"
            ) from None

    def push(self, move: Move | int | str) -> Move:
        """Play an action id, a move string or a :class:`Move`; returns the move as played.

        A move string may imply a pass (an opponent's move during a berserk chain); then two moves
        are recorded and the last is returned. On any error the game is unchanged.
        """
        if isinstance(move, Move):
            move = move.action
        if isinstance(move, str):
            return self.push_notation(move)
        if isinstance(move, (int, np.integer)) and not isinstance(move, bool):
            self._keep_base()
            info = self._step(self.state, int(move))  # in place: the engine checks before changing
            played = self._describe(int(move), info, 0)
            self.moves.append(played)
            return played
        raise InvalidMoveError(f"cannot play {preview(move)}: expected an action id, a move string or a Move")

    def push_notation(self, text: str) -> Move:
        """Play one move in notation (RULES §1, §6.7)."""
        eng = self.engine
        try:
            parsed = parse_move(text, self.n)
        except InvalidMoveError as exc:
            raise InvalidMoveError(f"{exc} (in {self.variant}, {self.n}x{self.n})") from None
        state = self.state
        played: list[Move] = []

        def fail(why: str) -> IllegalMoveError:
            if played:          # a move (or the implied pass) was applied: rebuild the state before it
                self.state = self._replay(len(self.moves))
            return IllegalMoveError(f"illegal move {preview(text)} in {self.variant}: {why}")

        if state.reason[0] != RUNNING:
            raise fail(f"the game is over ({self.result} won by {self.reason})"
                       if self.result != "draw" else f"the game is over ({self.reason})")
        if parsed == PASS:
            if state.chain[0] < 0:
                raise fail("pass is legal only to end a berserk chain")
            action = eng.pass_action
        else:
            assert isinstance(parsed, ParsedMove)
            try:
                action = eng.encode(parsed.origin, parsed.target)
            except IllegalMoveError as exc:
                raise fail(str(exc)) from None
            chain = int(state.chain[0])
            piece_side = SIDE_OF[state.board[0, parsed.origin]]
            if chain >= 0 and piece_side == 1 - state.to_move[0]:
                # An opponent's move during a pending chain implies the pass (RULES §6.7).
                self._keep_base()
                eng.step(state, np.array([eng.pass_action]))
                played.append(Move(eng.pass_action, PASS))
                if state.reason[0] != RUNNING:
                    raise fail(f"the implied pass ended the game ({REASON_NAMES[int(state.reason[0])]})")
        if not eng.check_legal(state, np.array([action]))[0]:
            raise fail(eng.explain_illegal(state, 0, action))
        self._keep_base()
        info = eng.step(state, np.array([action]))
        move = self._describe(action, info, 0)
        played.append(move)
        if parsed != PASS:
            if parsed.jump and not move.jump:
                raise fail("it is written as a jump ('^') but is a slide")
            if parsed.continuation and not move.continuation:
                raise fail("it is written as a berserk continuation ('=') but no chain is pending")
            if parsed.captures is not None and parsed.captures != frozenset(move.captures):
                names = lambda sqs: "/".join(sorted(square_name(s, self.n) for s in sqs)) or "nothing"
                raise fail(f"it captures {names(move.captures)}, not {names(parsed.captures)}")
        self.moves.extend(played)
        return move

    def pop(self) -> Move:
        """Take back the last move (a pass included) and return it.

        Only moves played on this ``Game`` object can be taken back (not those it was created with
        by :meth:`from_state` or :meth:`copy`); the position is rebuilt by replaying the others.
        """
        if self._base is None or len(self.moves) <= self._base_len:
            raise IllegalMoveError("no move to take back" + (
                f": the {len(self.moves)} earlier moves came with the position" if self.moves else ""))
        self.state = self._replay(len(self.moves) - 1)
        return self.moves.pop()

    # Pushing steps ``self.state`` in place, so that a move costs no copy of the game (whose turn
    # history grows with its length). What a failed push or a pop must undo is rebuilt from
    # ``_base``, the state before ``moves[_base_len:]``, copied once before the first change.

    def _keep_base(self) -> None:
        if self._base is None:
            self._base, self._base_len = self.state.copy(), len(self.moves)

    def _replay(self, upto: int) -> State:
        """A new state: ``_base`` with ``moves[_base_len:upto]`` played again."""
        state = self._base.copy()
        for m in self.moves[self._base_len:upto]:
            self.engine.step(state, np.array([m.action]))
        return state

    def copy(self) -> "Game":
        return Game.from_state(self.rules, self.state, self.moves)

    __copy__ = copy

    def __deepcopy__(self, memo) -> "Game":
        return self.copy()

    # --- printing ----------------------------------------------------------------------------

    def __repr__(self) -> str:
        chain = f", chain={self.chain!r}" if self.chain else ""
        return f"Game({self.variant!r}, {self.position!r}, to_move={self.to_move!r}{chain})"

    def __str__(self) -> str:
        return board_diagram(self.state.board[0], self.n)

    def summary(self) -> dict:
        """The replay summary of DESIGN.md: position, to_move, result, reason, turns, chain."""
        return {"position": self.position, "to_move": self.to_move, "result": self.result,
                "reason": self.reason, "turns": self.turns, "chain": self.chain}
