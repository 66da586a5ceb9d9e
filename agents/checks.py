"""Checks of a Python call's own arguments: the error names the argument and what it must be.

A wrong type is a ``TypeError`` and a value out of range a ``ValueError``, as Python's own
functions answer; ``bool`` is never taken for a number (``True`` is not 1 game), nor a float for
an int (``2.5`` games are not 2), nor a string for either.

    >>> check_int("games", 4, low=1)
    4
    >>> check_int("games", 2.5, low=1)
    Traceback (most recent call last):
    ...
    TypeError: games must be an int, got 2.5 (float)
    >>> check_number("beta", float("nan"), low=0, high=0.5, low_open=True, high_open=True)
    Traceback (most recent call last):
    ...
    ValueError: beta must be a finite number > 0 and < 0.5, got nan
"""

from __future__ import annotations

import math
import numbers

__all__ = ["check_int", "check_number", "is_int", "is_number"]


def is_int(value: object) -> bool:
    """An int (Python's or numpy's), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and type(value).__name__ != "bool_"


def is_number(value: object) -> bool:
    """A real number (int or float, Python's or numpy's), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and type(value).__name__ != "bool_"


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def check_int(name: str, value: object, *, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an int from ``low`` to ``high`` (either may be open-ended)."""
    if not is_int(value):
        raise TypeError(f"{name} must be an int, got {_short(value)} ({type(value).__name__})")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        span = " and ".join(x for x in (f">= {low}" if low is not None else "",
                                        f"<= {high}" if high is not None else "") if x)
        raise ValueError(f"{name} must be an int {span}, got {value}")
    return value


def check_number(name: str, value: object, *, low: float | None = None, high: float | None = None,
                 low_open: bool = False, high_open: bool = False) -> float:
    """``value`` as a finite float from ``low`` to ``high`` (excluded with ``low_open`` /
    ``high_open``)."""
    if not is_number(value):
        raise TypeError(f"{name} must be a number, got {_short(value)} ({type(value).__name__})")
    x = float(value)
    ok = math.isfinite(x)
    if ok and low is not None:
        ok = x > low if low_open else x >= low
    if ok and high is not None:
        ok = x < high if high_open else x <= high
    if not ok:
        parts = [f"{'>' if low_open else '>='} {low:g}" if low is not None else "",
                 f"{'<' if high_open else '<='} {high:g}" if high is not None else ""]
        span = " and ".join(p for p in parts if p)
        raise ValueError(f"{name} must be a finite number{' ' + span if span else ''}, got {_short(value)}")
    return x
