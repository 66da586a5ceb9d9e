"""Config machinery shared by tournaments (:mod:`agents.evaluation.tournament`) and training: a schema of
typed, documented, range-checked fields, YAML reading, and the :class:`ConfigError` that names the
offending field.

    >>> schema = {"games": FieldSpec((int,), True, None, "games to play",
    ...                              lambda v: None if v > 0 else f"must be > 0, got {v}")}
    >>> check_schema({"games": 4}, schema, "demo config")
    {'games': 4}
    >>> try:
    ...     check_schema({"games": 0}, schema, "demo config")
    ... except ConfigError as exc:
    ...     print(exc.field, "|", exc)
    games | demo config: field 'games': must be > 0, got 0
"""

from __future__ import annotations

import copy
import math
import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from tafl_env.extras import require

from .errors import AgentsError

__all__ = ["ConfigError", "FieldSpec", "check_schema", "read_yaml_config", "apply_overrides",
           "check_seed", "check_rule_options", "check_positive", "check_non_negative", "check_unit",
           "check_between", "int_problem", "NETWORK_BOUNDS", "MAX_WEIGHTS_BYTES"]

NETWORK_BOUNDS: dict[str, tuple[int, int]] = {
    "board_size": (3, 19), "planes": (1, 64), "channels": (1, 1024), "blocks": (0, 64),
    "value_hidden": (1, 4096),
}
"""The sizes a board network (the PPO policy's or the AZ network) may have, bounds included: far
beyond the models trained here (24 to 48 channels, 2 or 3 blocks), yet small enough that a
config or a model record naming a larger network is refused before it is built (a record is a
few hundred bytes; the network it names could take gigabytes)."""

MAX_WEIGHTS_BYTES = 1 << 30
"""The largest weights file (or zip member holding one) a model loader reads: the shipped models
hold well under 1 MB, and a crafted file (a zip member that inflates to gigabytes) is refused
by its declared size before anything is read. A network near the top of every bound of
:data:`NETWORK_BOUNDS` would not fit; the AZ config refuses one (its ``channels``)."""


class ConfigError(AgentsError):
    """A bad config; ``field`` names the offending field."""

    def __init__(self, field: str, message: str, source: str = "tournament config"):
        self.field = field
        where = "" if field.startswith("<") else f"field {field!r}: "   # <file>, <root>: the whole file
        super().__init__(f"{source}: {where}{message}")


@dataclass(frozen=True)
class FieldSpec:
    """One config field: accepted types, whether required, default, meaning and a range check
    (``check(value)`` returns a problem as text, or ``None`` when the value is fine)."""

    types: tuple[type, ...]
    required: bool
    default: Any
    doc: str
    check: Callable[[Any], str | None] | None = None


def check_positive(value) -> str | None:
    """A range check: ``value > 0``."""
    return None if value > 0 else f"must be > 0, got {value}"


def check_non_negative(value) -> str | None:
    """A range check: ``value >= 0``."""
    return None if value >= 0 else f"must be >= 0, got {value}"


def check_unit(value) -> str | None:
    """A range check: ``0 <= value <= 1``."""
    return None if 0 <= value <= 1 else f"must lie in [0, 1], got {value}"


def int_problem(value, low: int, high: int) -> str | None:
    """Why ``value`` is not an int from ``low`` to ``high``, or None. A float is refused, not
    truncated (32.9 is not 32, and 1e7 is not a size)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"must be an int from {low} to {high}, got {value!r}"
    return None if low <= value <= high else f"must be from {low} to {high}, got {value}"


def check_between(low, high):
    """A range check: ``low <= value <= high``."""
    return lambda v: None if low <= v <= high else f"must be from {low} to {high}, got {v}"


def check_seed(value: int) -> str | None:
    """A ``seed`` field's range check: an int from 0 to ``tafl_env.cli.MAX_SEED`` (32 bits, what
    numpy's legacy seeding, which Stable-Baselines3 calls, takes)."""
    from tafl_env.cli import MAX_SEED

    return None if 0 <= value <= MAX_SEED else f"must be an int from 0 to {MAX_SEED}, got {value}"


def check_rule_options(options: dict) -> str | None:
    """An ``options`` field's check: rule option names are text (``make_rules`` judges the rest),
    and the move cap is the config's own ``max_turns`` field, not an option beside it."""
    for name in options:
        if not isinstance(name, str):
            return f"rule option names are text, got {name!r}"
    if "max_turns" in options:
        return "sets max_turns, which is a field of its own: give the move cap there"
    return None


def check_schema(raw: Any, schema: dict[str, FieldSpec], source: str) -> dict[str, Any]:
    """Check each field of a parsed config against ``schema``; return it with defaults filled.

    Raises :class:`ConfigError` naming the field: an unknown key, a missing required field, a wrong
    type, a number that is not finite (YAML's ``.inf``, ``.nan``), or a value its ``check`` rejects.
    Checks across fields are the caller's.
    """
    if not isinstance(raw, dict):
        raise ConfigError("<root>", f"must be a mapping of fields, got {type(raw).__name__}", source)
    for key in raw:
        if key not in schema:
            raise ConfigError(str(key), f"unknown field (known: {', '.join(schema)})", source)
    out: dict[str, Any] = {}
    for key, spec in schema.items():
        if key not in raw:
            if spec.required:
                raise ConfigError(key, "is required", source)
            out[key] = copy.deepcopy(spec.default)
            continue
        value = raw[key]
        ok = isinstance(value, spec.types) and not (isinstance(value, bool) and bool not in spec.types)
        if not ok:
            want = " or ".join("null" if t is type(None) else t.__name__ for t in spec.types)
            raise ConfigError(key, f"must be {want}, got {type(value).__name__} {value!r}", source)
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(key, f"must be a finite number, got {value!r}", source)
        if spec.check is not None and value is not None:
            problem = spec.check(value)
            if problem:
                raise ConfigError(key, problem, source)
        out[key] = value
    return out


def apply_overrides(raw: Any, overrides: Mapping[str, Any], flags: Mapping[str, str],
                    validate: Callable[[Any, str], dict[str, Any]], source: str) -> dict[str, Any]:
    """Validate ``raw`` with command-line ``overrides`` put in first, so they meet the same checks.

    ``overrides`` maps field → value (``None``: not given); ``flags`` maps field → the option that
    set it (``"--seed"``). An error in an overridden field names the option instead of the file.

    >>> from agents.evaluation.tournament import validate_tournament_config
    >>> raw = {"variant": "legacy_ard_ri", "agents": {"a": "random", "b": "random"}, "games_per_pair": 2}
    >>> apply_overrides(raw, {"seed": 3}, {"seed": "--seed"}, validate_tournament_config, "t.yaml")["seed"]
    3
    >>> try:
    ...     apply_overrides(raw, {"seed": -1}, {"seed": "--seed"}, validate_tournament_config, "t.yaml")
    ... except ConfigError as exc:
    ...     print(exc)
    --seed (command line): field 'seed': must be an int from 0 to 4294967295, got -1
    """
    given = {key: value for key, value in overrides.items() if value is not None}
    merged = dict(raw) if isinstance(raw, dict) else raw
    if given and isinstance(merged, dict):
        merged.update(given)
    try:
        return validate(merged, source)
    except ConfigError as exc:
        if exc.field in given:
            message = str(exc).split(f"field {exc.field!r}: ", 1)[-1]
            raise ConfigError(exc.field, message, f"{flags.get(exc.field, exc.field)} (command line)") from None
        raise


def read_yaml_config(path: str | os.PathLike) -> Any:
    """The parsed YAML of a config file; an unreadable, non-UTF-8 or bad YAML file is a
    :class:`ConfigError` (a missing PyYAML is a :class:`~tafl_env.extras.MissingExtraError`)."""
    require("eval", "reading a YAML config")
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.safe_load(fh)
    except OSError as exc:
        raise ConfigError("<file>", f"cannot read {path}: {exc.strerror or exc}", str(path)) from None
    except UnicodeDecodeError as exc:
        raise ConfigError("<file>", f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
                                    f"{exc.start})", str(path)) from None
    except yaml.YAMLError as exc:
        raise ConfigError("<file>", f"not valid YAML: {' '.join(str(exc).split())}", str(path)) from None
