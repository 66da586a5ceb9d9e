"""The rules a trained model records, shared by every stack's model files, and the check of a game
against them.

Each stack saves, beside its weights, the record :func:`model_info` makes of the rules it trained
under, ``{"variant": id, "rules": {field: value}}`` in plain JSON: a MaskablePPO zip
(:mod:`agents.ppo`) as its ``tafl_rules`` attribute (:data:`MODEL_INFO`, in the zip's ``data``
entry), an AZ model (:mod:`agents.az.checkpoint`) in its ``.json`` record, an RLlib checkpoint
(:mod:`agents.rllib`) in its :data:`TAFL_CHECKPOINT` file. Before a game, every agent of a trained
model compares the game's rules with the record (:func:`rules_mismatch`) and refuses another
variant or other rule options, the move cap aside.

:func:`looks_like_rllib_checkpoint` tells an RLlib run's checkpoint directory by that file, without
loading anything (the ``policy:`` agent and the PPO trainer's opponent checks send it to
``rllib:``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from tafl_env.rules import RuleSet

__all__ = ["MODEL_INFO", "TAFL_CHECKPOINT", "model_info", "rules_mismatch", "looks_like_rllib_checkpoint"]

MODEL_INFO = "tafl_rules"
"""The key of the rules record: a model zip's attribute (and key of its ``data`` JSON), a key of an
RLlib checkpoint's :data:`TAFL_CHECKPOINT`."""

TAFL_CHECKPOINT = "tafl_checkpoint.json"
"""The plain-JSON record beside every checkpoint of an RLlib run (rules, network options, step)."""

_NOT_RULES = ("name", "title", "summary")          # a RuleSet's labels, not rules
_CAP_ONLY = ("max_turns",)                          # the move cap: a model plays under any cap


def model_info(rules: RuleSet) -> dict[str, Any]:
    """The ``tafl_rules`` record of ``rules``: the variant id and every rule field (plain JSON).

    >>> from tafl_env.rules import make_rules
    >>> info = model_info(make_rules("legacy_ard_ri", repetition="draw"))
    >>> info["variant"], info["rules"]["board_size"], info["rules"]["repetition"]
    ('legacy_ard_ri', 7, 'draw')
    """
    fields = {f.name: getattr(rules, f.name) for f in dataclasses.fields(rules) if f.name not in _NOT_RULES}
    return {"variant": rules.name, "rules": fields}


def rules_mismatch(info: dict[str, Any], rules: RuleSet) -> str | None:
    """How ``rules`` differ from the recorded ``info``, in a few words; ``None`` when they agree.

    >>> from tafl_env.rules import make_rules
    >>> info = model_info(make_rules("historical_tablut"))
    >>> rules_mismatch(info, make_rules("historical_tablut", max_turns=50)) is None   # the cap is free
    True
    >>> rules_mismatch(info, make_rules("historical_tablut", repetition="draw"))
    "historical_tablut with repetition='starter_loses'; this game has repetition='draw'"
    >>> rules_mismatch(info, make_rules("legacy_tablut"))
    'historical_tablut; this game is legacy_tablut (rules differ in king_armed, king_capture, edge_hostile_to_king, escape, hostile_corners, restricted_corners)'
    """
    stored = info.get("rules") or {}
    differ = [(key, stored[key], value) for key, value in model_info(rules)["rules"].items()
              if key not in _CAP_ONLY and key in stored and stored[key] != value]
    if info.get("variant") != rules.name:
        detail = f" (rules differ in {', '.join(k for k, _, _ in differ)})" if differ else ""
        return f"{info.get('variant')}; this game is {rules.name}{detail}"
    if differ:
        return (f"{rules.name} with {', '.join(f'{k}={old!r}' for k, old, _ in differ)}; this game has "
                f"{', '.join(f'{k}={new!r}' for k, _, new in differ)}")
    return None


def looks_like_rllib_checkpoint(path: str | Path) -> bool:
    """Whether ``path`` is a directory holding an RLlib checkpoint of a run (without loading it)."""
    p = Path(path).expanduser()
    return p.is_dir() and ((p / TAFL_CHECKPOINT).is_file() or (p / "rllib_checkpoint.json").is_file()
                           or (p / "final" / TAFL_CHECKPOINT).is_file())
