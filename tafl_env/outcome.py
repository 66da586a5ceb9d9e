"""How a game ended, as types (the way python-chess has ``Termination`` and ``Outcome``).

:class:`Termination` names the engine's reason codes (``State.reason``, and the ``reason`` codes of
the vector envs' ``final_info``: ``Termination(code)`` converts one); :class:`Outcome` pairs it with
the winning side::

    >>> from tafl_env import Game, Outcome, Termination
    >>> g = Game("historical_tablut", "/t8/9/9/9/9/9/9/4K4/9/", "defender")
    >>> g.outcome() is None
    True
    >>> g.push("e8-e9").notation
    'e8-e9'
    >>> g.outcome()
    Outcome(termination=<Termination.ESCAPED: 2>, winner='defender')
    >>> g.outcome() == Outcome(Termination.ESCAPED, "defender"), g.outcome().reason
    (True, 'escaped')
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from .engine import state as _codes
from .errors import IllegalMoveError

__all__ = ["Termination", "Outcome", "illegal_action", "ILLEGAL_ACTION_RULES"]


class Termination(IntEnum):
    """Why a game ended; the values are the engine's reason codes (0, running, is not one), and
    :attr:`ILLEGAL_ACTION`, which is no engine code: the ruling of a front end that plays an
    illegal action as a loss (:func:`illegal_action`)."""

    KING_CAPTURED = _codes.KING_CAPTURED
    ESCAPED = _codes.ESCAPED
    ENCIRCLED = _codes.ENCIRCLED
    NO_MOVES = _codes.NO_MOVES
    REPETITION = _codes.REPETITION
    TRUNCATED = _codes.TRUNCATED
    ILLEGAL_ACTION = max(_codes.REASON_NAMES) + 1

    @property
    def reason(self) -> str:
        """The reason as the string keys and infos use (``'king_captured'``, …, ``'truncated'``,
        ``'illegal_action'``)."""
        return _codes.REASON_NAMES.get(int(self)) or self.name.lower()


_WINNERS = ("attacker", "defender", None)


@dataclass(frozen=True, eq=False)
class Outcome:
    """The end of a game: ``termination`` and ``winner`` (``'attacker'``, ``'defender'``, or
    ``None`` for a draw and for a truncated game).

    ``result`` and ``reason`` are the strings of ``Game.result`` / ``Game.reason``. For code written
    against the earlier ``(result, reason)`` pair, an ``Outcome`` also unpacks as that pair and
    compares equal to it: ``outcome == ("attacker", "king_captured")``.
    """

    termination: Termination
    winner: str | None

    def __post_init__(self) -> None:
        object.__setattr__(self, "termination", Termination(self.termination))
        if self.winner not in _WINNERS:
            raise ValueError(f"winner must be 'attacker', 'defender' or None, got {self.winner!r}")

    @classmethod
    def from_codes(cls, winner: int, reason: int) -> "Outcome | None":
        """The outcome of engine codes (``State.winner``, ``State.reason``); ``None`` while running."""
        if int(reason) == _codes.RUNNING:
            return None
        name = _codes.RESULT_NAMES[int(winner)]
        return cls(Termination(int(reason)), None if name == "draw" else name)

    @property
    def result(self) -> str:
        """``'attacker'``, ``'defender'`` or ``'draw'`` (a truncated game counts as a draw)."""
        return self.winner or "draw"

    @property
    def reason(self) -> str:
        return self.termination.reason

    def __iter__(self):
        return iter((self.result, self.reason))

    def __eq__(self, other) -> bool:
        if isinstance(other, Outcome):
            return (self.termination, self.winner) == (other.termination, other.winner)
        if isinstance(other, tuple):
            return (self.result, self.reason) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.result, self.reason))   # equal to the hash of the pair it equals


ILLEGAL_ACTION_RULES = ("raise", "lose")
"""What a front end does with an illegal action (RULES §7): ``"raise"`` (``raw_env`` and the vector
envs, as the engine and ``Game`` do: :class:`~tafl_env.errors.IllegalMoveError`, nothing changed) or
``"lose"`` (``env()``, the single-agent env, RLlib's env: the game ends as a loss for its player)."""


def illegal_action(rule: str, side: str, why: str) -> Outcome:
    """The one decision on an illegal action of ``side`` (``'attacker'``/``'defender'``), which
    every front end makes here. Under ``rule="raise"`` it raises ``IllegalMoveError(why)``;
    under ``"lose"`` it returns the end of the game: the other side wins, by
    :attr:`Termination.ILLEGAL_ACTION`.

        >>> illegal_action("lose", "attacker", "action 0 is not legal")
        Outcome(termination=<Termination.ILLEGAL_ACTION: 7>, winner='defender')
        >>> illegal_action("lose", "attacker", "").reason
        'illegal_action'
        >>> illegal_action("raise", "attacker", "action 0 is not legal")
        Traceback (most recent call last):
        ...
        tafl_env.errors.IllegalMoveError: action 0 is not legal
    """
    if rule not in ILLEGAL_ACTION_RULES:
        raise ValueError(f"the illegal-action rule must be one of {ILLEGAL_ACTION_RULES}, got {rule!r}")
    if side not in _WINNERS[:2]:
        raise ValueError(f"side must be 'attacker' or 'defender', got {side!r}")
    if rule == "raise":
        raise IllegalMoveError(why)
    return Outcome(Termination.ILLEGAL_ACTION, _WINNERS[1 - _WINNERS.index(side)])
