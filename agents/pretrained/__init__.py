"""Trained policies shipped with the package: ``policy:<variant>`` plays the one of that variant.

Each ``<variant>.zip`` here is an ordinary ``MaskablePPO`` zip (``agents.ppo.network.TaflBoardPolicy``,
named by its old module ``agents.networks``) that records its variant and rules (``tafl_rules``,
:mod:`agents.model_rules`; loaded by :mod:`agents.ppo.policy`), so it is refused in
any other game. Its card — config, exact command, seed, training time and steps, evaluation
against random, greedy and MCTS per side with Wilson intervals, learning curve — is in the
repository's ``results/training/<variant>/`` (made by ``tools/card.py``); the same
command retrains it.

>>> sorted(shipped_policies()) == sorted(VARIANTS)     # one for every variant
True
"""

from __future__ import annotations

from pathlib import Path

from tafl_env.rules import VARIANTS

HERE = Path(__file__).resolve().parent


def shipped_policies() -> dict[str, Path]:
    """The shipped models by variant id (only variants that have one)."""
    return {v: HERE / f"{v}.zip" for v in VARIANTS if (HERE / f"{v}.zip").is_file()}


def shipped_policy(variant: str) -> Path | None:
    """The shipped model of ``variant``, or None if the package has none for it."""
    path = HERE / f"{variant}.zip"
    return path if variant in VARIANTS and path.is_file() else None
