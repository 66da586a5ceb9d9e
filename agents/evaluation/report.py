"""Tournament output: the result files, replayable game records, the rating plot and text reports.

:func:`write_results` writes ``results.json``, ``games.csv``, ``ratings.csv``, ``ratings.png`` and
optionally ``records/`` (one replayable move file per game, :func:`format_record`, and the same
game as OpenTafl's ``.otg`` record, :func:`format_otg`, where the rules have an OpenTafl string) and ``gifs/``
(:func:`agents.evaluation.gif.export_gif`). :func:`format_report` and :func:`summary_line` are what
``tafl eval`` prints.
"""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from tafl_env.rules import RuleSet

from ..errors import AgentsError
from .gif import export_gif

__all__ = ["GAME_COLUMNS", "OutputDirError", "check_output_dir", "fresh_run_dir", "replay_command",
           "format_record", "write_results", "plot_ratings", "summary_line", "format_report"]

RUNS_DIR = Path("runs") / "tournaments"
"""Where ``tafl eval`` writes a run unless told otherwise: ``runs/tournaments/<variant>/<time>``."""


class OutputDirError(AgentsError):
    """The output directory cannot take the results (a file, unwritable, or holding results)."""


def fresh_run_dir(variant: str, root: str | os.PathLike = RUNS_DIR, now: float | None = None) -> Path:
    """A folder that does not exist yet: ``root/<variant>/<YYYYmmdd-HHMMSS>`` (``-2``, ``-3``… on a clash)."""
    import time

    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    base = Path(root) / variant / stamp
    path, k = base, 1
    while path.exists():
        k += 1
        path = base.with_name(f"{stamp}-{k}")
    return path


def check_output_dir(path: str | os.PathLike, *, keep_results: bool = False) -> Path:
    """Check, before any game, that the results can be written to ``path``; leave nothing behind.

    Raises :class:`OutputDirError` (one line) when ``path`` is empty, is a file or lies under one,
    cannot be created or written, or (with ``keep_results``) already holds a ``results.json``.
    Missing folders are created for a test write and removed again.
    """
    if not str(path).strip():
        raise OutputDirError("the output directory must not be empty")
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise OutputDirError(f"output directory {out} is an existing file")
    if keep_results and (out / "results.json").exists():
        raise OutputDirError(f"output directory {out} already holds results (results.json); "
                             f"choose another folder or add --overwrite")
    created: list[Path] = []
    try:
        missing = []
        probe = out
        while not probe.exists():
            missing.append(probe)
            probe = probe.parent
        if not probe.is_dir():
            raise OutputDirError(f"cannot create output directory {out}: {probe} is a file")
        for folder in reversed(missing):
            folder.mkdir()
            created.append(folder)
        import tempfile

        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as exc:
        raise OutputDirError(f"cannot write to output directory {out}: {exc.strerror or exc}") from None
    finally:
        for folder in reversed(created):
            try:
                folder.rmdir()
            except OSError:
                pass
    return out

GAME_COLUMNS = ("game", "leg", "attacker", "defender", "attacker_spec", "defender_spec", "seed", "chunk",
                "index_in_leg", "opening", "result", "reason", "turns", "attacker_score")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", name)


def replay_command(rules: RuleSet, path: str, options: Mapping[str, Any] | None = None) -> str:
    """The ``tafl replay`` command line that replays a record file to the same result."""
    parts = ["tafl", "replay", rules.name, "--file", path]
    if rules.max_turns is not None:
        parts += ["--max-turns", str(rules.max_turns)]
    for k, v in (options or {}).items():
        if k != "max_turns":
            parts += ["--option", f"{k}={v}"]
    return " ".join(parts)


def format_record(rules: RuleSet, game: Mapping[str, Any], path: str = "F",
                  options: Mapping[str, Any] | None = None) -> str:
    """A game as a move file for ``tafl replay VARIANT --file F``: '#' header lines, one move a line."""
    if game["result"] == "draw":
        verdict = f"draw ({game['reason']})"
    else:
        verdict = f"{game['result']} wins ({game['reason']})"
    lines = [
        "# tafl-env game record",
        f"# variant: {rules.name}",
        f"# attacker: {game['attacker']} ({game.get('attacker_spec', game['attacker'])})",
        f"# defender: {game['defender']} ({game.get('defender_spec', game['defender'])})",
        f"# seed: {game.get('seed')} (chunk seed; game {game.get('index_in_leg', 0)} of the leg)",
        "# opening: none (from the start position)" if game.get("opening") is None
        else f"# opening: {game['opening']} of the suite (its moves come first)",
        f"# max_turns: {rules.max_turns}",
        f"# result: {verdict} after {game['turns']} turns",
        f"# replay: {replay_command(rules, path, options)}",
    ]
    return "\n".join(lines + list(game["moves"])) + "\n"


def has_rules_string(rules: RuleSet) -> bool:
    """Whether OpenTafl can play ``rules`` (a rule set with commanders may have no rules string)."""
    from tafl_env.opentafl import UnsupportedRulesError, rules_string

    try:
        rules_string(rules)
    except UnsupportedRulesError:
        return False
    return True


def format_otg(rules: RuleSet, game: Mapping[str, Any]) -> str:
    """The game as OpenTafl's ``.otg`` record (:func:`tafl_env.opentafl.write_otg`: OpenTafl's
    replay viewer and ``tafl replay FILE.otg`` read it), the agents as its attackers and defenders."""
    from tafl_env.game import Game
    from tafl_env.opentafl import write_otg

    replay = Game(rules)
    for move in game["moves"]:
        replay.push(move)
    tags = {"attackers": str(game.get("attacker_spec", game["attacker"])),
            "defenders": str(game.get("defender_spec", game["defender"])), "event": "tafl eval"}
    return write_otg(replay, tags=tags)


def write_results(result: Mapping[str, Any], games: Sequence[Mapping[str, Any]], out_dir: str | os.PathLike,
                  *, rules: RuleSet, records: bool = False, gifs: int = 0, fps: float = 2) -> dict[str, str]:
    """Write results.json, games.csv, ratings.csv, ratings.png (and records/, gifs/). Returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    options = result.get("rules", {}).get("options", {})
    if records:
        rec_dir = out / "records"
        rec_dir.mkdir(exist_ok=True)
        otg = has_rules_string(rules)
        for g in games:
            name = f"game{g['game']:05d}_{_safe(g['attacker'])}_vs_{_safe(g['defender'])}.txt"
            p = rec_dir / name
            p.write_text(format_record(rules, g, str(p), options), encoding="utf-8")
            if otg:
                p.with_suffix(".otg").write_text(format_otg(rules, g), encoding="utf-8")
        paths["records"] = str(rec_dir)
    if gifs:
        gif_dir = out / "gifs"
        gif_dir.mkdir(exist_ok=True)
        done = 0
        for leg in result["legs"]:
            if done >= gifs:
                break
            g = games[leg["first_game"]]
            name = f"game{g['game']:05d}_{_safe(g['attacker'])}_vs_{_safe(g['defender'])}.gif"
            export_gif(rules, g["moves"], gif_dir / name, fps=fps)
            done += 1
        paths["gifs"] = str(gif_dir)
    p = out / "results.json"
    p.write_text(json.dumps(result, indent=1, default=_json_default) + "\n", encoding="utf-8")
    paths["results"] = str(p)
    p = out / "games.csv"
    with open(p, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=GAME_COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(games)
    paths["games"] = str(p)
    p = out / "ratings.csv"
    with open(p, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["name", "spec", "rating", "low", "high", "games", "score", "ms_per_move"])
        timing = result.get("time_per_move", {})
        for r in result["ratings"]["ratings"]:
            w.writerow([r["name"], result["agents"].get(r["name"], ""), _num(r["rating"]), _num(r["low"]),
                        _num(r["high"]), r["games"], _num(r["score"]),
                        _num(timing.get(r["name"], {}).get("ms_per_move"))])
        sa = result["ratings"]["side_advantage"]
        w.writerow(["<attacker side advantage>", "", _num(sa["elo"]), _num(sa["low"]), _num(sa["high"]),
                    result["attacker_results"]["games"], _num(result["attacker_results"]["score"])])
    paths["ratings"] = str(p)
    p = out / "ratings.png"
    plot_ratings(result, p)
    paths["plot"] = str(p)
    return paths


def _num(v):
    return "" if v is None else f"{v:.2f}" if isinstance(v, float) else v


def _json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def plot_ratings(result: Mapping[str, Any], path: str | os.PathLike) -> None:
    """A horizontal bar chart of the ratings with their interval bars (matplotlib, Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(reversed(result["ratings"]["ratings"]))
    names = [r["name"] for r in rows]
    vals = np.array([r["rating"] for r in rows])
    lo = np.array([r["low"] if r["low"] is not None else r["rating"] for r in rows])
    hi = np.array([r["high"] if r["high"] is not None else r["rating"] for r in rows])
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.5 * len(rows)))
    ax.errorbar(vals, np.arange(len(rows)), xerr=[vals - lo, hi - vals], fmt="o", capsize=4, color="tab:blue")
    ax.set_yticks(np.arange(len(rows)), names)
    ax.axvline(0, color="grey", lw=0.8, ls="--")
    sa = result["ratings"]["side_advantage"]
    ax.set_xlabel("Elo (95% profile-likelihood interval)")
    ax.set_title(f"{result['variant']}: {result['attacker_results']['games']} games, "
                 f"attacker side advantage {sa['elo']:+.0f} Elo", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)



def summary_line(result: Mapping[str, Any]) -> dict[str, Any]:
    """The short JSON summary that ``tafl eval --json`` prints last."""
    sa = result["ratings"]["side_advantage"]
    return {"variant": result["variant"], "out": result.get("out_dir"),
            "games": result["attacker_results"]["games"],
            "attacker_score": result["attacker_results"]["score"],
            "side_advantage": {"elo": sa["elo"], "low": sa["low"], "high": sa["high"]},
            "ratings": [{"name": r["name"], "rating": r["rating"], "low": r["low"], "high": r["high"]}
                        for r in result["ratings"]["ratings"]],
            "seconds": result["seconds"]}


def format_report(result: Mapping[str, Any]) -> str:
    """A text report: ratings, side advantage and pairings."""
    lines = [f"note: {note}" for note in result.get("notes", ())] + [f"{result['variant']}: {result['attacker_results']['games']} games in {result['seconds']:.1f} s"]
    lines.append(f"{'agent':<16} {'Elo':>8} {'95% interval':>20} {'games':>6} {'score':>6}")
    for r in result["ratings"]["ratings"]:
        iv = f"[{r['low']:.0f}, {r['high']:.0f}]" if r["low"] is not None else ""
        lines.append(f"{r['name']:<16} {r['rating']:>8.1f} {iv:>20} {r['games']:>6} {r['score']:>6.3f}")
    sa = result["ratings"]["side_advantage"]
    iv = f" [{sa['low']:.0f}, {sa['high']:.0f}]" if sa["low"] is not None else ""
    ar = result["attacker_results"]
    lines.append(f"attacker side advantage {sa['elo']:+.1f} Elo{iv}; attackers won {ar['wins']}, "
                 f"drew {ar['draws']}, lost {ar['losses']}")
    timing = result.get("time_per_move")
    if timing:
        lines.append("time per move (the agent's own act calls, its moves in every game): " + ", ".join(
            f"{name} {t['ms_per_move']:.2f} ms" for name, t in timing.items() if t["ms_per_move"] is not None))
    lines.append("pairings (score of the first agent, draws = 1/2; Wilson 95%):")
    for p in result["pairings"]:
        lines.append(f"  {p['agent']} vs {p['opponent']}: +{p['wins']} ={p['draws']} -{p['losses']}  "
                     f"score {p['score']:.3f} [{p['score_low']:.3f}, {p['score_high']:.3f}]  "
                     f"(as attacker {p['as_attacker']['score']:.2f}, as defender {p['as_defender']['score']:.2f})")
    return "\n".join(lines)
