"""Exceptions of tafl-env.

Every error is a :class:`ValueError` subclass whose message names the offending input, so that
``except ValueError`` catches all of them and the message alone tells a user what to fix.
Nothing is ever half-applied: an operation that raises leaves the game or batch exactly as it was.
"""

from __future__ import annotations


class TaflError(ValueError):
    """Base class of every error raised by tafl-env."""


class UnknownVariantError(TaflError):
    """A variant id that does not exist."""


class InvalidOptionError(TaflError):
    """A rule option with an unknown name or an out-of-range value."""


class InvalidPositionError(TaflError):
    """A malformed or impossible position string."""


class InvalidMoveError(TaflError):
    """A move string that cannot be parsed (malformed notation)."""


class IllegalMoveError(TaflError):
    """A well-formed move or action that is not legal in the current state."""
