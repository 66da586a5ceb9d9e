"""Anchors: the agents whose ratings are fixed, per variant, and the command that builds them.

A rating means the same thing tomorrow and on another machine only against a fixed yardstick. Each
variant has a ladder of **anchors** (:data:`ANCHORS`): the uniformly random agent, the greedy
agent, the compiled MCTS (greedy evaluator) at rising simulation budgets up to one that takes at
least half a second a move on a 2-core machine, and the shipped policy ``policy:<variant>``.
Simulation budgets, not times, define them: a simulation is the same work on any machine.

**Their ratings** come from one reproducible command, a paired round robin from the variant's
opening suite (:mod:`.openings`) at the rules' default move cap::

    python -m agents.evaluation.anchors build VARIANT [--jobs N] [--max-minutes M] [--target-ci 50]
    python -m agents.evaluation.anchors fit VARIANT      # the anchor file from the record alone

It plays in **rounds**. Round ``r`` plays opening block ``r mod B`` (blocks of
:data:`BLOCK` openings; ``B`` blocks in the suite, then the suite again with new seeds), each
opening twice, once with each agent attacking, for every pair of anchors that the round
schedules: pairs of neighbours in the ladder's order every round, pairs two apart every second
round, the others every eighth (:func:`schedule`): neighbours' games carry the most information,
and far pairs (random against the top search) are one-sided, so they are played only to check the
order.
Every chunk's seed comes from the build's seed, the two anchors, the side and the round
(:func:`agents.evaluation.matches.chunk_seed`), so the games do not depend on ``--jobs``. A worker
that would wait for its round's last long chunk starts on the next round's chunks (the fit of a
round waits for the whole round; a next round's chunks played when the target is met stay in the
record, unfitted).

The build is **resumable**: each finished chunk is appended to ``results/anchors/<variant>/games.jsonl``
(a first line records the settings; a run with other settings refuses to continue it), and a later
run plays on from the first chunk not in the file. A ladder can **grow at its top**: a run whose
anchors are the recorded ones followed by new ones (say ``mcts:20000``) keeps every recorded game
and plays the new anchors' games of every round (``--add NAME=SPEC``; later builds continue the
grown ladder, and :data:`SEARCH_BUDGETS` takes the new anchor when its file ships). It stops after the
round at which every anchor's 95% interval is at most ``±target_ci`` Elo (the random agent's
excepted: :data:`UNBOUNDED`), or at ``--max-minutes`` (no chunk starts after it; the running
ones finish and are kept), fits the ratings
(:func:`agents.evaluation.ratings.elo_ratings`: Bradley–Terry with a side term, profile intervals)
with **greedy pinned at 1000** (:data:`PIN`), and only then writes the anchor file
``agents/evaluation/data/anchors/<variant>.json`` at once (a temporary file renamed). The file
records the command, seed, games, rounds, time, machine, whether the interval target was met and
whether the search rungs climb with their budgets (:func:`out_of_order` names any that do not).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import math
import os
import platform
import re
import sys
import time
from pathlib import Path
from typing import Any

from tafl_env.rules import VARIANTS, make_rules

from tafl_env.cli import MAX_SEED

from ..base import check_data_spec, parse_data_spec
from ..checks import check_int, check_number
from ..spec import AgentSpec, AgentSpecError
from .matches import Chunk, ChunkResult, ChunkRunner, chunk_seed
from .openings import DATA_DIR, load_openings, openings_path, write_json_atomic
from .ratings import elo_ratings

__all__ = ["ANCHORS", "SEARCH_BUDGETS", "PIN", "BLOCK", "anchors_path", "games_path", "load_anchors",
           "check_anchor_table", "schedule",
           "round_chunks", "build_anchors", "fit_anchors", "out_of_order",
           "describe_out_of_order"]

PIN = ("greedy", 1000.0)
"""The pinned anchor and its rating: every rating of the benchmark is relative to it."""

BLOCK = 8
"""Openings per block: a chunk plays one block, one agent attacking."""

SEARCH_BUDGETS: dict[str, tuple[int, ...]] = {
    "legacy_alea_evangelii": (10, 30, 100, 300),
    "legacy_tawlbwrdd": (10, 30, 100, 1000, 5000),
    "historical_tablut": (10, 30, 100, 1000, 5000),
    "legacy_ard_ri": (10, 30, 100, 1000, 5000, 20000),
    "legacy_berserk": (10, 30, 100, 300, 1000, 3000),
}
"""The MCTS rungs of each variant's ladder, simulations a move (budgets, not seconds, so that an
anchor is the same player on any machine). ``mcts:10`` and ``mcts:30`` bridge greedy and
``mcts:100``, which won every game against greedy in Legacy Ard Ri (a gap the games cannot
measure) and 0.91 against ``mcts:10``. The top is the first budget at or above about half a second
a move over whole games on the 2-core machine of benchmarks/RESULTS.md (the anchor file records
each anchor's mean time per move): ``mcts:5000`` in Tablut and Tawlbwrdd (0.8 s a move in
Tablut's opening, 0.66 s over whole Tawlbwrdd games); in Legacy Ard Ri, whose 7×7 searches are quick
(``mcts:5000`` 0.17 s a move), ``mcts:20000`` (0.59 s); in Berserk, whose moves cost several times
Tablut's, ``mcts:3000`` (0.5 s; ``mcts:1000`` took 0.19 s, so the record grew this rung with
``--add``), with ``mcts:300`` between ``mcts:1000`` and ``mcts:100``. In Alea Evangelii, whose
19×19 searches cost most and whose games between searches often run to the 500-turn cap,
``mcts:300`` already takes the half second (0.52 s a move over its record's first 48 games;
``mcts:100`` 0.2 s). A recorded ladder grows at its top with ``--add`` (the new rung belongs here too);
any other change needs a fresh record."""

ANCHORS: dict[str, dict[str, str]] = {
    variant: {"random": "random", "policy": f"policy:{variant}", "greedy": "greedy",
              **{f"mcts{n}": f"mcts:{n}" for n in SEARCH_BUDGETS[variant]}}
    for variant in VARIANTS
}
"""Anchor name → agent spec per variant, in the ladder's expected order of strength (the order
that decides which pairs are neighbours; the shipped policies score about ½ or less against
greedy now): random, the shipped policy, greedy (:data:`PIN`), then the MCTS rungs of
:data:`SEARCH_BUDGETS`."""


def anchors_path(variant: str) -> Path:
    """The shipped anchor file of ``variant``."""
    return DATA_DIR / "anchors" / f"{variant}.json"


def games_path(variant: str, root: str | os.PathLike = "results/anchors") -> Path:
    """The build's record of finished chunks (one JSON line each)."""
    return Path(root) / variant / "games.jsonl"


def load_anchors(variant: str, path: str | os.PathLike | None = None) -> dict[str, Any]:
    """The anchor file of ``variant``: ``anchors`` (``name``, ``spec``, ``rating``, ``low``, ``high``,
    ``games`` …), ``side_advantage`` (Elo), ``pin`` and how it was built.

    >>> a = load_anchors("legacy_ard_ri")
    >>> a["pin"], sorted(x["name"] for x in a["anchors"])[:2]
    ({'name': 'greedy', 'rating': 1000.0}, ['greedy', 'mcts10'])
    """
    file = Path(path) if path is not None else anchors_path(variant)
    if not file.is_file():
        raise FileNotFoundError(f"no anchors for {variant} ({file}); build them with: "
                                f"python -m agents.evaluation.anchors build {variant}")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"cannot read the anchor file {file}: {exc}") from None
    return check_anchor_table(data, variant, str(file))


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_anchor_table(data: object, variant: str, where: str = "the anchors") -> dict[str, Any]:
    """``data`` if it is an anchor table of ``variant`` that rating can use: ``anchors``, a list of
    at least two ``{"name", "spec", "rating"}`` (names unique, ratings finite, specs that a data
    file may name: :func:`agents.base.check_data_spec`), and ``side_advantage.elo`` finite; else a
    ``ValueError`` of one line naming ``where`` and the field.

    >>> check_anchor_table({"variant": "legacy_ard_ri", "anchors": []}, "legacy_ard_ri", "x.json")
    Traceback (most recent call last):
    ...
    ValueError: x.json: 'anchors' must be a non-empty list of anchors, got []
    """
    if not isinstance(data, dict):
        raise ValueError(f"{where}: an anchor table is a JSON object, got {type(data).__name__}")
    if data.get("variant", variant) != variant:
        raise ValueError(f"{where} holds the anchors of {data.get('variant')!r}, not {variant!r}")
    rows = data.get("anchors")
    if not isinstance(rows, list) or not rows:
        raise ValueError(f"{where}: 'anchors' must be a non-empty list of anchors, got {str(rows)[:60]}")
    names = set()
    for k, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ValueError(f"{where}: anchor {k} is not an object")
        name = row.get("name")
        if not isinstance(name, str) or not name or name in names:
            raise ValueError(f"{where}: anchor {k} needs a unique non-empty 'name', got {str(name)[:60]!r}")
        names.add(name)
        check_data_spec(row.get("spec"), f"{where}, anchor {name!r}")
        if not _finite(row.get("rating")):
            raise ValueError(f"{where}: anchor {name!r} needs a finite 'rating', got {str(row.get('rating'))[:60]}")
    side = data.get("side_advantage")
    if not isinstance(side, dict) or not _finite(side.get("elo")):
        raise ValueError(f"{where}: 'side_advantage' must be an object with a finite 'elo'")
    return data


def schedule(names: list[str], round_: int) -> list[tuple[str, str]]:
    """The pairs of anchors (in ladder order) that round ``round_`` plays.

    >>> schedule(["a", "b", "c", "d"], 0)
    [('a', 'b'), ('a', 'c'), ('a', 'd'), ('b', 'c'), ('b', 'd'), ('c', 'd')]
    >>> schedule(["a", "b", "c", "d"], 1)
    [('a', 'b'), ('b', 'c'), ('c', 'd')]
    >>> schedule(["a", "b", "c", "d"], 2)
    [('a', 'b'), ('a', 'c'), ('b', 'c'), ('b', 'd'), ('c', 'd')]
    >>> len(schedule(["a", "b", "c", "d"], 4)), len(schedule(["a", "b", "c", "d"], 8))
    (5, 6)
    """
    every = lambda distance: 1 if distance == 1 else 2 if distance == 2 else 8
    return [(a, b) for i, a in enumerate(names) for j, b in enumerate(names)
            if i < j and round_ % every(j - i) == 0]


def round_chunks(variant: str, anchors: dict[str, str], suite: list[list[str]], seed: int,
                 round_: int) -> list[Chunk]:
    """The chunks of round ``round_``: per scheduled pair, each agent attacking once on the round's
    opening block."""
    blocks = max(1, len(suite) // BLOCK)
    block = round_ % blocks
    ids = tuple(range(block * BLOCK, min(len(suite), (block + 1) * BLOCK)))
    moves = tuple(tuple(suite[i]) for i in ids)
    out = []
    for a, b in schedule(list(anchors), round_):
        for att, dfd in ((a, b), (b, a)):
            out.append(Chunk(f"r{round_}:{att}>{dfd}", att, dfd, anchors[att], anchors[dfd], ids, moves,
                             round_, chunk_seed(seed, att, dfd, round_)))
    return out


def _suite_digest(variant: str) -> str:
    return hashlib.sha256(openings_path(variant).read_bytes()).hexdigest()[:16]


def _settings(variant: str, anchors: dict[str, str], seed: int) -> dict[str, Any]:
    rules = make_rules(variant)
    return {"variant": variant, "anchors": anchors, "seed": seed, "max_turns": rules.max_turns,
            "block": BLOCK, "openings_sha256": _suite_digest(variant)}


def _recorded_settings(path: Path) -> dict[str, Any] | None:
    """The settings on the first line of a build's record, if there is one (checked: a first line
    that is not a settings object is an error naming the file)."""
    if not path.is_file():
        return None
    with path.open(encoding="utf-8") as f:
        first = f.readline()
    return _settings_line(first, path) if first.strip() else None


def _settings_line(line: str, path: Path) -> dict[str, Any]:
    try:
        head = json.loads(line)
    except ValueError:
        head = None
    settings = head.get("settings") if isinstance(head, dict) else None
    if not isinstance(settings, dict) or not isinstance(settings.get("anchors"), dict):
        raise ValueError(f"{path}, line 1: not a build's settings line ({line.strip()[:60]!r}); "
                         "move the file away to start afresh")
    return settings


RESULTS = ("attacker", "defender", "draw")


def _check_row(row: object, anchors: dict[str, str]) -> str | None:
    """What is wrong with a record line read back (``None``: nothing): a chunk of two anchors of
    the ladder with its seed, time, timing per side and games."""
    if not isinstance(row, dict):
        return f"a chunk is a JSON object, got {type(row).__name__}"
    if not isinstance(row.get("key"), str):
        return "no 'key'"
    for side in ("attacker", "defender"):
        if row.get(side) not in anchors:
            return f"{side} {str(row.get(side))[:40]!r} is not an anchor of the ladder"
    if not _finite(row.get("seconds")) or row["seconds"] < 0:
        return f"'seconds' must be a number >= 0, got {str(row.get('seconds'))[:40]!r}"
    timing = row.get("timing")
    if not isinstance(timing, dict) or not all(
            k in ("attacker", "defender") and isinstance(v, list) and len(v) == 2 and _finite(v[0])
            and isinstance(v[1], int) and not isinstance(v[1], bool) for k, v in timing.items()):
        return "'timing' must map attacker/defender to [seconds, moves]"
    games = row.get("games")
    if not isinstance(games, list):
        return "'games' must be a list"
    for g in games:
        if not isinstance(g, dict) or g.get("result") not in RESULTS \
                or g.get("attacker") != row["attacker"] or g.get("defender") != row["defender"]:
            return f"a game that is not a result of this chunk's two anchors: {str(g)[:60]}"
    return None


def _read_games(path: Path, settings: dict[str, Any]) -> dict[str, dict]:
    """Finished chunks by key from ``path`` (checked against ``settings``, or grown from them at
    the ladder's top: then the file's first line records the new settings). A torn last line (a
    run killed while writing) is dropped from the file; any other line that cannot be read stops
    the build with an error naming it, the file untouched (a later build would otherwise drop
    every line after it)."""
    if not path.is_file():
        return {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read the anchor record {path}: {exc}") from None
    if not lines:
        return {}
    recorded = _settings_line(lines[0], path)
    if recorded != settings and not _grows_the_ladder(recorded, settings):
        raise ValueError(f"{path} was played with other settings ({recorded}); move it away "
                         "to start afresh")
    done: dict[str, dict] = {}
    good = len(lines)
    for n, line in enumerate(lines[1:], start=1):
        last = n == len(lines) - 1
        try:
            row = json.loads(line)
        except ValueError:
            if last:                    # torn: the run stopped while writing it
                good = n
                break
            raise ValueError(f"{path}, line {n + 1}: not a JSON line ({line.strip()[:60]!r}); only a torn "
                             "last line is dropped: mend or remove this one, nothing was changed") from None
        if not line.endswith("\n"):    # a complete object with its newline torn off
            good = n
            break
        problem = _check_row(row, settings["anchors"])
        if problem:
            raise ValueError(f"{path}, line {n + 1}: {problem}; mend or remove this line, nothing was changed")
        if row["key"] in done:
            raise ValueError(f"{path}, line {n + 1}: chunk {row['key']!r} is recorded twice")
        done[row["key"]] = row
    if good < len(lines) or recorded != settings:
        lines[0] = json.dumps({"settings": settings}) + "\n"
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("".join(lines[:good]), encoding="utf-8")
        os.replace(tmp, path)
    return done


def check_ladder(anchors: object) -> dict[str, str]:
    """``anchors`` (name → spec) if every name is a short plain word and every spec builds an
    agent (built once here, so that a bad spec stops the build before any file is touched; specs
    that unpickle are refused: a ladder is kept in the record, a data file); else one line naming it.

    >>> check_ladder({"greedy": "greedy", "big": "mcts:5O000"})
    Traceback (most recent call last):
    ...
    agents.spec.AgentSpecError: anchor 'big': 'mcts:5O000': mcts simulations must be an integer (or a time such as 1s), got '5O000'
    """
    from ..base import make_agent

    if not isinstance(anchors, dict) or len(anchors) < 2:
        raise ValueError(f"a ladder is a mapping of at least two anchor names to agent specs, got {str(anchors)[:60]}")
    for name, spec in anchors.items():
        if not isinstance(name, str) or not ANCHOR_NAME.fullmatch(name):
            raise ValueError(f"anchor name {str(name)[:40]!r}: use 1-32 letters, digits, '_', '-' or '+'")
        parsed = parse_data_spec(spec, f"anchor {name!r}")
        try:
            make_agent(parsed)
        except ValueError as exc:
            raise ValueError(f"anchor {name!r}: {' '.join(str(exc).split())}") from None
    return dict(anchors)


ANCHOR_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_+\-]{0,31}")
"""An anchor's name: it keys the record's chunks and seeds, and heads a leaderboard row."""


def _grows_the_ladder(recorded: dict[str, Any], settings: dict[str, Any]) -> bool:
    """Whether ``settings`` only adds anchors at the top of the recorded ladder: every finished
    chunk stays valid (a pair's schedule depends only on the two anchors' distance in the ladder,
    and its seed on their names), and the build plays the new anchors' chunks of every round."""
    old, new = list(recorded.get("anchors", {}).items()), list(settings["anchors"].items())
    same_rest = {k: v for k, v in recorded.items() if k != "anchors"} == \
        {k: v for k, v in settings.items() if k != "anchors"}
    return same_rest and len(new) > len(old) and new[:len(old)] == old


UNBOUNDED = ("random",)
"""Anchors left out of the interval target: the random agent loses (nearly) every game to every
other anchor, so the games bound its rating from one side only and the prior sets the rest."""


def _expected_cost(chunk: Chunk, anchors: dict[str, str], done: dict[str, dict]) -> tuple[int, float]:
    """A sort key for ``chunk``'s expected time, largest first: pairings not yet recorded first
    (round 0, or a rung just added), higher in the ladder (so stronger, slower) before lower;
    then the mean seconds of the pairing's recorded chunks (either side attacking)."""
    pair = {chunk.attacker, chunk.defender}
    seen = [d["seconds"] for d in done.values() if {d["attacker"], d["defender"]} == pair]
    if seen:
        return 0, sum(seen) / len(seen)
    ladder = list(anchors)
    return 1, ladder.index(chunk.attacker) + ladder.index(chunk.defender)


def half_width(row: dict[str, Any]) -> float | None:
    """The larger side of an anchor's 95% interval (``None``: the fit gave no interval)."""
    return None if row["low"] is None else max(row["rating"] - row["low"], row["high"] - row["rating"])


def _widest(fit: dict[str, Any]) -> float:
    """The largest half-width (either side) of the 95% intervals of the anchors that the target
    covers (all but the pin and :data:`UNBOUNDED`)."""
    return max(math.inf if half_width(a) is None else half_width(a)
               for a in fit["anchors"] if a["name"] != PIN[0] and a["name"] not in UNBOUNDED)


def _rung_budget(spec: object) -> int | None:
    """The simulations of a search rung (``mcts:N``: the greedy evaluator on a simulation budget),
    or None for any other spec.

    >>> _rung_budget("mcts:30"), _rung_budget("mcts:1s"), _rung_budget("mcts:30:random"), _rung_budget("greedy")
    (30, None, None, None)
    """
    try:
        parsed = AgentSpec.parse(spec)
    except AgentSpecError:
        return None
    plain = parsed.kind == "mcts" and parsed.inner is None and (parsed.rollout, parsed.prior) == ("none", "greedy")
    return parsed.simulations if plain else None


def out_of_order(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The search rungs that rate below the rung of the next lower budget (the ladder's order
    check), each with whether the 95% intervals tell the two apart (``"separated"``: they do not
    overlap); ``[]``: the rungs climb with their budgets.

    >>> rows = [{"name": "mcts10", "spec": "mcts:10", "rating": 1070.0, "low": 1030.0, "high": 1110.0},
    ...         {"name": "mcts30", "spec": "mcts:30", "rating": 1000.0, "low": 950.0, "high": 1050.0},
    ...         {"name": "mcts100", "spec": "mcts:100", "rating": 1150.0, "low": 1100.0, "high": 1200.0}]
    >>> out_of_order(rows)
    [{'lower_budget': 'mcts10', 'higher_budget': 'mcts30', 'elo_difference': -70.0, 'separated': False}]
    """
    budgets = [(_rung_budget(r["spec"]), r) for r in rows]
    rungs = [r for _, r in sorted((b for b in budgets if b[0] is not None), key=lambda b: b[0])]
    apart = lambda lo, hi: None not in (hi["high"], lo["low"]) and hi["high"] < lo["low"]
    return [{"lower_budget": lo["name"], "higher_budget": hi["name"],
             "elo_difference": round(hi["rating"] - lo["rating"], 1), "separated": apart(lo, hi)}
            for lo, hi in zip(rungs, rungs[1:]) if hi["rating"] < lo["rating"]]


def describe_out_of_order(pair: dict[str, Any], mark: str = "") -> str:
    """One of :func:`out_of_order`'s pairs in words (``mark`` around the names: ``"`"`` in Markdown).

    >>> describe_out_of_order({"lower_budget": "mcts10", "higher_budget": "mcts30", "elo_difference": -70.0,
    ...                        "separated": False})
    'mcts30 rates 70 Elo below mcts10 (within their intervals)'
    """
    return (f"{mark}{pair['higher_budget']}{mark} rates {-pair['elo_difference']:g} Elo below "
            f"{mark}{pair['lower_budget']}{mark} ({'outside' if pair['separated'] else 'within'} their intervals)")


def fit_anchors(variant: str, anchors: dict[str, str], chunks: list[dict]) -> dict[str, Any]:
    """Ratings of the anchors from finished chunks (greedy pinned at 1000), per anchor with its
    games, score and time per move, and the side term."""
    games = [g for c in chunks for g in c["games"]]
    names = list(anchors)
    pin, value = PIN
    fit = elo_ratings(games, names, anchor=pin)
    thinking: dict[str, list] = {}
    for c in chunks:
        for side, name in (("attacker", c["attacker"]), ("defender", c["defender"])):
            secs, moves = c["timing"].get(side, (0.0, 0))
            spent = thinking.setdefault(name, [0.0, 0])
            spent[0] += secs
            spent[1] += moves
    shift = lambda x: None if x is None else round(x + value, 1)   # None: no games, no interval
    rows = []
    for r in fit["ratings"]:
        secs, moves = thinking.get(r["name"], [0.0, 0])
        rows.append({"name": r["name"], "spec": anchors[r["name"]], "rating": shift(r["rating"]),
                     "low": shift(r["low"]), "high": shift(r["high"]),
                     "games": r["games"], "score": round(r["score"], 4) if r["score"] is not None else None,
                     "ms_per_move": round(1000 * secs / moves, 2) if moves else None})
    h = fit["side_advantage"]
    return {"anchors": rows, "games": len(games),
            "draws": sum(g["result"] == "draw" for g in games),
            "side_advantage": {k: None if h[k] is None else round(h[k], 1) for k in ("elo", "low", "high")}}


def build_anchors(variant: str, *, seed: int = 2026, jobs: int = 1, max_minutes: float | None = None,
                  target_ci: float = 50.0, max_rounds: int | None = None, root: str | os.PathLike = "results/anchors",
                  out: str | os.PathLike | None = None, anchors: dict[str, str] | None = None,
                  progress: bool = True, command: str | None = None, play: bool = True) -> dict[str, Any]:
    """Play (or continue) the anchors' round robin of ``variant`` and write its anchor file
    (module docstring). Returns the file's content. With ``play=False`` no game is played: the
    recorded games are fitted and the file written (``anchors fit``).

    Every argument and every anchor's spec is checked before the record is read or written (a
    ``TypeError`` or ``ValueError`` naming it); a record with no game of the ladder writes no file.

    ``anchors``: the ladder (name → spec); ``None``: :data:`ANCHORS`, or the record's ladder where
    an earlier build grew it at its top (so that such a build is continued without naming the new
    anchors again)."""
    seed = check_int("seed", seed, low=0, high=MAX_SEED)
    jobs = check_int("jobs", jobs, low=1, high=1024)
    if max_minutes is not None:
        max_minutes = check_number("max_minutes", max_minutes, low=0, high=10_000_000, low_open=True)
    target_ci = check_number("target_ci", target_ci, low=0, high=10_000, low_open=True)
    if max_rounds is not None:
        max_rounds = check_int("max_rounds", max_rounds, low=1, high=1_000_000)
    path = games_path(variant, root)
    if anchors is None:
        anchors = dict(ANCHORS[variant])
        recorded = _recorded_settings(path)
        if recorded is not None and _grows_the_ladder(_settings(variant, anchors, seed), recorded):
            anchors = dict(recorded["anchors"])
    anchors = check_ladder(anchors)         # before anything is written: a bad spec changes no file
    rules = make_rules(variant)
    suite = load_openings(variant)
    settings = _settings(variant, anchors, seed)
    done = _read_games(path, settings)
    if not path.is_file() or path.stat().st_size == 0:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"settings": settings}) + "\n", encoding="utf-8")
    t0 = time.monotonic()
    deadline = t0 if not play else None if max_minutes is None else t0 + 60 * max_minutes
    past_deadline = lambda: deadline is not None and time.monotonic() >= deadline
    played_now = 0
    stopped = "target"
    round_ = 0
    with path.open("a", encoding="utf-8") as log, ChunkRunner(rules, jobs) as runner:
        def record(res: ChunkResult) -> None:
            nonlocal played_now
            c = res.chunk
            row = {"key": c.key, "attacker": c.attacker, "defender": c.defender, "seed": c.seed,
                   "seconds": round(res.seconds, 3), "timing": res.timing, "games": res.games}
            log.write(json.dumps(row) + "\n")
            log.flush()
            done[c.key] = row
            played_now += len(res.games)
            if progress:
                print(f"\r{variant} anchors: round {c.block}, {sum(len(d['games']) for d in done.values())} games "
                      f"({played_now} now, {(time.monotonic() - t0) / 60:.1f} min)", end="", file=sys.stderr,
                      flush=True)

        def rounds_fit(rounds: int) -> dict[str, Any]:
            return fit_anchors(variant, anchors, [done[c.key] for r in range(rounds)
                                                  for c in round_chunks(variant, anchors, suite, seed, r)])

        while True:
            # this round's chunks, the longest first (the round's short ones fill the other workers
            # while they run), then the next round's, so that no worker idles while the round's last
            # long chunk runs; the order changes no result: every chunk has its own seed
            window = []
            for r in range(round_, round_ + 2):
                if max_rounds is not None and r >= max_rounds:
                    break
                todo = [c for c in round_chunks(variant, anchors, suite, seed, r) if c.key not in done]
                window += sorted(todo, key=lambda c: _expected_cost(c, anchors, done), reverse=True)
            this_round = [c.key for c in round_chunks(variant, anchors, suite, seed, round_)]
            met: list[bool] = []

            def halt() -> bool:
                # past the deadline; or this round complete and the target met by it (asked once)
                if past_deadline():
                    return True
                if not met and all(k in done for k in this_round):
                    met.append(_widest(rounds_fit(round_ + 1)) <= target_ci)
                return bool(met and met[0])

            if window:
                runner.run(window, on_done=record, stop=halt)
            if any(k not in done for k in this_round):
                stopped = "time"
                break
            round_ += 1
            fit = rounds_fit(round_)
            if _widest(fit) <= target_ci:
                break
            if max_rounds is not None and round_ >= max_rounds:
                stopped = "rounds"
                break
    if progress:
        print(file=sys.stderr)
    # a finished build fits its complete rounds only (chunks of the next round played meanwhile
    # stay in the record for a later build); one stopped by time everything played so far
    last = round_ + 2 if stopped == "time" else round_
    finished = [done[c.key] for r in range(last) for c in round_chunks(variant, anchors, suite, seed, r)
                if c.key in done]
    if not finished:
        raise ValueError(f"no games of this ladder recorded in {path}: no anchor file written")
    fit = fit_anchors(variant, anchors, finished)
    widest = _widest(fit)
    disorder = out_of_order(fit["anchors"])
    result = {
        "variant": variant, "pin": {"name": PIN[0], "rating": PIN[1]}, **fit,
        "rounds": round_, "seed": seed, "max_turns": rules.max_turns, "block": BLOCK,
        "openings": {"file": f"data/openings/{variant}.json", "count": len(suite),
                     "sha256": settings["openings_sha256"]},
        "target_ci": target_ci, "target_met": widest <= target_ci,
        "widest_half_interval": round(widest, 1) if math.isfinite(widest) else None,   # None: no games yet
        "ordered_by_budget": not disorder, "out_of_order": disorder,
        "stopped": stopped, "schedule": "neighbours every round, two apart every 2nd, others every 8th",
        "model": "Bradley-Terry (logistic Elo) with a side term; 95% profile-likelihood intervals; draws 1/2",
        "command": command or f"python -m agents.evaluation.anchors build {variant} --seed {seed}",
        "games_file": str(path), "built": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.processor() or platform.platform()}",
        "minutes_this_run": round((time.monotonic() - t0) / 60, 1),
    }
    write_json_atomic(out if out is not None else anchors_path(variant), result)
    return result


def main(argv: list[str] | None = None) -> int:
    """``python -m agents.evaluation.anchors build|fit VARIANT ...``; a bad input stops it with one
    line on stderr and exit status 2, before any file is read or written."""
    from tafl_env.cli import bounded_float, positive_int, seed_int

    p = argparse.ArgumentParser(prog="python -m agents.evaluation.anchors",
                                description="Build (or continue) a variant's anchor ratings: the paired round "
                                            "robin of agents/evaluation/anchors.py, resumable; writes "
                                            "agents/evaluation/data/anchors/VARIANT.json at the end.")
    sub = p.add_subparsers(dest="what", required=True)
    b = sub.add_parser("build", help="play the round robin (continuing a recorded one) and write the anchor file")
    f = sub.add_parser("fit", help="write the anchor file from the recorded games alone (nothing played)")
    for q in (b, f):
        q.add_argument("variant", choices=VARIANTS)
        q.add_argument("--seed", type=seed_int, default=2026)
        q.add_argument("--jobs", type=positive_int, default=1, help="worker processes")
        q.add_argument("--target-ci", type=bounded_float(0, 10_000, "an Elo half-width", low_open=True), default=50.0,
                       help="stop once every anchor's 95%% interval is within +-ELO (default 50)")
        q.add_argument("--root", default="results/anchors", help="where games.jsonl is kept (default results/anchors)")
        q.add_argument("--out", help="write the anchor file here instead of the shipped one")
    b.add_argument("--max-minutes", type=bounded_float(0, 10_000_000, "minutes", low_open=True),
                   help="stop (between chunks) after M minutes; a later run continues")
    b.add_argument("--max-rounds", type=positive_int, help="stop after this many rounds")
    b.add_argument("--add", action="append", default=[], metavar="NAME=SPEC",
                   help="grow the ladder at its top with this anchor (repeatable; the recorded games are "
                        "kept, and later builds continue the grown ladder)")
    args = p.parse_args(argv)
    command = "python -m agents.evaluation.anchors " + " ".join(argv if argv is not None else sys.argv[1:])
    try:
        anchors = None
        if getattr(args, "add", None):
            recorded = _recorded_settings(games_path(args.variant, args.root))
            anchors = dict(recorded["anchors"] if recorded else ANCHORS[args.variant])
            for item in args.add:
                name, eq, spec = item.partition("=")
                if not eq or not name or not spec:
                    raise ValueError(f"--add {item[:60]!r}: expected NAME=SPEC, e.g. mcts20000=mcts:20000")
                if name in anchors:
                    raise ValueError(f"--add {item[:60]!r}: the ladder already has an anchor named {name!r}")
                anchors[name] = spec
        res = build_anchors(args.variant, seed=args.seed, jobs=args.jobs, max_minutes=getattr(args, "max_minutes", None),
                            target_ci=args.target_ci, max_rounds=getattr(args, "max_rounds", None), root=args.root,
                            out=args.out, anchors=anchors, command=command, play=args.what == "build")
    except (ValueError, TypeError, FileNotFoundError) as exc:
        print(f"error: {' '.join(str(exc).split())[:400]}", file=sys.stderr)
        return 2
    print(f"{args.variant}: {res['games']} games, {res['rounds']} rounds, widest interval +-{res['widest_half_interval']} "
          f"(target {'met' if res['target_met'] else 'not met'}; stopped: {res['stopped']})")
    for a in sorted(res["anchors"], key=lambda a: a["rating"]):
        print(f"  {a['name']:<10} {a['spec']:<24} {a['rating']:8.1f} [{a['low']:.1f}, {a['high']:.1f}]  "
              f"{a['games']} games  {a['ms_per_move']} ms/move")
    print(f"  side advantage (attackers): {res['side_advantage']['elo']} Elo")
    for pair in res["out_of_order"]:
        print(f"  out of budget order: {describe_out_of_order(pair)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
