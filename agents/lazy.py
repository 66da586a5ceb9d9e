"""A package's names loaded on first use (PEP 562): the package imports no submodule until one of
its names is asked for, so a light entry point (``tafl otep`` saying hello, ``import agents.spec``)
does not load the engine, numba or torch first."""

from __future__ import annotations

import importlib
import sys
from typing import Callable


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable, Callable]:
    """``(__getattr__, __dir__)`` for ``package`` whose ``exports`` map each public name to the
    relative module that defines it; a name, once loaded, is kept in the package's namespace."""

    def __getattr__(name: str):
        if name in exports:
            value = getattr(importlib.import_module(exports[name], package), name)
            setattr(sys.modules[package], name, value)
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
