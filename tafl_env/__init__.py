"""tafl-env: reinforcement-learning environments for Tafl, the Norse king's table games."""

from .errors import (IllegalMoveError, InvalidMoveError, InvalidOptionError, InvalidPositionError,
                     TaflError, UnknownVariantError)
from .game import Game, Move, Outcome
from .rules import EXTRA_VARIANTS, VARIANTS, RuleSet, make_rules

__version__ = "0.1.0"

__all__ = ["VARIANTS", "EXTRA_VARIANTS", "RuleSet", "make_rules", "Game", "Move", "Outcome",
           "TaflError", "UnknownVariantError", "InvalidOptionError", "InvalidPositionError",
           "InvalidMoveError", "IllegalMoveError"]
