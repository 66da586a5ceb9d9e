"""The training config of the PPO stack: :data:`TRAIN_SCHEMA` and its validation.

Every field has a type, a default, a meaning and a range check (:class:`agents.schema.FieldSpec`);
the fields an RLlib config shares are defined once in :data:`agents.train_fields.TRAINING_FIELDS`;
:func:`validate_train_config` also checks what spans fields (the league is not empty, a minibatch
fits in a rollout, the rule options exist). The shipped configs are ``configs/train/*.yaml``.
"""

from __future__ import annotations

import os
from typing import Any

from tafl_env.memory import fits
from tafl_env.observation import NUM_PLANES

from ..schema import ConfigError, FieldSpec, check_non_negative, check_positive, check_schema, read_yaml_config
from ..train_fields import TRAINING_FIELDS, rules_of

__all__ = ["TRAIN_SCHEMA", "validate_train_config", "load_train_config"]


def _shared(*keys: str) -> dict[str, FieldSpec]:
    return {key: TRAINING_FIELDS[key] for key in keys}


TRAIN_SCHEMA: dict[str, FieldSpec] = {
    **_shared("variant", "description"),
    "backend": FieldSpec((str,), False, "sb3", "the trainer: sb3 (this schema) or rllib (configs/rllib/*.yaml, "
                         "agents/rllib/config.py)",
                         lambda v: None if v == "sb3" else (
                             "'rllib' configs are read by tafl train (agents.rllib.config.RLLIB_SCHEMA)"
                             if v == "rllib" else f"unknown backend {v!r}; one of sb3, rllib")),
    **_shared("seed", "total_timesteps", "max_minutes", "max_turns", "options"),
    # the league
    "selfplay_games": FieldSpec((int,), False, 16, "games in which the learner plays both sides", check_non_negative),
    "snapshot_games": FieldSpec((int,), False, 16, "games against a frozen past snapshot", check_non_negative),
    "greedy_games": FieldSpec((int,), False, 16, "games against the greedy agent", check_non_negative),
    "random_games": FieldSpec((int,), False, 0, "games against the random agent", check_non_negative),
    "greedy_attacker_games": FieldSpec((int,), False, 0,
                                       "more games against the greedy agent, the learner always attacking",
                                       check_non_negative),
    **_shared("pool_size", "snapshot_every"),
    # warm start (off by default), the network
    **_shared("imitation_games", "imitation_epsilon", "imitation_epochs", "imitation_target", "imitation_lr",
              "imitation_batch_size", "channels", "blocks", "value_hidden", "torch_threads"),
    # PPO
    **_shared("learning_rate", "lr_final_fraction"),
    "n_steps": FieldSpec((int,), False, 64, "steps per env per rollout", check_positive),
    "batch_size": FieldSpec((int,), False, 512, "minibatch size", check_positive),
    "n_epochs": FieldSpec((int,), False, 4, "passes over each rollout", check_positive),
    **_shared("gamma", "gae_lambda", "clip_range", "ent_coef", "vf_coef", "max_grad_norm"),
    "target_kl": FieldSpec((int, float, type(None)), False, None, "stop an update early past this KL (null: never)",
                           lambda v: None if v is None or v > 0 else f"must be > 0 or null, got {v}"),
    # evaluation, checkpoints, output
    **_shared("eval_every", "eval_games", "final_eval_games", "eval_opponents", "eval_deterministic",
              "checkpoint_every", "output_dir", "progress_bar"),
}
"""The fields of a training config: types, whether required, default, meaning and range check."""


def validate_train_config(raw: Any, source: str = "train config") -> dict[str, Any]:
    """Check a parsed config against :data:`TRAIN_SCHEMA`; return it with the defaults filled.

    Raises :class:`agents.schema.ConfigError` naming the field (unknown key, missing required
    field, wrong type, value out of range).

    >>> try:
    ...     validate_train_config({"variant": "legacy_ard_ri", "total_timesteps": 1000, "gamma": 2})
    ... except ConfigError as exc:
    ...     print(exc)
    train config: field 'gamma': must lie in [0, 1], got 2
    """
    out = check_schema(raw, TRAIN_SCHEMA, source)
    n_envs = (2 * out["selfplay_games"] + out["snapshot_games"] + out["greedy_games"] + out["random_games"]
              + out["greedy_attacker_games"])
    if n_envs == 0:
        raise ConfigError("selfplay_games", "the league is empty: at least one of selfplay_games, "
                                            "snapshot_games, greedy_games, random_games, greedy_attacker_games "
                                            "must be > 0", source)
    if out["batch_size"] > n_envs * out["n_steps"]:
        raise ConfigError("batch_size", f"{out['batch_size']} is larger than a rollout "
                                        f"({n_envs} envs x {out['n_steps']} steps)", source)
    try:
        rules = rules_of(out)
    except ValueError as exc:
        raise ConfigError("options", str(exc), source) from None
    try:
        fits(rollout_bytes(rules, n_envs, out["n_steps"]),
             f"a rollout of {n_envs} envs x {out['n_steps']} steps")
    except ValueError as exc:
        raise ConfigError("n_steps", str(exc), source) from None
    if out["output_dir"] is None:
        out["output_dir"] = f"runs/{out['variant']}"
    return out


def rollout_bytes(rules, n_envs: int, n_steps: int) -> int:
    """About what PPO's rollout buffer holds: per env and step an observation (float32 planes), an
    action mask and a few numbers."""
    n, planes = rules.board_size, NUM_PLANES
    return n_envs * n_steps * (4 * n * n * planes + rules.num_actions + 64)


def load_train_config(path: str | os.PathLike) -> dict[str, Any]:
    """Read a YAML training config and validate it (:func:`validate_train_config`)."""
    return validate_train_config(read_yaml_config(path), source=str(path))
