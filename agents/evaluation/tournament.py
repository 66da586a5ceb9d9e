"""Round-robin tournaments: configs, openings, chunks and the run.

- :func:`load_tournament_config` reads and validates a YAML tournament config
  (``configs/tournaments/*.yaml``) against :data:`TOURNAMENT_SCHEMA`; command-line overrides
  meet the same checks (:func:`agents.schema.apply_overrides`).
- :func:`round_robin` plays every pair of agents both ways round (half the games each way) from an
  opening suite, in chunks (:class:`~agents.evaluation.matches.Chunk`) that a
  :class:`~agents.evaluation.matches.ChunkRunner` plays here, in ``jobs`` worker processes or as
  Ray tasks, with the same games every way, and computes the tables (:mod:`agents.evaluation.stats`) and
  ratings (:mod:`agents.evaluation.ratings`); with ``out_dir`` it writes the result files
  (:func:`agents.evaluation.report.write_results`).
- :func:`run_tournament` runs a validated config.

**Openings.** Game ``g`` of the leg "A attacks B" and game ``g`` of "B attacks A" start from the
same opening, ``g`` cycling through the suite (the variant's shipped one by default,
:mod:`agents.evaluation.openings`): each opening is played once with each agent on each side, and
two agents that choose deterministically still play distinct games (one per opening). With
``openings: start`` every game starts from the variant's start position.

**Chunks and seeds.** A leg is split into chunks of ``batch_size`` games (:data:`CHUNK` when it
is null); chunk ``k`` of "A attacks B" has the seed :func:`~agents.evaluation.matches.chunk_seed`
``(seed, A, B, k)`` (the agents' names, not their places in the list), from which both agents are
reset before its first move. A chunk's games therefore depend on nothing played before it or
elsewhere: ``jobs`` 1 or N or Ray give the same games, and a pair's games do not change when
other agents are added or left out (``--agents``).
"""

from __future__ import annotations

import os
import re
import time
from contextlib import ExitStack
from pathlib import Path
from itertools import combinations
from typing import Any, Callable, Mapping, Sequence

from tafl_env.rules import VARIANTS, make_rules

from ..base import Agent, AgentSpecError, check_data_spec
from ..schema import (ConfigError, FieldSpec, apply_overrides, check_rule_options, check_schema, check_seed,
                      read_yaml_config)
from ..checks import check_int
from .anchors import BLOCK
from .matches import Chunk, ChunkResult, ChunkRunner, build_agent, check_picklable, chunk_seed
from .openings import check_openings, load_openings
from .ratings import DEFAULT_BOOTSTRAP, DEFAULT_PRIOR_SD, elo_ratings
from .stats import attacker_score, pairing_table, side_table, wdl

__all__ = ["AgentSpecError", "TOURNAMENT_SCHEMA", "CHUNK", "validate_tournament_config", "load_tournament_config",
           "tournament_openings", "leg_chunks", "round_robin", "select_agents", "run_tournament", "build_agent"]

CHUNK = BLOCK
"""Games per chunk when ``batch_size`` is null: as many as a rating's block of openings
(:data:`agents.evaluation.anchors.BLOCK`), small enough that worker processes or Ray share a leg's
games out, large enough that a batched agent plays several games a call."""


# --- configs ----------------------------------------------------------------------------------------

def _agents_check(value: Mapping) -> str | None:
    """Each agent's name is a plain word and its spec reads (:class:`~agents.spec.AgentSpec`) and
    asks for no unpickling; nothing is built (the run builds every agent before its first game)."""
    if len(value) < 2:
        return "needs at least 2 agents"
    for name, spec in value.items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.+-]+", name):
            return f"agent name {name!r} must be text of letters, digits, _ . + -"
        if not isinstance(spec, str) or not spec:
            return f"agent {name!r}: the spec must be a string such as 'random' or 'mcts:64', got {spec!r}"
        try:
            check_data_spec(spec, f"agent {name!r}")    # a config file never opts in to unpickling
        except AgentSpecError as err:
            return str(err)
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
    "seed": FieldSpec((int,), False, 0, "base seed; each chunk's seed is derived from it, the two agents' "
                      "names and the chunk's place in its leg", check_seed),
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
    "records": FieldSpec((bool,), False, False,
                         "write records/ with one replayable move file per game (and its OpenTafl .otg)", None),
    "gifs": FieldSpec((int,), False, 0, "animate the first game of up to this many pairing legs into gifs/",
                      lambda v: None if v >= 0 else f"must be >= 0, got {v}"),
    "fps": FieldSpec((int, float), False, 2, "frames (moves) per second of the GIFs",
                     lambda v: None if v > 0 else f"must be > 0, got {v}"),
    "batch_size": FieldSpec((int, type(None)), False, None,
                            f"games per chunk (played at once, in one batched state); null: {CHUNK}",
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
    "openings": FieldSpec((str,), False, "suite",
                          "where the games start: 'suite' (the variant's shipped opening suite), 'start' (the "
                          "variant's start position) or the path of an opening suite file; a pair plays "
                          "opening g once each way round",
                          lambda v: None if v.strip() else "must not be empty"),
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
    try:
        tournament_openings(out["variant"], out["openings"])
    except (OSError, ValueError) as exc:
        raise ConfigError("openings", " ".join(str(exc).split()), source) from None
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

def tournament_openings(variant: str, openings: str | os.PathLike | Sequence[Sequence[str]] = "suite"
                        ) -> list[list[str]] | None:
    """The move lists of the openings a tournament plays (``None``: every game from the start).

    ``openings``: ``"suite"`` (the variant's shipped suite, :func:`~.openings.load_openings`),
    ``"start"``, the path of a suite file (relative to the working directory) or the move lists
    themselves. A missing or bad suite is a ``FileNotFoundError`` or ``ValueError`` of one line.

    >>> tournament_openings("legacy_ard_ri", "start") is None
    True
    >>> len(tournament_openings("legacy_ard_ri")) >= 32
    True
    """
    if isinstance(openings, str) and openings == "start":
        return None
    if isinstance(openings, str) and openings == "suite":
        return load_openings(variant)
    if isinstance(openings, (str, os.PathLike)):
        path = Path(openings)
        if not path.is_file():
            raise FileNotFoundError(f"'suite', 'start' or an opening suite file; no file {str(path)[:200]!r}")
        return load_openings(variant, path)
    return check_openings(variant, openings, "openings")


def leg_chunks(players: Mapping[str, Any], attacker: str, defender: str, games: int, seed: int,
               suite: Sequence[Sequence[str]] | None, size: int, record: bool = False) -> list[Chunk]:
    """The chunks of the leg ``attacker`` attacks ``defender``: ``games`` games in chunks of ``size``,
    game ``g`` from opening ``g`` modulo the suite's length (the start when ``suite`` is None),
    chunk ``k`` with the seed ``chunk_seed(seed, attacker, defender, k)``. ``players`` maps a name
    to what plays (a spec or an agent object).

    >>> [(c.openings, c.block) for c in leg_chunks({"a": "random", "b": "random"}, "a", "b", 5, 0,
    ...                                            [["c3-c2"], ["e3-e2"]], 2)]
    [((0, 1), 0), ((0, 1), 1), ((0,), 2)]
    """
    out = []
    for k, first in enumerate(range(0, games, size)):
        index = range(first, min(games, first + size))
        if suite is None:
            ids: tuple = tuple(None for _ in index)
            moves: tuple = tuple(() for _ in index)
        else:
            ids = tuple(g % len(suite) for g in index)
            moves = tuple(tuple(suite[i]) for i in ids)
        out.append(Chunk(f"{attacker}>{defender}:{k}", attacker, defender, players[attacker], players[defender],
                         ids, moves, k, chunk_seed(seed, attacker, defender, k), record))
    return out


def round_robin(variant: str, agents: Mapping[str, str], games_per_pair: int, seed: int = 0, *,
                max_turns: int | None = None, options: Mapping[str, Any] | None = None,
                out_dir: str | os.PathLike | None = None, records: bool = False, gifs: int = 0,
                fps: float = 2, batch_size: int | None = None, bootstrap: int = DEFAULT_BOOTSTRAP,
                anchor: str | None = None, prior_sd: float = DEFAULT_PRIOR_SD, progress: bool = True,
                config: Mapping[str, Any] | None = None,
                agent_factory: Callable[[str, int], Agent] | None = None,
                openings: str | os.PathLike | Sequence[Sequence[str]] = "suite", jobs: int = 1,
                ray: bool | str = False) -> dict[str, Any]:
    """Every pair of agents plays ``games_per_pair`` games, half with each agent attacking.

    The games start from ``openings`` (:func:`tournament_openings`; game ``g`` of both legs of a
    pair from the same opening) and are played in chunks of ``batch_size`` games (:data:`CHUNK`
    when ``None``), each reset from its own seed (:func:`leg_chunks`; module docstring), by a
    :class:`~agents.evaluation.matches.ChunkRunner`: here (``jobs == 1``), in ``jobs`` worker
    processes, or as Ray tasks (``ray``: ``True`` for a local Ray or $RAY_ADDRESS, or an
    address); the games, tables and ratings are the same every way (only the timings differ).

    An agent is its spec, built where its chunks play; with ``agent_factory(spec, seed)`` the
    object it returns plays instead (a fresh copy each chunk; one that cannot be pickled plays
    itself, with ``jobs == 1`` and no Ray only).

    Returns the content of ``results.json``: per leg its first chunk's ``seed``, its ``chunks``
    and ``seconds`` (its chunks' playing time, summed); per game its chunk's ``seed``, its
    ``chunk`` and ``index_in_leg``, its ``opening`` (the suite's id, ``None`` from the start) and
    the outcome. With ``out_dir`` writes the result files (module docstring).
    """
    from tqdm import tqdm

    if games_per_pair < 2 or games_per_pair % 2:
        raise ValueError(f"games_per_pair must be an even int >= 2 (half each way round), got {games_per_pair}")
    names = list(agents)
    if len(names) < 2:
        raise ValueError("a round robin needs at least 2 agents")
    jobs = check_int("jobs", jobs, low=1, high=1024)
    if not isinstance(ray, (bool, str)):
        raise TypeError(f"ray must be True, False or an address, got {ray!r}")
    if batch_size is not None:
        batch_size = check_int("batch_size", batch_size, low=1, high=MAX_GAMES_PER_PAIR)
    options = dict(options or {})
    rule_opts = dict(options, **({"max_turns": max_turns} if max_turns is not None else {}))
    rules = make_rules(variant, **rule_opts)
    suite = tournament_openings(variant, openings)
    factory = agent_factory or build_agent
    notes = []
    built: dict[str, Agent] = {}
    for name in names:  # every agent must build, and accept the rules, before any game is played
        try:
            built[name] = factory(agents[name], 0)
            note = built[name].check_rules(rules)
        except AgentSpecError as exc:
            raise AgentSpecError(f"agent {name!r}: {exc}") from exc
        if note:
            notes.append(f"agent {name!r}: {note}")
    # a spec is built again where its chunks play (once per process); a factory's object is copied there
    players: dict[str, Any] = built if agent_factory is not None else dict(agents)
    if agent_factory is None:
        built.clear()
    if agent_factory is not None and (jobs > 1 or ray):
        for name in names:
            check_picklable(built[name], f"agent {name!r}")
    if out_dir is not None:  # and the output must be writable, so no result is lost at the end
        from .report import check_output_dir

        check_output_dir(out_dir)
    half = games_per_pair // 2
    want_moves = records or gifs > 0
    size = batch_size or CHUNK
    plan = []       # (attacker, defender, chunks) per leg
    for a, b in combinations(range(len(names)), 2):
        for i, j in ((a, b), (b, a)):
            plan.append((names[i], names[j],
                         leg_chunks(players, names[i], names[j], half, seed, suite, size, want_moves)))
    t_start = time.perf_counter()
    bar = tqdm(total=len(plan) * half, desc=f"{variant} round robin", unit="game", disable=not progress,
               dynamic_ncols=True)

    def chunk_done(res: ChunkResult) -> None:
        bar.set_postfix_str(f"{res.chunk.attacker} (att) vs {res.chunk.defender} (def)", refresh=False)
        bar.update(len(res.games))

    session = None
    try:
        with ExitStack() as stack:
            if ray:
                from ..ray_session import check_address, ray_session, resolve_address

                address = resolve_address(ray if isinstance(ray, str) and ray else None)
                if address is not None:
                    check_address(address)
                session = stack.enter_context(ray_session(address))
            runner = stack.enter_context(ChunkRunner(rules, jobs, bool(ray)))
            done = runner.run([c for _, _, chunks in plan for c in chunks], on_done=chunk_done)
    finally:
        bar.close()
    legs = []
    thinking: dict[str, list] = {}   # agent -> [seconds in act, moves chosen]
    games: list[dict[str, Any]] = []
    results = iter(done)
    for attacker, defender, chunks in plan:
        parts = [next(results) for _ in chunks]
        leg = {"leg": len(legs), "attacker": attacker, "defender": defender,
               "attacker_spec": agents[attacker], "defender_spec": agents[defender],
               "seed": chunks[0].seed, "chunks": len(chunks), "games": half, "first_game": len(games),
               "seconds": round(sum(p.seconds for p in parts), 3)}
        for side, name in (("attacker", attacker), ("defender", defender)):
            secs = sum(p.timing.get(side, (0.0, 0))[0] for p in parts)
            moves = sum(p.timing.get(side, (0.0, 0))[1] for p in parts)
            leg[f"{side}_think_seconds"] = round(secs, 3)
            leg[f"{side}_moves"] = moves
            spent = thinking.setdefault(name, [0.0, 0])
            spent[0] += secs
            spent[1] += moves
        legs.append(leg)
        for part in parts:
            for k, r in enumerate(part.games):
                row = {"game": len(games), "leg": leg["leg"], "attacker": attacker, "defender": defender,
                       "attacker_spec": agents[attacker], "defender_spec": agents[defender],
                       "seed": part.chunk.seed, "chunk": part.chunk.block,
                       "index_in_leg": len(games) - leg["first_game"], "opening": r["opening"],
                       "result": r["result"], "reason": r["reason"], "turns": r["turns"],
                       "attacker_score": attacker_score(r["result"])}
                if want_moves:
                    row["moves"] = r["moves"]
                games.append(row)
    ratings = elo_ratings(games, names, anchor=anchor, bootstrap=bootstrap, seed=seed, prior_sd=prior_sd)
    side_totals = {"games": len(games), **wdl([g["attacker_score"] for g in games])}
    source = str(openings) if isinstance(openings, (str, os.PathLike)) else "given move lists"
    result = {
        "config": dict(config) if config is not None else {
            "variant": variant, "agents": dict(agents), "games_per_pair": games_per_pair, "seed": seed,
            "max_turns": max_turns, "options": options, "records": records, "gifs": gifs,
            "batch_size": batch_size, "bootstrap": bootstrap, "anchor": anchor, "prior_sd": prior_sd,
            "openings": source},
        "variant": variant,
        "rules": {"max_turns": rules.max_turns, "options": options},
        "agents": dict(agents),
        "seed": seed,
        "openings": {"source": source, "count": 0 if suite is None else len(suite)},
        "chunk_size": size,
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
    if session is not None:
        result["ray"] = {"address": session["address"], "cpus": session["cpus"]}
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
                   progress: bool = True, jobs: int = 1, ray: bool | str = False) -> dict[str, Any]:
    """Run a validated config (:func:`load_tournament_config`), with optional overrides; ``jobs``
    worker processes or Ray (``ray``: ``True`` or an address) play its chunks (:func:`round_robin`).

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
                       progress=progress, config=cfg, openings=cfg.get("openings", "suite"), jobs=jobs, ray=ray)
