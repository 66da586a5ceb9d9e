"""tafl-env: reinforcement-learning environments for Tafl, the Norse king's table games."""

from .errors import (IllegalMoveError, InvalidMoveError, InvalidOptionError, InvalidPositionError,
                     TaflError, UnknownVariantError)
from .rules import EXTRA_VARIANTS, VARIANTS, RuleSet, make_rules

__version__ = "0.1.0"

__all__ = ["VARIANTS", "EXTRA_VARIANTS", "RuleSet", "make_rules", "Game", "Move", "Outcome",
           "Termination", "TaflError", "UnknownVariantError", "InvalidOptionError",
           "InvalidPositionError", "InvalidMoveError", "IllegalMoveError", "env", "raw_env", "TaflEnv",
           "TaflVectorEnv", "TaflSingleEnv", "EngineOpponent", "register_envs", "ENV_IDS"]

# The game and the environment front ends load on first use, so that `import tafl_env` stays
# numpy-only and starts fast: the engine's compiled kernels need numba, which itself loads scipy
# and yaml (and LLVM), a few hundred milliseconds before anything is asked of it.
_LAZY = {"Game": "game", "Move": "game", "Outcome": "outcome", "Termination": "outcome",
         "env": "aec", "raw_env": "aec", "TaflEnv": "aec", "TaflVectorEnv": "vector",
         "TaflSingleEnv": "single", "EngineOpponent": "vector"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value     # looked up once
        return value
    raise AttributeError(f"module 'tafl_env' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


from .registration import ENV_IDS, install_import_hooks, register_envs  # noqa: E402

install_import_hooks()  # registers the ids with Gymnasium/PettingZoo once either is imported
