"""tafl-env: reinforcement-learning environments for Tafl, the Norse king's table games."""

from .errors import (IllegalMoveError, InvalidMoveError, InvalidOptionError, InvalidPositionError,
                     TaflError, UnknownVariantError)
from .game import Game, Move, Outcome
from .rules import EXTRA_VARIANTS, VARIANTS, RuleSet, make_rules

import sys as _sys

__version__ = "0.1.0"

__all__ = ["VARIANTS", "EXTRA_VARIANTS", "RuleSet", "make_rules", "Game", "Move", "Outcome",
           "TaflError", "UnknownVariantError", "InvalidOptionError", "InvalidPositionError",
           "InvalidMoveError", "IllegalMoveError", "env", "raw_env", "TaflEnv"]


def __getattr__(name):
    # The PettingZoo front end loads on first use, so that `import tafl_env` (and the rule
    # commands of the `tafl` CLI) stay numpy-only and start fast.
    if name in ("env", "raw_env", "TaflEnv"):
        from . import aec

        return getattr(aec, name)
    raise AttributeError(f"module 'tafl_env' has no attribute {name!r}")


if "pettingzoo" in _sys.modules:  # `import pettingzoo, tafl_env`: pettingzoo.make("aec", id) works
    from . import aec as _aec  # noqa: F401
