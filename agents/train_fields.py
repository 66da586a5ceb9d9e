"""The config fields that the training configs share, each defined once, and the rules a training
config names.

:data:`TRAINING_FIELDS` are the fields that mean the same in a Stable-Baselines3 config
(:data:`agents.ppo.config.TRAIN_SCHEMA`) and an RLlib one (:data:`agents.rllib.config.RLLIB_SCHEMA`):
the variant, seed, budget and rules, the snapshot pool, the warm start, the network, PPO's
coefficients, the evaluations and the output. The AZ config (:data:`agents.az.config.AZ_SCHEMA`)
takes its time limit and rules from here. Each schema adds its own fields; every field has a
type, a default, a meaning and a range check (:class:`agents.schema.FieldSpec`).

    >>> from agents.schema import check_schema
    >>> cfg = check_schema({"variant": "legacy_ard_ri", "total_timesteps": 1000, "max_turns": 80},
    ...                    TRAINING_FIELDS, "demo config")
    >>> cfg["eval_opponents"], rules_of(cfg).max_turns
    (['random', 'greedy'], 80)
"""

from __future__ import annotations

from typing import Any, Mapping

from tafl_env.rules import VARIANTS, make_rules

from .base import parse_data_spec
from .schema import (NETWORK_BOUNDS, FieldSpec, check_non_negative, check_positive, check_rule_options,
                     check_seed, check_unit)

__all__ = ["TRAINING_FIELDS", "rules_of"]


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


TRAINING_FIELDS: dict[str, FieldSpec] = {
    "variant": FieldSpec((str,), True, None, "variant id (tafl_env.VARIANTS)",
                         lambda v: None if v in VARIANTS else f"unknown variant {v!r}; one of {', '.join(VARIANTS)}"),
    "description": FieldSpec((str,), False, "", "free text", None),
    "seed": FieldSpec((int,), False, 0, "seed of the network, the envs, the snapshot draws and evaluations",
                      check_seed),
    "total_timesteps": FieldSpec((int,), True, None, "learner steps (all envs together) to train for", check_positive),
    "max_minutes": FieldSpec((int, float, type(None)), False, None,
                             "stop after this many minutes of wall time (null: no limit)",
                             lambda v: None if v is None or v > 0 else f"must be > 0 or null, got {v}"),
    "max_turns": FieldSpec((int, type(None)), False, None, "move cap in turns; null: the variant's default",
                           lambda v: None if v is None or v >= 1 else f"must be >= 1 or null, got {v}"),
    "options": FieldSpec((dict,), False, {}, "rule options (RULES.md) for make_rules", check_rule_options),
    # the snapshot pool
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
    "gamma": FieldSpec((int, float), False, 0.99, "discount per learner step", check_unit),
    "gae_lambda": FieldSpec((int, float), False, 0.95, "GAE lambda", check_unit),
    "clip_range": FieldSpec((int, float), False, 0.2, "PPO clip range", check_positive),
    "ent_coef": FieldSpec((int, float), False, 0.01, "entropy bonus coefficient", check_non_negative),
    "vf_coef": FieldSpec((int, float), False, 0.5, "value loss coefficient", check_non_negative),
    "max_grad_norm": FieldSpec((int, float), False, 0.5, "gradient clipping norm", check_positive),
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
"""The shared fields, in the order the schemas list them."""


def rules_of(cfg: Mapping[str, Any]):
    """The :class:`~tafl_env.rules.RuleSet` of a config: its variant, options and move cap."""
    opts = dict(cfg["options"])
    if cfg["max_turns"] is not None:
        opts["max_turns"] = cfg["max_turns"]
    return make_rules(cfg["variant"], **opts)
