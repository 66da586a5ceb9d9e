"""The config of an AlphaZero training run (``backend: az``, ``configs/az/*.yaml``):
:data:`AZ_SCHEMA` and its checks, and what the trainer and its Ray workers build from a config
(:func:`search_settings`, :func:`selfplay_settings`, :func:`config_agent`).

Every field has a type, a default, a meaning and a range check (:class:`agents.schema.FieldSpec`);
:func:`validate_az_config` also checks what spans fields (the rule options exist, a fast search
is not bigger than a full one, the learner's minibatch fits in the window). ``tafl train`` reads a
config of this kind by its ``backend`` field.

    >>> cfg = validate_az_config({"backend": "az", "variant": "legacy_ard_ri", "iterations": 10})
    >>> cfg["root"], cfg["simulations"], cfg["symmetries"]
    ('gumbel', 32, 'rules')
    >>> try:
    ...     validate_az_config({"backend": "az", "variant": "legacy_ard_ri", "iterations": 10,
    ...                         "fast_simulations": 64})
    ... except ConfigError as exc:
    ...     print(exc)
    az config: field 'fast_simulations': must be <= simulations (32), got 64
"""

from __future__ import annotations

from typing import Any

from tafl_env.errors import InvalidOptionError
from tafl_env.observation import NUM_PLANES
from tafl_env.rules import VARIANTS

from ..base import check_data_spec
from ..mcts.agent import MAX_SIMULATIONS, tree_bytes
from ..schema import (MAX_WEIGHTS_BYTES, NETWORK_BOUNDS, ConfigError, FieldSpec, check_between,
                      check_non_negative, check_positive, check_schema, check_seed, check_unit)
from ..train_fields import TRAINING_FIELDS, rules_of
from .search import INTERIOR_RULES, ROOT_RULES, SearchSettings
from .selfplay import CAPPED_BY_EVALUATION, SelfPlaySettings
from .symmetry import SYMMETRY_SETS

__all__ = ["AZ_SCHEMA", "validate_az_config", "rules_of", "window_bytes", "network_bytes", "MAX_GAMES",
           "MAX_REPLAY_WINDOW", "MAX_MEMORY_BYTES", "search_settings", "selfplay_settings", "config_agent",
           "sparring_agents", "agent_specs", "AGENT_FIELDS", "SEARCH_FIELDS",
           "search_record"]

MAX_GAMES = 65_536
"""The most games played at once (self-play's batch, an evaluation's games per side)."""

MAX_REPLAY_WINDOW = 10_000_000
"""The most positions the replay window (and one iteration of self-play) may hold."""

MAX_MEMORY_BYTES = 16 << 30
"""The most memory the replay window, or the search trees of the games played at once, may take:
a config that asks for more is refused when it is read, not when the arrays fill up hours
into the run (or, for an evaluation, after the training)."""


def window_bytes(rules, capacity: int, width: int = 32) -> int:
    """The replay window's arrays for ``capacity`` positions of ``rules``'s board: per position its
    planes (uint8), ``width`` legal actions and targets (the starting width; a window widens to
    the widest root it sees) and the value."""
    n = rules.board_size
    return capacity * (n * n * NUM_PLANES + width * 8 + 4)


def network_bytes(board_size: int, channels: int, blocks: int, value_hidden: int, planes: int = NUM_PLANES) -> int:
    """The float32 weights of :class:`~agents.az.network.AZNet` of this shape (its layers'
    weights and biases, counted without building it): a network whose weights file the loaders
    would refuse (:data:`~agents.schema.MAX_WEIGHTS_BYTES`) must not be trained."""
    n, c, moves = board_size, channels, 4 * (board_size - 1)
    params = (planes * 9 * c + c) + blocks * 2 * (9 * c * c + c) + (c * c + c) + (c * moves + moves) \
        + (c + 1) + (2 * c + 2) + (2 * n * n * value_hidden + value_hidden) + (value_hidden + 1)
    return 4 * params


def _size(name):
    low, high = NETWORK_BOUNDS[name]
    return check_between(low, high)


def _value(v):
    return None if -1 <= v <= 1 else f"must lie in [-1, 1], got {v}"


def _capped_value(v):
    if isinstance(v, str):
        return None if v == CAPPED_BY_EVALUATION else f"must be a number in [-1, 1] or {CAPPED_BY_EVALUATION!r}, got {v!r}"
    return _value(v)


HEADS = ("board", "sizeless")
"""The heads a network may have (:mod:`.network`): ``board`` for one board size, ``sizeless`` for any."""


def _one_of(choices):
    return lambda v: None if v in choices else f"must be one of {', '.join(choices)}, got {v!r}"


def _spec(v):
    return None if v.strip() else "must be an agent spec, got an empty text"


def _opponents(v):
    for x in v:
        if not isinstance(x, str) or not x.strip():
            return f"each opponent must be an agent spec (text), got {x!r}"
    return None


_NUM = (int, float)

AZ_SCHEMA: dict[str, FieldSpec] = {
    "backend": FieldSpec((str,), True, None, "the trainer: 'az' for this schema", _one_of(("az",))),
    "variant": FieldSpec((str,), True, None, "variant id (tafl_env.VARIANTS)", _one_of(VARIANTS)),
    "description": FieldSpec((str,), False, "", "free text", None),
    "seed": FieldSpec((int,), False, 0, "seed of the network, the games' noise and the evaluations", check_seed),
    "iterations": FieldSpec((int,), True, None, "self-play + learning iterations to run (in all, resumes included)", check_positive),
    # the same fields, meanings and checks as the PPO and RLlib training configs
    **{key: TRAINING_FIELDS[key] for key in ("max_minutes", "max_turns", "options")},
    # the network
    "channels": FieldSpec((int,), False, 32, "conv channels of the trunk", _size("channels")),
    "blocks": FieldSpec((int,), False, 2, "residual blocks of the trunk", _size("blocks")),
    "value_hidden": FieldSpec((int,), False, 64, "units of the value head's hidden layer", _size("value_hidden")),
    "head": FieldSpec((str,), False, "board", "the network's heads: board (weights of one board size) or "
                      "sizeless (weights that play every board size, agents/az/network.py)", _one_of(HEADS)),
    "init_model": FieldSpec((str, type(None)), False, None, "an AZ model (.pt with its .json) whose weights "
                            "start the network, e.g. a sizeless network of a smaller board with the same rules; "
                            "null: random weights", lambda v: None if v is None or v.strip() else "must not be empty"),
    "torch_threads": FieldSpec((int,), False, 1, "torch CPU threads", check_between(1, 256)),
    "device": FieldSpec((str,), False, "auto", "where the network runs: auto (a GPU when present), cpu, cuda",
                        _one_of(("auto", "cpu", "cuda"))),
    # self-play
    "games": FieldSpec((int,), False, 128, "games played at once (one search batch)", check_between(1, MAX_GAMES)),
    "positions_per_iteration": FieldSpec((int,), False, 2048, "recorded positions of self-play per iteration",
                                         check_between(1, MAX_REPLAY_WINDOW)),
    "simulations": FieldSpec((int,), False, 32, "simulations of a full search (recorded as a target)",
                             check_between(1, MAX_SIMULATIONS)),
    "fast_simulations": FieldSpec((int,), False, 8, "simulations of a fast search (played, not recorded)",
                                  check_between(1, MAX_SIMULATIONS)),
    "full_search_fraction": FieldSpec(_NUM, False, 0.25, "chance that a move gets a full search "
                                      "(playout-cap randomisation; 1: every move)", check_unit),
    "opening_moves": FieldSpec((int,), False, 4, "first turns of a game whose move is drawn by visit counts", check_non_negative),
    "past_share": FieldSpec(_NUM, False, 0.25, "share of games against a past checkpoint (role forgetting)", check_unit),
    "pool_size": FieldSpec((int,), False, 4, "past checkpoints kept for those games", check_between(1, 256)),
    "pool_every": FieldSpec((int,), False, 5, "iterations between checkpoints added to the pool", check_positive),
    # the search
    "root": FieldSpec((str,), False, "gumbel", "root rule: gumbel (Sequential Halving) or puct (Dirichlet noise)",
                      _one_of(ROOT_RULES)),
    "interior": FieldSpec((str,), False, "gumbel", "inner rule: gumbel (deterministic) or puct",
                          _one_of(INTERIOR_RULES)),
    "considered_actions": FieldSpec((int,), False, 16, "actions sampled at a Gumbel root (m)", check_between(1, 256)),
    "gumbel_scale": FieldSpec(_NUM, False, 1.0, "scale of the root's Gumbel noise in self-play", check_non_negative),
    "c_visit": FieldSpec(_NUM, False, 50.0, "sigma(q) = (c_visit + max N) * c_scale * q", check_positive),
    "c_scale": FieldSpec(_NUM, False, 0.1, "see c_visit", check_positive),
    "rescale_q": FieldSpec((bool,), False, True, "rescale completed Q-values to [0, 1] per node", None),
    "c_puct": FieldSpec(_NUM, False, 1.5, "PUCT exploration constant", check_positive),
    "dirichlet_alpha": FieldSpec(_NUM, False, 0.3, "Dirichlet noise concentration (root: puct)", check_positive),
    "dirichlet_fraction": FieldSpec(_NUM, False, 0.25, "weight of the Dirichlet noise (root: puct)", check_unit),
    "leaves_per_tree": FieldSpec((int,), False, 4, "walks per tree and forward pass (virtual loss)",
                                 check_between(1, 1024)),
    "root_check": FieldSpec((bool,), False, True, "check every root's wins and losses in one exactly", None),
    "static_value_weight": FieldSpec(_NUM, False, 0.0, "weight of the greedy evaluation's static value in the "
                                     "search's leaf value (agents/az/search.py; 0: the network's alone)", check_unit),
    # targets
    "draw_value": FieldSpec(_NUM, False, 0.0, "value target of a drawn game, for both sides", _value),
    "capped_value": FieldSpec(_NUM + (str,), False, 0.0, "value target of a game cut at the move cap, for both "
                              "sides, or 'evaluation': its last position's static value (agents/az/selfplay.py)",
                              _capped_value),
    "value_mix": FieldSpec(_NUM, False, 0.0, "weight of the root's search value in the value target", check_unit),
    # warm start (off by default: tabula rasa)
    "warm_start_games": FieldSpec((int,), False, 0, "games of the warm-start agent against itself whose "
                                  "positions fill the window before self-play (0: tabula rasa)",
                                  check_between(0, 1_000_000)),
    "warm_start_agent": FieldSpec((str,), False, "greedy", "the warm start's teacher (an agent spec: greedy, "
                                  "mcts:N); its root visits or its move are the policy targets", _spec),
    "warm_start_epsilon": FieldSpec(_NUM, False, 0.25, "chance that a warm-start move is random (the target "
                                    "stays the teacher's)", check_unit),
    "sparring": FieldSpec((str, type(None)), False, None, "a fixed agent (spec) that sparring_share of the "
                          "self-play games are played against; null: none", _spec),
    "sparring_share": FieldSpec(_NUM, False, 0.25, "share of self-play games against the sparring agent "
                                "(when one is named)", check_unit),
    "sparring_attacks": FieldSpec(_NUM, False, 0.5, "share of the sparring games in which the learner "
                                  "attacks (0.5: its side drawn at random; 1: it always attacks)", check_unit),
    "sparring_defender": FieldSpec((str, type(None)), False, None, "the agent (spec) that defends in the "
                                   "sparring games where the learner attacks, e.g. greedy: a defence it can "
                                   "beat; null: the sparring agent", _spec),
    # replay and learner
    "replay_window": FieldSpec((int,), False, 100_000, "positions kept in the replay window",
                               check_between(1, MAX_REPLAY_WINDOW)),
    "min_replay": FieldSpec((int,), False, 2048, "positions in the window before the learner starts", check_positive),
    "symmetries": FieldSpec((str,), False, "rules", "augmentation: rules (every symmetry of the rules), "
                            "layout (those that keep the start position too), none", _one_of(SYMMETRY_SETS)),
    "batch_size": FieldSpec((int,), False, 256, "learner minibatch", check_between(1, MAX_GAMES)),
    "sample_reuse": FieldSpec(_NUM, False, 4.0, "times each new position is sampled on average "
                              "(learner steps = reuse * new positions / batch)",
                              lambda v: None if 0 < v <= 1000 else f"must lie in (0, 1000], got {v}"),
    "learning_rate": FieldSpec(_NUM, False, 1e-3, "AdamW learning rate",
                               lambda v: None if 0 < v <= 1 else f"must lie in (0, 1], got {v}"),
    "weight_decay": FieldSpec(_NUM, False, 1e-4, "AdamW weight decay", check_non_negative),
    "value_weight": FieldSpec(_NUM, False, 1.0, "weight of the value loss", check_non_negative),
    "max_grad_norm": FieldSpec(_NUM, False, 5.0, "gradient clipping norm", check_positive),
    # scale-out
    "workers": FieldSpec((int,), False, 0, "Ray self-play actors (0: self-play in the learner's process)",
                         check_between(0, 1024)),
    # evaluation, checkpoints, output
    "eval_every": FieldSpec((int,), False, 10, "iterations between evaluations (0: only the final one)", check_non_negative),
    "eval_games": FieldSpec((int,), False, 20, "games per side per opponent in a periodic evaluation",
                            check_between(1, MAX_GAMES)),
    "final_eval_games": FieldSpec((int,), False, 100, "games per side per opponent in the final evaluation",
                                  check_between(1, MAX_GAMES)),
    "eval_opponents": FieldSpec((list,), False, ["greedy", "mcts:100"], "agent specs to evaluate against", _opponents),
    "eval_simulations": FieldSpec((int,), False, 64, "simulations per move of the evaluated az agent",
                                  check_between(1, MAX_SIMULATIONS)),
    "checkpoint_every": FieldSpec((int,), False, 5, "iterations between checkpoints (the last is always kept)", check_positive),
    "output_dir": FieldSpec((str, type(None)), False, None, "output directory; default runs/az/<variant>",
                            lambda v: None if v.strip() else "must not be empty"),
    "progress_bar": FieldSpec((bool,), False, True, "show progress bars", None),
}
"""The fields of an AZ training config: types, whether required, default, meaning and range check."""


AGENT_FIELDS = ("warm_start_agent", "sparring", "sparring_defender")
"""The fields that name one agent spec (``eval_opponents`` names a list of them)."""


def agent_specs(cfg: dict) -> list[tuple[str, str]]:
    """(field, spec) of every agent the config names, null fields left out."""
    specs = [(f, cfg[f]) for f in AGENT_FIELDS] + [("eval_opponents", x) for x in cfg["eval_opponents"]]
    return [(f, spec) for f, spec in specs if spec is not None]


def validate_az_config(raw: Any, source: str = "az config") -> dict[str, Any]:
    """Check a parsed config against :data:`AZ_SCHEMA`; return it with the defaults filled."""
    cfg = check_schema(raw, AZ_SCHEMA, source)
    for field, spec in agent_specs(cfg):
        try:
            check_data_spec(spec, "")     # a config never opts in to unpickling
        except ValueError as exc:
            raise ConfigError(field, str(exc).lstrip(": "), source) from None
    if cfg["sparring_defender"] is not None and cfg["sparring"] is None:
        raise ConfigError("sparring_defender", "needs a sparring agent (sparring is null)", source)
    if cfg["fast_simulations"] > cfg["simulations"]:
        raise ConfigError("fast_simulations", f"must be <= simulations ({cfg['simulations']}), "
                                              f"got {cfg['fast_simulations']}", source)
    if cfg["sparring"] is not None and cfg["sparring_share"] + cfg["past_share"] > 1:
        raise ConfigError("sparring_share", f"plus past_share ({cfg['past_share']}) must be <= 1, "
                                            f"got {cfg['sparring_share']}", source)
    if cfg["batch_size"] > cfg["replay_window"]:
        raise ConfigError("batch_size", f"must be <= replay_window ({cfg['replay_window']}), "
                                        f"got {cfg['batch_size']}", source)
    if cfg["min_replay"] > cfg["replay_window"]:
        raise ConfigError("min_replay", f"must be <= replay_window ({cfg['replay_window']}), "
                                        f"got {cfg['min_replay']}", source)
    try:
        rules = rules_of(cfg)
    except (InvalidOptionError, TypeError, ValueError) as exc:
        raise ConfigError("options", str(exc), source) from None
    gib = 1 << 30
    weights = network_bytes(rules.board_size, cfg["channels"], cfg["blocks"], cfg["value_hidden"])
    if weights > MAX_WEIGHTS_BYTES:
        raise ConfigError("channels", f"{cfg['channels']} channels x {cfg['blocks']} blocks make "
                                      f"{weights / gib:.1f} GiB of weights, more than a model file may hold "
                                      f"({MAX_WEIGHTS_BYTES // gib} GiB)", source)
    need = window_bytes(rules, cfg["replay_window"])
    if need > MAX_MEMORY_BYTES:
        raise ConfigError("replay_window", f"{cfg['replay_window']} positions of a {rules.board_size}x"
                                           f"{rules.board_size} board take about {need / gib:.1f} GiB, more "
                                           f"than the {MAX_MEMORY_BYTES // gib} GiB allowed", source)
    for field, games, sims_field in (("games", cfg["games"], "simulations"),
                                     ("eval_games", max(cfg["eval_games"], cfg["final_eval_games"]),
                                      "eval_simulations")):
        need = games * tree_bytes(cfg[sims_field])
        if need > MAX_MEMORY_BYTES:
            if field == "eval_games" and cfg["final_eval_games"] > cfg["eval_games"]:
                field = "final_eval_games"
            raise ConfigError(field, f"{games} games searched at once with {cfg[sims_field]} {sims_field} "
                                     f"take about {need / gib:.1f} GiB of search trees, more than the "
                                     f"{MAX_MEMORY_BYTES // gib} GiB allowed", source)
    return cfg


def search_settings(cfg: dict) -> SearchSettings:
    return SearchSettings(root=cfg["root"], interior=cfg["interior"], considered=cfg["considered_actions"],
                          gumbel_scale=float(cfg["gumbel_scale"]), c_visit=float(cfg["c_visit"]),
                          c_scale=float(cfg["c_scale"]), rescale_q=cfg["rescale_q"], c_puct=float(cfg["c_puct"]),
                          dirichlet_alpha=float(cfg["dirichlet_alpha"]),
                          dirichlet_fraction=float(cfg["dirichlet_fraction"]),
                          leaves_per_tree=cfg["leaves_per_tree"], root_check=cfg["root_check"],
                          static_value_weight=float(cfg["static_value_weight"]))


SEARCH_FIELDS = ("static_value_weight",)
"""The search settings a model's record keeps: those that change what a position is worth, so that
the AZ agent searches as self-play did (:class:`agents.az.agent.AZAgent` reads them)."""


def search_record(cfg: dict) -> dict:
    """The config's :data:`SEARCH_FIELDS`, for a model's record."""
    return {key: float(cfg[key]) for key in SEARCH_FIELDS}


def capped_setting(cfg: dict) -> float | str:
    """The config's ``capped_value``: a number, or :data:`~agents.az.selfplay.CAPPED_BY_EVALUATION`."""
    v = cfg["capped_value"]
    return v if v == CAPPED_BY_EVALUATION else float(v)


def selfplay_settings(cfg: dict) -> SelfPlaySettings:
    return SelfPlaySettings(games=cfg["games"], simulations=cfg["simulations"],
                            fast_simulations=cfg["fast_simulations"],
                            full_search_fraction=float(cfg["full_search_fraction"]),
                            opening_moves=cfg["opening_moves"], past_share=float(cfg["past_share"]),
                            sparring_share=float(cfg["sparring_share"]),
                            sparring_attacks=float(cfg["sparring_attacks"]),
                            draw_value=float(cfg["draw_value"]), capped_value=capped_setting(cfg),
                            value_mix=float(cfg["value_mix"]))


def config_agent(cfg: dict, field: str, seed: int):
    """The agent that the config's ``field`` names (one of :data:`AGENT_FIELDS`), built
    now so that a bad spec is an error before anything is written; None where the field is
    null."""
    from ..base import make_agent
    from ..schema import ConfigError

    spec = cfg[field]
    if spec is None:
        return None
    try:
        agent = make_agent(spec, seed=seed)
    except (ValueError, TypeError) as exc:
        raise ConfigError(field, str(exc), "az config") from None
    problem = agent.check_rules(rules_of(cfg))
    if problem:
        raise ConfigError(field, f"agent {spec!r} cannot play this variant: {problem}", "az config")
    return agent


def sparring_agents(cfg: dict, seed: int) -> dict:
    """The keyword arguments ``sparring`` and ``sparring_defender`` of
    :class:`~agents.az.selfplay.SelfPlay`: the config's agents, built with seeds of their own."""
    return {"sparring": config_agent(cfg, "sparring", seed),
            "sparring_defender": config_agent(cfg, "sparring_defender", seed + 1)}
