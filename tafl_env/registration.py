"""Registry ids of every variant, for Gymnasium and for PettingZoo.

Each variant ``v`` of ``tafl_env.VARIANTS`` is registered as ``tafl/<Name>-v0``, where ``Name`` is
its ``RuleSet.title`` without spaces (``tafl/HistorischesTablut-v0``):

- Gymnasium, ``entry_point``: :class:`tafl_env.single.TaflSingleEnv` (``gymnasium.make``), and
  ``vector_entry_point``: :class:`tafl_env.vector.TaflVectorEnv`
  (``gymnasium.make_vec(id, num_envs=B, vectorization_mode="vector_entry_point")``);
- PettingZoo, ``pettingzoo.make("aec", id)``: the wrapped AEC env :func:`tafl_env.aec.env`.

Keyword arguments of ``make``/``make_vec`` reach the env: ``opponent``, ``learner_side``,
``self_play`` (vector only) and every rule option.

``import tafl_env`` itself imports neither library (the ``tafl`` rule commands stay numpy-only and
start fast). Instead it registers the ids the moment Gymnasium or PettingZoo is imported, before or
after ``tafl_env`` — so ``import tafl_env, gymnasium; gymnasium.make("tafl/LegacyArdRi-v0")`` works
in either order. :func:`register_envs` does it explicitly and is idempotent.

    >>> import gymnasium
    >>> "tafl/LegacyArdRi-v0" in gymnasium.registry
    True
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

from .rules import VARIANTS, make_rules

ENTRY_POINT = "tafl_env.single:TaflSingleEnv"
VECTOR_ENTRY_POINT = "tafl_env.vector:TaflVectorEnv"
AEC_ENTRY_POINT = "tafl_env.aec:env"


def env_id(variant: str) -> str:
    """The registry id of a variant: ``tafl/<RuleSet.title without spaces>-v0``."""
    return f"tafl/{make_rules(variant).title.replace(' ', '')}-v0"


ENV_IDS: dict[str, str] = {v: env_id(v) for v in VARIANTS}
"""variant id -> registry id (the same for Gymnasium and PettingZoo)."""


def register_gymnasium() -> None:
    """Register the single-agent and vector forms of every variant with Gymnasium (idempotent)."""
    import gymnasium

    for variant, name in ENV_IDS.items():
        if name not in gymnasium.registry:
            gymnasium.register(id=name, entry_point=ENTRY_POINT,
                               vector_entry_point=VECTOR_ENTRY_POINT, kwargs={"variant": variant})


def register_pettingzoo() -> None:
    """Register the AEC env of every variant for ``pettingzoo.make("aec", id)`` (idempotent)."""
    from pettingzoo import aec_registry, register

    for variant, name in ENV_IDS.items():
        if name not in aec_registry:
            register("aec", name, entry_point=AEC_ENTRY_POINT, kwargs={"variant": variant})


def register_envs() -> None:
    """Register with both libraries (imports them)."""
    register_gymnasium()
    register_pettingzoo()


_HOOKS = {"gymnasium": register_gymnasium, "pettingzoo": register_pettingzoo}


class _RegisterAfterImport(importlib.abc.MetaPathFinder):
    """Runs a library's registration right after that library's top-level module is imported."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in _HOOKS:
            return None
        sys.meta_path.remove(self)  # find the real spec without finding ourselves again
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module, _original=original, _name=fullname):
            _original(module)
            _HOOKS[_name]()

        loader.exec_module = exec_module
        return spec


def install_import_hooks() -> None:
    """Register now with whichever library is already imported; hook the others' import."""
    for name, register in _HOOKS.items():
        if name in sys.modules:
            register()
    if not any(isinstance(f, _RegisterAfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _RegisterAfterImport())
