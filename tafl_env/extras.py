"""Optional dependencies ("extras") and the one-line error that names the extra to install.

A plain ``pip install tafl-env`` holds the rules engine, the environments and the rule commands of
``tafl``. The rest comes with extras (``pyproject.toml``)::

    render   pygame            render_mode="human" (a window)
    eval     PyYAML, tqdm,     tafl eval: tournament configs, progress bars, rating plots, GIFs
             matplotlib        (random, greedy and MCTS agents need nothing more)
    train    eval + torch,     tafl train, and the policy:PATH agent (tafl play / tafl eval)
             SB3, sb3-contrib,
             TensorBoard
    rllib    train + ray[rllib] tafl train with backend: rllib, the rllib:DIR agent, tafl eval --ray
    openspiel open_spiel        tafl_env.openspiel (the variants as OpenSpiel games), the
                                openspiel-mcts:N agent and AgentBot

:func:`require` checks that the modules of an extra import, before any work starts, and raises
:class:`MissingExtraError` (an ``ImportError``) with one line that says what to install.

    >>> require("render", "a window", modules=("sys",))   # present: nothing happens
    >>> EXTRAS["eval"]
    ('yaml', 'tqdm', 'matplotlib')
"""

from __future__ import annotations

import importlib
from typing import Sequence

EXTRAS: dict[str, tuple[str, ...]] = {
    "render": ("pygame",),
    "eval": ("yaml", "tqdm", "matplotlib"),
    "train": ("yaml", "tqdm", "matplotlib", "torch", "stable_baselines3", "sb3_contrib", "tensorboard"),
    "rllib": ("yaml", "tqdm", "matplotlib", "torch", "stable_baselines3", "sb3_contrib", "tensorboard",
              "ray", "ray.rllib"),
    "openspiel": ("pyspiel",),
}
"""Extra → the modules it provides (import names)."""

DISTRIBUTIONS = {"yaml": "PyYAML", "pygame": "pygame-ce", "stable_baselines3": "stable-baselines3",
                 "sb3_contrib": "sb3-contrib", "ray": "ray[rllib]", "pyspiel": "open_spiel",
                 "open_spiel": "open_spiel"}
"""Import name → package name, where they differ."""


class MissingExtraError(ImportError):
    """An optional dependency is missing; the message names the extra that provides it."""


def install_hint(extra: str) -> str:
    return f"pip install 'tafl-env[{extra}]' (or, in a checkout: pip install -e '.[{extra}]')"


def require(extra: str, what: str, modules: Sequence[str] | None = None) -> None:
    """Import ``modules`` (default: all of ``extra``'s) or raise :class:`MissingExtraError`.

    ``what`` says what needs them, e.g. ``"tafl eval"`` or ``"the policy agent"``.
    """
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; one of {', '.join(EXTRAS)}")
    for name in EXTRAS[extra] if modules is None else modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            missing = getattr(exc, "name", None) or name
            package = DISTRIBUTIONS.get(missing.split(".")[0], missing.split(".")[0])
            raise MissingExtraError(
                f"{what} needs {package}, which is not installed; install the '{extra}' extra: "
                f"{install_hint(extra)}", name=missing) from None
