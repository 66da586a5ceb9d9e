"""The rules engine: batched game state and compiled kernels (numba) that generate moves, apply
them, and judge captures and the game's end. See :mod:`tafl_env.engine.core`."""

from .core import Engine, StepInfo
from .state import (ATTACKER_WINS, DEFENDER_WINS, DRAW, NO_WINNER, REASON_NAMES, RESULT_NAMES,
                    State)

__all__ = ["Engine", "State", "StepInfo", "REASON_NAMES", "RESULT_NAMES", "ATTACKER_WINS",
           "DEFENDER_WINS", "DRAW", "NO_WINNER"]
