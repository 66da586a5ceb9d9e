"""Round-robin tournaments: configs, seeds per leg, and the run.

- :func:`load_tournament_config` reads and validates a YAML tournament config
  (``configs/tournaments/*.yaml``) against :data:`TOURNAMENT_SCHEMA`; command-line overrides
  meet the same checks (:func:`agents.schema.apply_overrides`).
- :func:`round_robin` plays every pair of agents both ways round (half the games each way), with a
  seed per pairing leg derived from one base seed (:func:`leg_seed`), and computes the tables
  (:mod:`agents.evaluation.stats`) and ratings (:mod:`agents.evaluation.ratings`); with ``out_dir`` it writes the result
  files (:func:`agents.evaluation.report.write_results`).
- :func:`run_tournament` runs a validated config.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from itertools import combinations
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from tafl_env.rules import VARIANTS, make_rules

from ..base import Agent, AgentSpecError, make_agent, split_spec
from ..schema import (ConfigError, FieldSpec, apply_overrides, check_rule_options, check_schema, check_seed,
                      read_yaml_config)
from .play import agent_seeds, play_games
from .ratings import DEFAULT_BOOTSTRAP, DEFAULT_PRIOR_SD, elo_ratings
from .stats import attacker_score, pairing_table, side_table, wdl

__all__ = ["AgentSpecError", "TOURNAMENT_SCHEMA", "validate_tournament_config", "load_tournament_config",
           "leg_seed", "chunk_plan", "round_robin", "select_agents", "run_tournament", "build_agent"]


def build_agent(spec: str, seed: int | None) -> Agent:
    """``make_agent(spec, seed=seed)``; any failure is an :class:`AgentSpecError` naming the spec."""
    try:
        return make_agent(spec, seed=seed)
    except AgentSpecError:
        raise
    except (ValueError, OSError) as exc:
        raise AgentSpecError(f"cannot build agent {spec!r}: {exc}") from exc


# --- configs ----------------------------------------------------------------------------------------

def _agents_check(value: Mapping) -> str | None:
    if len(value) < 2:
        return "needs at least 2 agents"
    for name, spec in value.items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.+-]+", name):
            return f"agent name {name!r} must be text of letters, digits, _ . + -"
        if not isinstance(spec, str) or not spec:
            return f"agent {name!r}: the spec must be a string such as 'random' or 'mcts:64', got {spec!r}"
        try:
            kind, _ = split_spec(spec)   # agents registered by other modules are fine too
        except AgentSpecError as err:
            if str(err).startswith("unknown agent"):
                return (f"agent {name!r}: unknown kind {spec.partition(':')[0]!r} "
                        f"(random, greedy, mcts:N[:ROLLOUT[:PRIOR]], mcts:N:policy:PATH, policy:PATH)")
            return f"agent {name!r}: {err}"
        if kind == "mcts":   # let the factory judge N:ROLLOUT:PRIOR (and load a network's model)
            try:
                make_agent(spec)
            except ValueError as err:
                return f"agent {name!r}: {err}"
    return None


MAX_GAMES_PER_PAIR = 1_000_000
"""The most games a pair of agents plays (and the largest batch): a finite bound on the job."""

TOURNAMENT_SCHEMA: dict[str, FieldSpec] = {
    "variant": FieldSpec((str,), True, None, "variant id (tafl_env.VARIANTS)",
                         lambda v: None if v in VARIANTS else f"unknown variant {v!r}; one of {', '.join(VARIANTS)}"),
    "agents": FieldSpec((dict,), True, None,
                        "players: name -> agent spec (random | greedy | mcts:N[:ROLLOUT[:PRIOR]] | "
                        "mcts:N:policy:PATH | policy:PATH)",
                        _agents_check),
    "games_per_pair": FieldSpec((int,), True, None,
                                "games per pair of agents, half with each agent attacking (even, >= 2)",
                                lambda v: None if 2 <= v <= MAX_GAMES_PER_PAIR and v % 2 == 0
                                else f"must be an even int from 2 to {MAX_GAMES_PER_PAIR}, got {v}"),
    "seed": FieldSpec((int,), False, 0, "base seed; each pairing leg's seed is derived from it", check_seed),
    "max_turns": FieldSpec((int, type(None)), False, None,
                           "move cap in turns (a game reaching it is a truncated draw); null: the variant's default",
                           lambda v: None if v is None or v >= 1 else f"must be >= 1 or null, got {v}"),
    "output_dir": FieldSpec((str,), False, None,
                            "the folder of this config's recorded results (relative to the working "
                            "directory; default runs/tournaments/<variant>): only 'tafl eval --out' "
                            "given without a folder writes there; a plain 'tafl eval' writes a fresh "
                            "runs/tournaments/<variant>/<time>/",
                            lambda v: None if v.strip() else "must not be empty"),
    "options": FieldSpec((dict,), False, {}, "rule options (RULES.md) passed to make_rules", check_rule_options),
    "records": FieldSpec((bool,), False, False, "write records/ with one replayable move file per game", None),
    "gifs": FieldSpec((int,), False, 0, "animate the first game of up to this many pairing legs into gifs/",
                      lambda v: None if v >= 0 else f"must be >= 0, got {v}"),
    "fps": FieldSpec((int, float), False, 2, "frames (moves) per second of the GIFs",
                     lambda v: None if v > 0 else f"must be > 0, got {v}"),
    "batch_size": FieldSpec((int, type(None)), False, None,
                            "games played at once per leg; null: all of the leg's games in one batch",
                            lambda v: None if v is None or 1 <= v <= MAX_GAMES_PER_PAIR
                            else f"must be from 1 to {MAX_GAMES_PER_PAIR} or null, got {v}"),
    "bootstrap": FieldSpec((int,), False, DEFAULT_BOOTSTRAP,
                           "rating intervals: 0 for none, else 95% profile-likelihood intervals (the "
                           "number once counted bootstrap replicates; the intervals no longer resample)",
                           lambda v: None if v >= 0 else f"must be >= 0, got {v}"),
    "anchor": FieldSpec((str, type(None)), False, None,
                        "agent whose rating is fixed at 0; null: the ratings have mean 0", None),
    "prior_sd": FieldSpec((int, float), False, DEFAULT_PRIOR_SD,
                          "sd in Elo of the Gaussian prior on ratings and side advantage (tiny L2 term)",
                          lambda v: None if v >= 1 else f"must be >= 1 (Elo), got {v}"),
    "description": FieldSpec((str,), False, "", "free text", None),
}
"""The fields of a tournament config: types, whether required, default, meaning and range check."""



def validate_tournament_config(raw: Any, source: str = "tournament config") -> dict[str, Any]:
    """Check a parsed config against :data:`TOURNAMENT_SCHEMA`; return it with the defaults filled.

    Raises :class:`ConfigError` naming the field: an unknown key, a missing required field, a wrong
    type or a value out of range.

    >>> validate_tournament_config({"variant": "legacy_ard_ri", "agents": {"a": "random"},
    ...                             "games_per_pair": 2})
    Traceback (most recent call last):
    ...
    agents.schema.ConfigError: tournament config: field 'agents': needs at least 2 agents
    """
    out = check_schema(raw, TOURNAMENT_SCHEMA, source)
    if out["anchor"] is not None and out["anchor"] not in out["agents"]:
        raise ConfigError("anchor", f"{out['anchor']!r} is not one of the agents {list(out['agents'])}", source)
    try:
        make_rules(out["variant"], **out["options"], **({"max_turns": out["max_turns"]} if out["max_turns"] else {}))
    except ValueError as exc:
        raise ConfigError("options", str(exc), source) from None
    if out["output_dir"] is None:
        out["output_dir"] = f"runs/tournaments/{out['variant']}"
    return out



def load_tournament_config(path: str | os.PathLike, overrides: Mapping[str, Any] | None = None,
                           flags: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Read a YAML tournament config and validate it (:func:`validate_tournament_config`).

    ``overrides`` (field → value, ``None`` for not given) replace fields before validation, so a
    command-line value meets the same checks; ``flags`` names the option of each (for errors).
    """
    return apply_overrides(read_yaml_config(path), overrides or {}, flags or {},
                           validate_tournament_config, str(path))


# --- tournaments ----------------------------------------------------------------------------------

def leg_seed(seed: int, i: int, j: int) -> int:
    """The seed of the leg where agent ``i`` attacks agent ``j`` (indices in the config's order)."""
    return int(np.random.SeedSequence([int(seed), int(i), int(j)]).generate_state(1)[0])


def chunk_plan(seed: int, games: int, batch_size: int | None) -> list[tuple[int, int]]:
    """``(games, seed)`` of each chunk of a leg of ``games`` games with leg seed ``seed``.

    >>> chunk_plan(7, 5, 2)[0], len(chunk_plan(7, 5, 2)), chunk_plan(7, 5, None)
    ((2, 7), 3, [(5, 7)])
    """
    chunk = batch_size or games
    return [(min(chunk, games - start), seed if start == 0 else leg_seed(seed, start, 0))
            for start in range(0, games, chunk)]


def round_robin(variant: str, agents: Mapping[str, str], games_per_pair: int, seed: int = 0, *,
                max_turns: int | None = None, options: Mapping[str, Any] | None = None,
                out_dir: str | os.PathLike | None = None, records: bool = False, gifs: int = 0,
                fps: float = 2, batch_size: int | None = None, bootstrap: int = DEFAULT_BOOTSTRAP,
                anchor: str | None = None, prior_sd: float = DEFAULT_PRIOR_SD, progress: bool = True,
                config: Mapping[str, Any] | None = None,
                agent_factory: Callable[[str, int], Agent] | None = None,
                executor: Callable[..., list] | None = None) -> dict[str, Any]:
    """Every pair of agents plays ``games_per_pair`` games, half with each agent attacking.

    Leg (A attacks B) gets the seed :func:`leg_seed` ``(seed, i, j)``; its agents are built afresh
    by ``make_agent(spec, seed=...)`` with the seeds :func:`agent_seeds` of the leg seed (or by
    ``agent_factory(spec, seed)``), so each leg is reproducible on its own. A leg is played in
    chunks of ``batch_size`` games (all at once when ``None``), chunk ``k`` with its own seed
    (:func:`chunk_plan`), which resets both agents: a chunk's games depend on nothing played
    before it. ``executor(rules, legs, record, on_chunk)`` may play the chunks elsewhere (``legs``:
    one ``(attacker_spec, attacker_seed, defender_spec, defender_seed, chunks)`` per leg; it
    returns each leg's ``(results, seconds, timing)`` and calls ``on_chunk(games)`` as chunks
    finish): :mod:`agents.rllib.ray_games` runs them as Ray tasks, with the same results (only
    the timings differ). Returns the content of ``results.json``; with ``out_dir`` writes the
    result files (module docstring).
    """
    from tqdm import tqdm

    if games_per_pair < 2 or games_per_pair % 2:
        raise ValueError(f"games_per_pair must be an even int >= 2 (half each way round), got {games_per_pair}")
    names = list(agents)
    if len(names) < 2:
        raise ValueError("a round robin needs at least 2 agents")
    options = dict(options or {})
    rule_opts = dict(options, **({"max_turns": max_turns} if max_turns is not None else {}))
    rules = make_rules(variant, **rule_opts)
    factory = agent_factory or build_agent
    notes = []
    for name in names:  # every agent must build, and accept the rules, before any game is played
        try:
            note = factory(agents[name], 0).check_rules(rules)
        except AgentSpecError as exc:
            raise AgentSpecError(f"agent {name!r}: {exc}") from exc
        if note:
            notes.append(f"agent {name!r}: {note}")
    if out_dir is not None:  # and the output must be writable, so no result is lost at the end
        from .report import check_output_dir

        check_output_dir(out_dir)
    half = games_per_pair // 2
    want_moves = records or gifs > 0
    legs = []
    thinking: dict[str, list] = {}   # agent -> [seconds in act, moves chosen]
    games: list[dict[str, Any]] = []
    n_legs = len(names) * (len(names) - 1)
    t_start = time.perf_counter()
    bar = tqdm(total=n_legs * half, desc=f"{variant} round robin", unit="game", disable=not progress,
               dynamic_ncols=True)
    plan = []
    for a, b in combinations(range(len(names)), 2):
        for i, j in ((a, b), (b, a)):
            s = leg_seed(seed, i, j)
            sa, sd = agent_seeds(s)
            plan.append((i, j, s, (agents[names[i]], sa, agents[names[j]], sd, chunk_plan(s, half, batch_size))))
    try:
        if executor is None:
            played = []
            for i, j, s, (att_spec, sa, dfd_spec, sd, chunks) in plan:
                att = factory(att_spec, sa)
                dfd = factory(dfd_spec, sd)
                bar.set_postfix_str(f"{names[i]} (att) vs {names[j]} (def)")
                t0 = time.perf_counter()
                results = []
                timing: dict[str, list] = {}
                for n, chunk_seed in chunks:
                    part = play_games(rules, att, dfd, n, seed=chunk_seed, record=want_moves, timing=timing)
                    results.extend(part)
                    bar.update(len(part))
                played.append((results, time.perf_counter() - t0, timing))
        else:
            played = executor(rules, [leg for _, _, _, leg in plan], want_moves, bar.update)
        for (i, j, s, _), (results, seconds, timing) in zip(plan, played):
            leg = {"leg": len(legs), "attacker": names[i], "defender": names[j],
                   "attacker_spec": agents[names[i]], "defender_spec": agents[names[j]],
                   "seed": s, "games": half, "first_game": len(games),
                   "seconds": round(seconds, 3)}
            for side, name in (("attacker", names[i]), ("defender", names[j])):
                secs, moves = timing.get(side, (0.0, 0))
                leg[f"{side}_think_seconds"] = round(secs, 3)
                leg[f"{side}_moves"] = moves
                spent = thinking.setdefault(name, [0.0, 0])
                spent[0] += secs
                spent[1] += moves
            legs.append(leg)
            for r in results:
                row = {"game": len(games), "leg": leg["leg"], "attacker": names[i], "defender": names[j],
                       "attacker_spec": agents[names[i]], "defender_spec": agents[names[j]],
                       "seed": s, "index_in_leg": r["game"], "result": r["result"],
                       "reason": r["reason"], "turns": r["turns"],
                       "attacker_score": attacker_score(r["result"])}
                if want_moves:
                    row["moves"] = r["moves"]
                games.append(row)
    finally:
        bar.close()
    ratings = elo_ratings(games, names, anchor=anchor, bootstrap=bootstrap, seed=seed, prior_sd=prior_sd)
    side_totals = {"games": len(games), **wdl([g["attacker_score"] for g in games])}
    result = {
        "config": dict(config) if config is not None else {
            "variant": variant, "agents": dict(agents), "games_per_pair": games_per_pair, "seed": seed,
            "max_turns": max_turns, "options": options, "records": records, "gifs": gifs,
            "batch_size": batch_size, "bootstrap": bootstrap, "anchor": anchor, "prior_sd": prior_sd},
        "variant": variant,
        "rules": {"max_turns": rules.max_turns, "options": options},
        "agents": dict(agents),
        "seed": seed,
        "seconds": round(time.perf_counter() - t_start, 3),
        "scoring": "win 1, draw 1/2 (a truncated game is a draw), loss 0; win_rate counts wins only; "
                   "intervals: Wilson 95%",
        "legs": legs,
        "attacker_results": side_totals,
        "pairings": pairing_table(games, names),
        "sides": side_table(games, names),
        "ratings": ratings,
        "time_per_move": {name: {"moves": thinking.get(name, [0, 0])[1],
                                 "seconds": round(thinking.get(name, [0, 0])[0], 3),
                                 "ms_per_move": round(1000 * thinking[name][0] / thinking[name][1], 3)
                                 if thinking.get(name, [0, 0])[1] else None}
                          for name in names},
        "notes": notes,
        "games": [{k: v for k, v in g.items() if k != "moves"} for g in games],
    }
    if out_dir is not None:
        result["out_dir"] = str(out_dir)
        from .report import write_results

        write_results(result, games, out_dir, rules=rules, records=records, gifs=gifs, fps=fps)
    return result



# --- running a config -----------------------------------------------------------------------------

def select_agents(config: Mapping[str, Any], agents: Sequence[str] | None) -> dict[str, Any]:
    """The config with only ``agents`` (names of its agents, in the config's order) left to play."""
    cfg = dict(config)
    if not agents:
        return cfg
    unknown = [a for a in agents if a not in cfg["agents"]]
    if unknown:
        raise ConfigError("agents", f"unknown agent(s) {unknown}; the config has {list(cfg['agents'])}",
                          "--agents (command line)")
    cfg["agents"] = {a: cfg["agents"][a] for a in cfg["agents"] if a in agents}
    if len(cfg["agents"]) < 2:
        raise ConfigError("agents", "at least 2 agents must be selected", "--agents (command line)")
    if cfg["anchor"] not in cfg["agents"]:
        cfg["anchor"] = None
    return cfg


def run_tournament(config: Mapping[str, Any], *, games_per_pair: int | None = None,
                   out_dir: str | os.PathLike | None = None, agents: Sequence[str] | None = None,
                   progress: bool = True) -> dict[str, Any]:
    """Run a validated config (:func:`load_tournament_config`), with optional overrides.

    The results go to ``out_dir``; by default to a fresh folder
    ``runs/tournaments/<variant>/<time>`` (:func:`agents.evaluation.report.fresh_run_dir`), never over the
    recorded results that a config's ``output_dir`` names (pass ``out_dir=config["output_dir"]``
    to write there).
    """
    from .report import fresh_run_dir

    cfg = dict(config)
    if games_per_pair is not None:
        if games_per_pair < 2 or games_per_pair % 2:
            raise ConfigError("games_per_pair", f"must be an even int >= 2, got {games_per_pair}",
                              "--games (command line)")
        cfg["games_per_pair"] = games_per_pair
    cfg = select_agents(cfg, agents)
    out = Path(out_dir) if out_dir is not None else fresh_run_dir(cfg["variant"])
    return round_robin(cfg["variant"], cfg["agents"], cfg["games_per_pair"], cfg["seed"],
                       max_turns=cfg["max_turns"], options=cfg["options"], out_dir=out,
                       records=cfg["records"], gifs=cfg["gifs"], fps=cfg["fps"], batch_size=cfg["batch_size"],
                       bootstrap=cfg["bootstrap"], anchor=cfg["anchor"], prior_sd=cfg["prior_sd"],
                       progress=progress, config=cfg)
