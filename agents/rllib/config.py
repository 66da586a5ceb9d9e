"""The config of an RLlib training run (``backend: rllib``): :data:`RLLIB_SCHEMA` and its checks.

The fields that mean the same as in a Stable-Baselines3 config (variant, seed, budget, rules, the
snapshot pool, the warm start, the network, PPO's coefficients, evaluations, output) are taken
from :data:`agents.train_fields.TRAINING_FIELDS` as they are; the rest are RLlib's own: the league
as episode weights (:mod:`agents.rllib.env`), the batch sizes of RLlib's PPO, and the resources
(env runners, envs per runner, CPUs of a local Ray). The shipped configs are
``configs/rllib/*.yaml``; ``tafl train`` reads either kind by its ``backend`` field.

    >>> cfg = validate_rllib_config({"backend": "rllib", "variant": "legacy_ard_ri", "total_timesteps": 8000})
    >>> cfg["num_env_runners"], cfg["output_dir"]
    (2, 'runs/legacy_ard_ri_rllib')
    >>> try:
    ...     validate_rllib_config({"backend": "rllib", "variant": "legacy_ard_ri", "total_timesteps": 8000,
    ...                            "minibatch_size": 9000})
    ... except ConfigError as exc:
    ...     print(exc)
    rllib train config: field 'minibatch_size': 9000 is larger than train_batch_size (4000)
"""

from __future__ import annotations

from typing import Any

from ..schema import ConfigError, FieldSpec, check_non_negative, check_positive, check_schema
from ..train_fields import TRAINING_FIELDS, rules_of

__all__ = ["RLLIB_SCHEMA", "validate_rllib_config"]

RLLIB_SCHEMA: dict[str, FieldSpec] = {
    "backend": FieldSpec((str,), True, None, "the trainer: 'rllib' for this schema",
                         lambda v: None if v == "rllib" else f"must be 'rllib' in an RLlib config, got {v!r}"),
    **TRAINING_FIELDS,
    # the league: episode weights (agents.rllib.env)
    "selfplay_weight": FieldSpec((int, float), False, 1.0, "share of episodes the learner plays both sides", check_non_negative),
    "snapshot_weight": FieldSpec((int, float), False, 1.0, "share of episodes against a frozen snapshot", check_non_negative),
    "greedy_weight": FieldSpec((int, float), False, 1.0, "share of episodes against the greedy agent", check_non_negative),
    "random_weight": FieldSpec((int, float), False, 0.0, "share of episodes against random play", check_non_negative),
    # RLlib's PPO
    "train_batch_size": FieldSpec((int,), False, 4000, "env steps sampled per training iteration", check_positive),
    "minibatch_size": FieldSpec((int,), False, 1000, "PPO minibatch size", check_positive),
    "num_epochs": FieldSpec((int,), False, 2, "passes over each training batch", check_positive),
    "kl_coeff": FieldSpec((int, float), False, 0.0, "initial coefficient of PPO's KL penalty (0: none)", check_non_negative),
    # resources
    "num_env_runners": FieldSpec((int,), False, 2, "RLlib env runners (sampling actors; 0: sample in the driver)",
                                 check_non_negative),
    "num_envs_per_env_runner": FieldSpec((int,), False, 8, "games each env runner steps at once", check_positive),
    "num_cpus": FieldSpec((int, type(None)), False, None,
                          "CPUs of a local Ray started by the run (null: all); ignored on a cluster",
                          lambda v: None if v is None or v > 0 else f"must be > 0 or null, got {v}"),
}
"""The fields of an RLlib training config: the shared ones (:data:`~agents.train_fields.TRAINING_FIELDS`) and RLlib's own."""


def validate_rllib_config(raw: Any, source: str = "rllib train config") -> dict[str, Any]:
    """Check a parsed ``backend: rllib`` config against :data:`RLLIB_SCHEMA`; defaults filled.

    Raises :class:`~agents.schema.ConfigError` naming the field, as the SB3 configs do.
    """
    out = check_schema(raw, RLLIB_SCHEMA, source)
    weights = [out[f"{k}_weight"] for k in ("selfplay", "snapshot", "greedy", "random")]
    if sum(weights) <= 0:
        raise ConfigError("selfplay_weight", "the league is empty: at least one of selfplay_weight, "
                                             "snapshot_weight, greedy_weight, random_weight must be > 0", source)
    if out["minibatch_size"] > out["train_batch_size"]:
        raise ConfigError("minibatch_size", f"{out['minibatch_size']} is larger than train_batch_size "
                                            f"({out['train_batch_size']})", source)
    if out["imitation_games"] and (out["imitation_batch_size"] or out["minibatch_size"]) <= 0:
        raise ConfigError("imitation_batch_size", "must be > 0", source)
    try:
        rules_of(out)
    except ValueError as exc:
        raise ConfigError("options", str(exc), source) from None
    if out["output_dir"] is None:
        out["output_dir"] = f"runs/{out['variant']}_rllib"
    return out

