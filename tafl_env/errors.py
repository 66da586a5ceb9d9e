"""Exceptions of tafl-env.

Every error is a :class:`ValueError` subclass whose message names the offending input, so that
``except ValueError`` catches all of them and the message alone tells a user what to fix.
Nothing is ever half-applied: an operation that raises leaves the game or batch exactly as it was.
A message quotes a user's input through :func:`preview`, cut to a line however long the input.
"""

from __future__ import annotations

import numbers
import warnings


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


class InvalidArgumentError(TaflError):
    """An argument of an environment call (a reset seed, ``num_envs``) of the wrong type or out of range."""


# --- helpers that phrase and raise these errors ---------------------------------------------------

PREVIEW_CHARS = 60
"""The most characters of a user's input that an error message quotes."""


def preview(value: object, limit: int = PREVIEW_CHARS) -> str:
    """``repr(value)`` for an error message, cut after ``limit`` characters of it (marked ``…`` and
    the full length), so that a 100 KB line typed or piped in gives a one-line error, not a
    screenful of itself.

    >>> preview("e2-c2"), preview("x" * 100)
    ("'e2-c2'", "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'… (100 characters)")
    """
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}… ({len(value)} characters)"
    try:
        text = repr(value)
    except ValueError:    # an int past Python's limit on digits converted to text
        text = f"<{type(value).__name__} too long to print>"
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def check_seed(seed: object, where: str) -> int | None:
    """``seed`` as an int >= 0, or None; anything else (a bool, a float, a string, a negative int)
    is an :class:`InvalidArgumentError` naming it and ``where`` it was given."""
    if seed is None:
        return None
    # bool is an int to Python, but reset(seed=True) is a mistake, not seed 1
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise InvalidArgumentError(f"{where}: seed must be None or an int >= 0, got "
                                   f"{type(seed).__name__} {preview(seed)}")
    if seed < 0:
        raise InvalidArgumentError(f"{where}: seed must be None or an int >= 0, got {preview(seed)}")
    return int(seed)


def check_reset_options(options: object, keys: tuple[str, ...], where: str, *, unknown: str = "raise") -> dict:
    """The reset ``options`` (None → ``{}``) after checking that it is a dict whose keys are among
    ``keys``, the ones the reset reads: an unknown key would otherwise be ignored silently (a
    misspelt ``"positon"`` starting the variant's usual game). ``unknown="warn"`` makes an unknown
    key a ``UserWarning`` naming it instead of an error, for an API whose conformance test passes
    keys of its own (PettingZoo's ``api_test`` resets with ``options={"options": 1}``)."""
    if options is None:
        return {}
    accepted = f"the keys it reads: {', '.join(repr(k) for k in keys)}" if keys else "it reads none"
    if not isinstance(options, dict):
        raise InvalidOptionError(f"{where}: reset options must be a dict or None ({accepted}), "
                                 f"got {type(options).__name__} {preview(options)}")
    bad = [k for k in options if k not in keys]
    if bad:
        names = ", ".join(preview(k) for k in bad[:5]) + (", …" if len(bad) > 5 else "")
        if unknown != "warn":
            raise InvalidOptionError(f"{where}: unknown reset option(s) {names}; {accepted}")
        warnings.warn(f"{where}: ignoring unknown reset option(s) {names}; {accepted}", UserWarning,
                      stacklevel=3)
    return options
