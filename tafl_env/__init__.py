"""tafl-env: reinforcement-learning environments for Tafl, the Norse king's table games."""

from .errors import (IllegalMoveError, InvalidMoveError, InvalidOptionError, InvalidPositionError,
                     TaflError, UnknownVariantError)
from .game import Game, Move
from .outcome import Outcome, Termination
from .rules import EXTRA_VARIANTS, VARIANTS, RuleSet, make_rules

__version__ = "0.1.0"

__all__ = ["VARIANTS", "EXTRA_VARIANTS", "RuleSet", "make_rules", "Game", "Move", "Outcome",
           "Termination", "TaflError", "UnknownVariantError", "InvalidOptionError",
           "InvalidPositionError", "InvalidMoveError", "IllegalMoveError", "env", "raw_env", "TaflEnv",
           "TaflVectorEnv", "TaflSingleEnv", "EngineOpponent", "register_envs", "ENV_IDS"]

# The environment front ends load on first use, so that `import tafl_env` (and the rule commands
# of the `tafl` CLI) stay numpy-only and start fast.
_LAZY = {"env": "aec", "raw_env": "aec", "TaflEnv": "aec", "TaflVectorEnv": "vector",
         "TaflSingleEnv": "single", "EngineOpponent": "vector"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'tafl_env' has no attribute {name!r}")


from .registration import ENV_IDS, install_import_hooks, register_envs  # noqa: E402

install_import_hooks()  # registers the ids with Gymnasium/PettingZoo once either is imported
