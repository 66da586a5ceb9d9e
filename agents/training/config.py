"""The training config: :data:`TRAIN_SCHEMA`, its validation and the rules a config names.

Every field has a type, a default, a meaning and a range check (:class:`agents.schema.FieldSpec`);
:func:`validate_train_config` also checks what spans fields (the league is not empty, a minibatch
fits in a rollout, the rule options exist). The shipped configs are ``configs/train/*.yaml``.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from tafl_env.memory import fits
from tafl_env.observation import NUM_PLANES
from tafl_env.rules import VARIANTS, make_rules

from ..base import parse_data_spec
from ..schema import (NETWORK_BOUNDS, ConfigError, FieldSpec, check_non_negative, check_positive,
                      check_rule_options, check_schema, check_seed, check_unit, read_yaml_config)

__all__ = ["TRAIN_SCHEMA", "validate_train_config", "load_train_config", "rules_of"]





def _between(low, high):
    """A range check: ``low <= v <= high`` (a network far beyond these sizes would not fit)."""
    return lambda v: None if low <= v <= high else f"must be from {low} to {high}, got {v}"


def _opponents_check(v):
    if not v:
        return "needs at least one opponent"
    for x in v:
        try:
            spec = parse_data_spec(x, "")      # a config never opts in to unpickling (rllib: included)
        except ValueError as exc:
            return str(exc)
        if spec.kind not in ("random", "greedy", "mcts", "policy"):
            return f"unknown opponent {x!r} (random, greedy, mcts:N, policy:PATH)"
    return None


TRAIN_SCHEMA: dict[str, FieldSpec] = {
    "variant": FieldSpec((str,), True, None, "variant id (tafl_env.VARIANTS)",
                         lambda v: None if v in VARIANTS else f"unknown variant {v!r}; one of {', '.join(VARIANTS)}"),
    "description": FieldSpec((str,), False, "", "free text", None),
    "backend": FieldSpec((str,), False, "sb3", "the trainer: sb3 (this schema) or rllib (configs/rllib/*.yaml, "
                         "agents/rllib/config.py)",
                         lambda v: None if v == "sb3" else (
                             "'rllib' configs are read by tafl train (agents.rllib.config.RLLIB_SCHEMA)"
                             if v == "rllib" else f"unknown backend {v!r}; one of sb3, rllib")),
    "seed": FieldSpec((int,), False, 0, "seed of the network, the envs, the snapshot draws and evaluations",
                      check_seed),
    "total_timesteps": FieldSpec((int,), True, None, "learner steps (all envs together) to train for", check_positive),
    "max_minutes": FieldSpec((int, float, type(None)), False, None,
                             "stop after this many minutes of wall time (null: no limit)",
                             lambda v: None if v is None or v > 0 else f"must be > 0 or null, got {v}"),
    "max_turns": FieldSpec((int, type(None)), False, None, "move cap in turns; null: the variant's default",
                           lambda v: None if v is None or v >= 1 else f"must be >= 1 or null, got {v}"),
    "options": FieldSpec((dict,), False, {}, "rule options (RULES.md) for make_rules", check_rule_options),
    # the league
    "selfplay_games": FieldSpec((int,), False, 16, "games in which the learner plays both sides", check_non_negative),
    "snapshot_games": FieldSpec((int,), False, 16, "games against a frozen past snapshot", check_non_negative),
    "greedy_games": FieldSpec((int,), False, 16, "games against the greedy agent", check_non_negative),
    "random_games": FieldSpec((int,), False, 0, "games against the random agent", check_non_negative),
    "greedy_attacker_games": FieldSpec((int,), False, 0,
                                       "more games against the greedy agent, the learner always attacking",
                                       check_non_negative),
    "pool_size": FieldSpec((int,), False, 8, "snapshots kept in the pool", check_positive),
    "snapshot_every": FieldSpec((int,), False, 50_000, "steps between snapshots added to the pool", check_positive),
    # warm start (off by default)
    "imitation_games": FieldSpec((int,), False, 0,
                                 "greedy-vs-greedy games whose moves the network imitates before PPO (0: none)",
                                 check_non_negative),
    "imitation_epsilon": FieldSpec((int, float), False, 0.25,
                                   "chance that a move of those games is played at random (variety)", check_unit),
    "imitation_epochs": FieldSpec((int,), False, 3, "passes over the imitation data", check_positive),
    "imitation_target": FieldSpec((str,), False, "move",
                                  "what the policy imitates: the greedy agent's move, or its set of best moves",
                                  lambda v: None if v in ("move", "best") else f"must be 'move' or 'best', got {v!r}"),
    "imitation_lr": FieldSpec((int, float, type(None)), False, None,
                              "Adam learning rate of the warm start (null: learning_rate)",
                              lambda v: None if v is None or 0 < v <= 1 else f"must lie in (0, 1] or null, got {v}"),
    "imitation_batch_size": FieldSpec((int, type(None)), False, None,
                                      "minibatch size of the warm start (null: batch_size)",
                                      lambda v: None if v is None or v > 0 else f"must be > 0 or null, got {v}"),
    # the network
    "channels": FieldSpec((int,), False, 32, "conv channels of the trunk", _between(*NETWORK_BOUNDS["channels"])),
    "blocks": FieldSpec((int,), False, 3, "residual blocks of the trunk", _between(*NETWORK_BOUNDS["blocks"])),
    "value_hidden": FieldSpec((int,), False, 64, "units of the value MLP", _between(*NETWORK_BOUNDS["value_hidden"])),
    "torch_threads": FieldSpec((int,), False, 2, "torch CPU threads", _between(1, 1024)),
    # PPO
    "learning_rate": FieldSpec((int, float), False, 3e-4, "Adam learning rate",
                               lambda v: None if 0 < v <= 1 else f"must lie in (0, 1], got {v}"),
    "lr_final_fraction": FieldSpec((int, float), False, 1.0,
                                   "learning rate at the end as a fraction of the start (linear decay)", check_unit),
    "n_steps": FieldSpec((int,), False, 64, "steps per env per rollout", check_positive),
    "batch_size": FieldSpec((int,), False, 512, "minibatch size", check_positive),
    "n_epochs": FieldSpec((int,), False, 4, "passes over each rollout", check_positive),
    "gamma": FieldSpec((int, float), False, 0.99, "discount per learner step", check_unit),
    "gae_lambda": FieldSpec((int, float), False, 0.95, "GAE lambda", check_unit),
    "clip_range": FieldSpec((int, float), False, 0.2, "PPO clip range", check_positive),
    "ent_coef": FieldSpec((int, float), False, 0.01, "entropy bonus coefficient", check_non_negative),
    "vf_coef": FieldSpec((int, float), False, 0.5, "value loss coefficient", check_non_negative),
    "max_grad_norm": FieldSpec((int, float), False, 0.5, "gradient clipping norm", check_positive),
    "target_kl": FieldSpec((int, float, type(None)), False, None, "stop an update early past this KL (null: never)",
                           lambda v: None if v is None or v > 0 else f"must be > 0 or null, got {v}"),
    # evaluation, checkpoints, output
    "eval_every": FieldSpec((int,), False, 50_000, "steps between evaluations (0: only at the end)", check_non_negative),
    "eval_games": FieldSpec((int,), False, 50, "games per side per opponent in a periodic evaluation", check_positive),
    "final_eval_games": FieldSpec((int,), False, 200, "games per side per opponent in the final evaluation", check_positive),
    "eval_opponents": FieldSpec((list,), False, ["random", "greedy"], "agent specs to evaluate against",
                                _opponents_check),
    "eval_deterministic": FieldSpec((bool,), False, True, "evaluate with the argmax move (else sample)", None),
    "checkpoint_every": FieldSpec((int,), False, 100_000, "steps between checkpoints (0: none)", check_non_negative),
    "output_dir": FieldSpec((str,), False, None, "output directory; default runs/<variant>",
                            lambda v: None if v.strip() else "must not be empty"),
    "progress_bar": FieldSpec((bool,), False, True, "show a progress bar", None),
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


def rules_of(cfg: Mapping[str, Any]):
    """The :class:`~tafl_env.rules.RuleSet` of a config: its variant, options and move cap."""
    opts = dict(cfg["options"])
    if cfg["max_turns"] is not None:
        opts["max_turns"] = cfg["max_turns"]
    return make_rules(cfg["variant"], **opts)
