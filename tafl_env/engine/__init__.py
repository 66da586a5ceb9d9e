"""The vectorised numpy rules core: batched state, move masks, move application, game end."""

from .core import Engine, StepInfo
from .state import (ATTACKER_WINS, DEFENDER_WINS, DRAW, NO_WINNER, REASON_NAMES, RESULT_NAMES,
                    State)

__all__ = ["Engine", "State", "StepInfo", "REASON_NAMES", "RESULT_NAMES", "ATTACKER_WINS",
           "DEFENDER_WINS", "DRAW", "NO_WINNER"]
