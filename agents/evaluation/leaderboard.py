"""The leaderboard: every variant's anchors and rated agents, ``results/leaderboard.md`` and ``.json``.

The JSON holds, per variant, one line per rated agent (name, spec, Elo, interval, per side, games,
seed, how the rating stopped, date); the Markdown is written from it and from the shipped anchor
files (:mod:`.anchors`), whose ratings head each variant's table. Both files are written whole,
through a temporary file and a rename, under a lock and from a fresh read of the JSON, so that
processes adding lines at once all land (:func:`add_entry`, :func:`update_lines`).

- Add (or replace) a line for your agent: ``tafl rate AGENT --variant V --target-ci 50 --leaderboard NAME``
  (or :func:`add_entry` with a :class:`~.rate.Rating`).
- Regenerate everything, re-rating every line that has a spec (the shipped agents of
  :data:`SHIPPED` first added): ``python -m agents.evaluation.leaderboard --rate``; without
  ``--rate`` only the Markdown is written again from the JSON and the anchor files.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:         # not POSIX: lines are written without a lock
    fcntl = None
from typing import Any

from tafl_env.rules import VARIANTS

from .anchors import PIN, UNBOUNDED, describe_out_of_order, load_anchors, out_of_order
from .openings import write_json_atomic

__all__ = ["SHIPPED", "DEFAULT_PATH", "NAME", "add_entry", "check_name", "check_cost", "update_lines",
           "render_markdown", "write_leaderboard", "main"]

DEFAULT_PATH = Path("results") / "leaderboard.json"
"""The leaderboard's JSON, relative to the working directory (the repository root); the Markdown
is beside it (``leaderboard.md``)."""

SHIPPED: dict[str, dict[str, str]] = {v: {"policy+mcts100": f"mcts:100:policy:{v}"} for v in VARIANTS}
"""Shipped agents that are not anchors, rated onto every variant's leaderboard by ``--rate``
(the anchors, the shipped policy among them, are rated by the anchor build itself)."""


NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+:/=\-]{0,79}")
"""A line's name: it heads a Markdown row and keys the JSON, so a short plain word (letters, digits,
``_ . + - : / =``, so that an agent spec may name its own line; 80 characters at most)."""


def check_name(name: object) -> str:
    """``name`` if it may name a leaderboard line (:data:`NAME`), else a ``ValueError`` of one line.

    >>> check_name("az-64"), check_name("policy+mcts100")
    ('az-64', 'policy+mcts100')
    >>> check_name("x | spec | 9999")
    Traceback (most recent call last):
    ...
    ValueError: leaderboard name 'x | spec | 9999': use 1-80 letters, digits and _ . + - : / = (starting with a letter or digit)
    """
    if not isinstance(name, str) or not NAME.fullmatch(name):
        shown = repr(name) if len(repr(name)) <= 40 else repr(name)[:39] + "…"
        raise ValueError(f"leaderboard name {shown}: use 1-80 letters, digits and _ . + - : / = "
                         f"(starting with a letter or digit)")
    return name


def _load(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {"about": "tafl-env leaderboard: Elo against fixed anchors (docs/rating.md)", "variants": {}}
    try:
        board = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"cannot read the leaderboard {path}: {exc}") from None
    if not isinstance(board, dict) or not isinstance(board.get("variants"), dict) or \
            not all(isinstance(v, dict) for v in board["variants"].values()):
        raise ValueError(f"{path} is not a leaderboard (a JSON object with 'variants': variant -> lines)")
    for variant, lines in board["variants"].items():
        for name, line in lines.items():
            problem = _line_problem(line)
            if problem:
                raise ValueError(f"{path}: line {str(name)[:40]!r} of {str(variant)[:40]}: {problem}")
    return board


def _line_problem(line: object) -> str | None:
    """What keeps ``line`` from being rendered (``None``: nothing)."""
    number = lambda x: isinstance(x, (int, float)) and not isinstance(x, bool)
    if not isinstance(line, dict):
        return "not an object"
    if line.get("spec") is not None and not isinstance(line["spec"], str):
        return "'spec' must be a text or null"
    for key in ("elo", "low", "high"):
        if not number(line.get(key)):
            return f"{key!r} must be a number"
    for key in ("attacker", "defender"):
        side = line.get(key)
        if not isinstance(side, dict) or (side.get("games") and not all(number(side.get(k)) for k in ("elo", "low", "high"))):
            return f"{key!r} must be an object with elo, low, high"
    for key in ("games", "draws"):
        if not isinstance(line.get(key), int) or isinstance(line.get(key), bool):
            return f"{key!r} must be an int"
    if "cost" in line:
        try:
            check_cost(line["cost"])
        except ValueError as exc:
            return str(exc)
    return None


@contextmanager
def _locked(path: Path):
    """Hold an exclusive lock on ``path``'s leaderboard (a ``.lock`` file beside it) for one
    read-change-write, so that two processes adding lines at once both land."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is None:
        yield
        return
    with open(path.with_name(f".{path.name}.lock"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def update_lines(path: str | os.PathLike, variant: str, lines: dict[str, dict[str, Any]]) -> Path:
    """Set ``lines`` (name → line) of ``variant`` in the leaderboard at ``path``: under the lock,
    the file read again just before, both files written atomically. Returns the JSON path."""
    path = Path(path)
    for name in lines:
        check_name(name)
    with _locked(path):
        board = _load(path)
        board["variants"].setdefault(variant, {}).update(lines)
        return write_leaderboard(board, path)


def _line(rating, spec: str | None, command: str | None) -> dict[str, Any]:
    r = rating.to_dict() if hasattr(rating, "to_dict") else dict(rating)
    return {"spec": spec, "elo": round(r["elo"], 1), "low": round(r["low"], 1), "high": round(r["high"], 1),
            "attacker": {k: (round(v, 1) if isinstance(v, float) else v) for k, v in r["attacker"].items()},
            "defender": {k: (round(v, 1) if isinstance(v, float) else v) for k, v in r["defender"].items()},
            "games": r["games"], "draws": r["draws"], "score": round(r["score"], 4), "seed": r["seed"],
            "stopped": r["stopped"], "time_per_move": r["time_per_move"],
            "rated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d"),
            "command": command}


def write_leaderboard(board: dict[str, Any], path: str | os.PathLike = DEFAULT_PATH) -> Path:
    """Write the JSON and, beside it, the Markdown (:func:`render_markdown`); returns the JSON path."""
    path = Path(path)
    write_json_atomic(path, board)
    md = path.with_suffix(".md")
    tmp = md.with_name(f".{md.name}.{os.getpid()}.tmp")
    tmp.write_text(render_markdown(board), encoding="utf-8")
    os.replace(tmp, md)
    return path


def add_entry(rating, name: str, *, spec: str | None = None, path: str | os.PathLike = DEFAULT_PATH,
              command: str | None = None, cost: dict[str, Any] | None = None) -> Path:
    """Add (or replace) line ``name`` of ``rating.variant`` with ``rating`` and rewrite both files
    (:func:`update_lines`: locked, re-read, atomic). ``cost``: what a learned agent's training
    cost (``cpu_hours``, ``started_from``), kept from the line it replaces when not given."""
    check_name(name)
    variant = rating.variant
    if command is None and spec is not None:
        command = f"tafl rate {spec} --variant {variant} --seed {rating.seed} --games {rating.games}"
    line = _line(rating, spec, command)
    if cost is not None:
        line["cost"] = check_cost(cost)
    path = Path(path)
    with _locked(path):
        board = _load(path)
        lines = board["variants"].setdefault(variant, {})
        if cost is None and isinstance(lines.get(name), dict) and "cost" in lines[name]:
            line["cost"] = lines[name]["cost"]
        lines[name] = line
        return write_leaderboard(board, path)


def check_cost(cost: object) -> dict[str, Any]:
    """A line's training cost: ``{"cpu_hours": number >= 0, "started_from": short text}``."""
    if not isinstance(cost, dict) or set(cost) != {"cpu_hours", "started_from"}:
        raise ValueError("a training cost is {'cpu_hours': H, 'started_from': TEXT}")
    hours, start = cost["cpu_hours"], cost["started_from"]
    if isinstance(hours, bool) or not isinstance(hours, (int, float)) or not 0 <= hours < 1e6:
        raise ValueError(f"cpu_hours must be a number >= 0, got {hours!r}")
    if not isinstance(start, str) or not 0 < len(start) <= 120:
        raise ValueError("started_from must be a text of 1-120 characters")
    return {"cpu_hours": float(hours), "started_from": start}


def _cell(text: object) -> str:
    """``text`` safe inside a Markdown table cell: no line breaks, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _order_note(anchors: dict[str, Any]) -> list[str]:
    """A paragraph naming the search rungs that rate below a smaller budget, if any."""
    pairs = out_of_order(anchors["anchors"])
    if not pairs:
        return []
    return ["", f"Not ordered by budget: {'; '.join(describe_out_of_order(p, mark='`') for p in pairs)}."]


def render_markdown(board: dict[str, Any]) -> str:
    """The leaderboard as Markdown: per variant, the anchors' fixed ratings, then the rated lines."""
    out = ["# Leaderboard", "",
           f"Elo against fixed anchors ({PIN[0]} = {PIN[1]:g}), 95% intervals, games from the variant's opening "
           "suite, each opening once on each side; draws count 1/2. How the ratings are made and how to add a line "
           "for your own agent: [docs/rating.md](../docs/rating.md). Regenerate: "
           "`python -m agents.evaluation.leaderboard --rate`.", ""]
    for variant in VARIANTS:
        lines = board.get("variants", {}).get(variant, {})
        try:
            anchors = load_anchors(variant)
        except FileNotFoundError:
            anchors = None
        if anchors is None and not lines:
            continue
        out += [f"## {variant}", ""]
        if anchors is None:
            out += ["No anchors built yet: `python -m agents.evaluation.anchors build " + variant + "`.", ""]
        else:
            state = ("target met" if anchors["target_met"] else
                     f"target ±{anchors['target_ci']:g} not yet met: widest ±{anchors['widest_half_interval']:g}")
            out += [f"Anchors: {anchors['games']} games, {anchors['rounds']} rounds, seed {anchors['seed']}, "
                    f"move cap {anchors['max_turns']}, built {anchors['built']} ({state}); attackers' side term "
                    f"{anchors['side_advantage']['elo']:g} Elo.", *_order_note(anchors), "",
                    "| anchor | spec | Elo | 95% interval | games | ms/move |", "|---|---|---:|---|---:|---:|"]
            for a in sorted(anchors["anchors"], key=lambda a: -a["rating"]):
                note = " (one-sided: loses nearly every game)" if a["name"] in UNBOUNDED else ""
                out.append(f"| {a['name']} | `{a['spec']}` | {a['rating']:.0f} | [{a['low']:.0f}, {a['high']:.0f}]{note} "
                           f"| {a['games']} | {a['ms_per_move']} |")
            out.append("")
        if lines:
            out += ["| agent | spec | Elo | 95% interval | as attacker | as defender | games (draws) | stopped | rated "
                    "| training |",
                    "|---|---|---:|---|---|---|---:|---|---|---|"]
            for name, e in sorted(lines.items(), key=lambda kv: -kv[1]["elo"]):
                side = lambda s: f"{s['elo']:.0f} [{s['low']:.0f}, {s['high']:.0f}]" if s.get("games") else "-"
                cost = e.get("cost")
                trained = f"{cost['cpu_hours']:g} CPU h from {cost['started_from']}" if cost else "-"
                out.append(f"| {_cell(name)} | `{_cell(e['spec'] or 'object').replace('`', '')}` | {e['elo']:.0f} "
                           f"| [{e['low']:.0f}, {e['high']:.0f}] | {side(e['attacker'])} | {side(e['defender'])} "
                           f"| {e['games']} ({e['draws']}) | {_cell(e['stopped'])} | {_cell(e['rated'])} "
                           f"| {_cell(trained)} |")
            out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Write the leaderboard again; with ``--rate``, re-rate its lines one at a time, each saved as
    soon as it is rated (a failing line is reported in one line and the others kept: exit 1)."""
    from tafl_env.cli import bounded_float, positive_int, seed_int

    p = argparse.ArgumentParser(prog="python -m agents.evaluation.leaderboard",
                                description="Write results/leaderboard.md (and .json) again; with --rate, re-rate "
                                            "every line that has a spec, the shipped agents included.")
    p.add_argument("--rate", action="store_true", help="re-rate the lines (and add the shipped agents)")
    p.add_argument("--variants", nargs="+", choices=VARIANTS, default=None, metavar="VARIANT")
    p.add_argument("--target-ci", type=bounded_float(0, 10_000, "an Elo half-width", low_open=True), default=50.0,
                   help="rating target, +-Elo (default 50)")
    p.add_argument("--games", type=positive_int, default=2000, help="the most games per rating (default 2000)")
    p.add_argument("--jobs", type=positive_int, default=1)
    p.add_argument("--seed", type=seed_int, default=0)
    p.add_argument("--path", default=str(DEFAULT_PATH), help="the JSON (default results/leaderboard.json)")
    args = p.parse_args(argv)
    path = Path(args.path)
    try:
        board = _load(path)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    failed = 0
    if args.rate:
        from ..base import check_data_spec
        from .rate import rate

        for variant in args.variants or VARIANTS:
            try:
                load_anchors(variant)
            except (FileNotFoundError, ValueError) as exc:
                print(f"skipping {variant}: {exc}", file=sys.stderr)
                continue
            lines = board["variants"].get(variant, {})
            todo = {**SHIPPED.get(variant, {}),
                    **{n: e.get("spec") for n, e in lines.items() if isinstance(e, dict) and e.get("spec")}}
            for name, spec in todo.items():
                try:
                    check_name(name)
                    check_data_spec(spec, f"{path}, line {name!r}")     # a data file never opts in to unpickling
                    r = rate(spec, variant, games=args.games, target_ci=args.target_ci, jobs=args.jobs,
                             seed=args.seed, progress=True)
                except (ValueError, TypeError) as exc:
                    print(f"{variant} {name}: not re-rated: {' '.join(str(exc).split())[:300]}", file=sys.stderr)
                    failed += 1
                    continue
                print(r)
                line = _line(r, spec, f"tafl rate {spec} --variant {variant} --seed {args.seed} "
                                      f"--games {args.games} --target-ci {args.target_ci:g}")
                with _locked(path):             # lines added by others meanwhile are kept
                    board = _load(path)
                    old = board["variants"].setdefault(variant, {}).get(name)
                    if isinstance(old, dict) and "cost" in old:
                        line["cost"] = old["cost"]
                    board["variants"][variant][name] = line
                    write_leaderboard(board, path)
    else:
        with _locked(path):
            write_leaderboard(_load(path), path)
    print(f"wrote {path} and {path.with_suffix('.md')}" + (f"; {failed} line(s) not re-rated" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
