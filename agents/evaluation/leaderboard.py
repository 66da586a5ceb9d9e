"""The leaderboard: every variant's anchors and rated agents, ``results/leaderboard.md`` and ``.json``.

The JSON holds, per variant, one line per rated agent (name, spec, Elo, interval, per side, games,
seed, how the rating stopped, date); the Markdown is written from it and from the shipped anchor
files (:mod:`.anchors`), whose ratings head each variant's table. Both files are written whole,
through a temporary file and a rename.

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
import sys
from pathlib import Path
from typing import Any

from tafl_env.rules import VARIANTS

from .anchors import PIN, UNBOUNDED, describe_out_of_order, load_anchors, out_of_order
from .openings import write_json_atomic

__all__ = ["SHIPPED", "DEFAULT_PATH", "add_entry", "render_markdown", "write_leaderboard", "main"]

DEFAULT_PATH = Path("results") / "leaderboard.json"
"""The leaderboard's JSON, relative to the working directory (the repository root); the Markdown
is beside it (``leaderboard.md``)."""

SHIPPED: dict[str, dict[str, str]] = {v: {"policy+mcts100": f"mcts:100:policy:{v}"} for v in VARIANTS}
"""Shipped agents that are not anchors, rated onto every variant's leaderboard by ``--rate``
(the anchors, the shipped policy among them, are rated by the anchor build itself)."""


def _load(path: Path) -> dict[str, Any]:
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    return {"about": "tafl-env leaderboard: Elo against fixed anchors (docs/rating.md)", "variants": {}}


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
              command: str | None = None) -> Path:
    """Add (or replace) line ``name`` of ``rating.variant`` with ``rating`` and rewrite both files."""
    path = Path(path)
    board = _load(path)
    variant = rating.variant
    if command is None and spec is not None:
        command = f"tafl rate {spec} --variant {variant} --seed {rating.seed} --games {rating.games}"
    board["variants"].setdefault(variant, {})[name] = _line(rating, spec, command)
    return write_leaderboard(board, path)


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
            out += ["| agent | spec | Elo | 95% interval | as attacker | as defender | games (draws) | stopped | rated |",
                    "|---|---|---:|---|---|---|---:|---|---|"]
            for name, e in sorted(lines.items(), key=lambda kv: -kv[1]["elo"]):
                side = lambda s: f"{s['elo']:.0f} [{s['low']:.0f}, {s['high']:.0f}]" if s.get("games") else "-"
                out.append(f"| {name} | `{e['spec'] or 'object'}` | {e['elo']:.0f} | [{e['low']:.0f}, {e['high']:.0f}] "
                           f"| {side(e['attacker'])} | {side(e['defender'])} | {e['games']} ({e['draws']}) "
                           f"| {e['stopped']} | {e['rated']} |")
            out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m agents.evaluation.leaderboard",
                                description="Write results/leaderboard.md (and .json) again; with --rate, re-rate "
                                            "every line that has a spec, the shipped agents included.")
    p.add_argument("--rate", action="store_true", help="re-rate the lines (and add the shipped agents)")
    p.add_argument("--variants", nargs="+", choices=VARIANTS, default=None, metavar="VARIANT")
    p.add_argument("--target-ci", type=float, default=50.0, help="rating target, +-Elo (default 50)")
    p.add_argument("--games", type=int, default=2000, help="the most games per rating (default 2000)")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--path", default=str(DEFAULT_PATH), help="the JSON (default results/leaderboard.json)")
    args = p.parse_args(argv)
    path = Path(args.path)
    board = _load(path)
    if args.rate:
        from .rate import rate

        for variant in args.variants or VARIANTS:
            try:
                load_anchors(variant)
            except FileNotFoundError as exc:
                print(f"skipping {variant}: {exc}", file=sys.stderr)
                continue
            lines = board["variants"].setdefault(variant, {})
            todo = {**SHIPPED.get(variant, {}), **{n: e["spec"] for n, e in lines.items() if e.get("spec")}}
            for name, spec in todo.items():
                r = rate(spec, variant, games=args.games, target_ci=args.target_ci, jobs=args.jobs, seed=args.seed,
                         progress=True)
                print(r)
                lines[name] = _line(r, spec, f"tafl rate {spec} --variant {variant} --seed {args.seed} "
                                             f"--games {args.games} --target-ci {args.target_ci:g}")
    write_leaderboard(board, path)
    print(f"wrote {path} and {path.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
