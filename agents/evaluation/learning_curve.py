"""Evaluation during training: the policy against fixed opponents, the records, the learning curve
(the same for every trainer: :mod:`agents.ppo`, :mod:`agents.rllib`, :mod:`agents.az`).

:func:`evaluate_agent` plays an agent against each opponent spec on both sides (through
:func:`agents.evaluation.play.play_games`) and reports win/draw/loss counts with Wilson 95% intervals;
:func:`write_evals` keeps every evaluation of a run in ``eval.json`` and ``eval.csv``;
:func:`plot_learning_curve` draws ``learning_curve.png`` from ``eval.csv``.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any, Mapping

from tafl_env.rules import SIDES

from ..base import Agent
from ..progress import Throttle, progress_bar
from ..train_fields import rules_of
from .play import play_games
from .stats import wilson_interval

__all__ = ["evaluate_agent", "EVAL_CSV_FIELDS", "eval_rows", "write_evals", "plot_learning_curve"]


class _Watched(Agent):
    """``agent`` unchanged, calling ``on_act(state)`` after each move it makes (progress)."""

    def __init__(self, agent: Agent, on_act):
        super().__init__(None)
        self.agent, self.on_act, self.name = agent, on_act, agent.name

    def reset(self, seed: int | None = None) -> None:
        self.agent.reset(seed)

    def act(self, engine, state):
        out = self.agent.act(engine, state)
        self.on_act(state)
        return out


def paired_openings(cfg: Mapping[str, Any], games: int) -> list | None:
    """Game ``i`` of each leg starts from opening ``i`` (cycled) of the variant's shipped suite
    (:mod:`agents.evaluation.openings`, as ``tafl rate`` plays), so the two legs are paired and a
    deterministic pair of agents plays different games; from the start where the config sets
    rule options (the suite is made under the variant's own rules) or a move cap within the
    openings' length."""
    from .openings import load_openings

    if cfg.get("options"):
        return None
    try:
        suite = load_openings(cfg["variant"])
    except FileNotFoundError:
        return None
    cap = rules_of(cfg).max_turns
    if cap is not None and max(len(o) for o in suite) >= cap:
        return None        # a cap this short leaves no game after the opening
    return [suite[i % len(suite)] for i in range(games)]


def evaluate_agent(agent: Agent, cfg: Mapping[str, Any], games: int, seed: int,
                   opponents=None, progress: bool = False, desc: str = "evaluation",
                   leave: bool = True) -> dict[str, Any]:
    """``agent`` against each opponent spec, ``games`` games per side from paired openings
    (:func:`paired_openings`); Wilson 95% intervals.

    Returns ``{opponent: {"attacker": row, "defender": row, "both": row}}`` where a row has
    ``games, wins, draws, losses, win_rate, win_low, win_high, score, score_low, score_high``.
    With ``progress``, a bar (``desc``; ``leave``: kept on screen when done) counts the games and
    names the leg and the turn being played.
    """
    from ..base import make_agent

    rules = rules_of(cfg)
    specs = list(opponents or cfg["eval_opponents"])
    openings = paired_openings(cfg, games)
    out: dict[str, Any] = {}
    bar = progress_bar(2 * games * len(specs), desc, "game", progress, leave=leave)
    tick = Throttle(1.0)
    leg = [""]

    def on_act(state) -> None:
        if progress and tick():
            bar.set_postfix_str(f"{leg[0]}, turn {int(state.turn.max()) if len(state) else 0}")

    me = _Watched(agent, on_act) if progress else agent
    try:
        for j, spec in enumerate(specs):
            opp = make_agent(spec, seed=seed + j)
            rows = {}
            results = {}
            for s, side in enumerate(SIDES):
                leg_seed = seed * 1000 + 10 * j + s
                leg[0] = f"vs {spec} as {side}"
                bar.set_postfix_str(leg[0], refresh=False)
                if side == "attacker":
                    res = play_games(rules, me, opp, games, seed=leg_seed, openings=openings)
                else:
                    res = play_games(rules, opp, me, games, seed=leg_seed, openings=openings)
                bar.update(games)
                results[side] = [r["result"] for r in res]
                rows[side] = _row([r == side for r in results[side]], [r == "draw" for r in results[side]])
            both_w = [r == side for side in SIDES for r in results[side]]
            both_d = [r == "draw" for side in SIDES for r in results[side]]
            rows["both"] = _row(both_w, both_d)
            out[spec] = rows
    finally:
        bar.close()
    return out


def _row(wins, draws) -> dict[str, Any]:
    n = len(wins)
    w, d = int(sum(wins)), int(sum(draws))
    lo, hi = wilson_interval(w, n)
    slo, shi = wilson_interval(w + 0.5 * d, n)
    return {"games": n, "wins": w, "draws": d, "losses": n - w - d, "win_rate": w / n,
            "win_low": lo, "win_high": hi, "score": (w + 0.5 * d) / n, "score_low": slo, "score_high": shi}


EVAL_CSV_FIELDS = ["timesteps", "minutes", "opponent", "side", "games", "wins", "draws", "losses",
                   "win_rate", "win_low", "win_high", "score", "score_low", "score_high"]


def eval_rows(ev: Mapping[str, Any], timesteps: int, minutes: float) -> list[dict[str, Any]]:
    rows = []
    for opp, sides in ev.items():
        for side, r in sides.items():
            rows.append({"timesteps": timesteps, "minutes": round(minutes, 2), "opponent": opp, "side": side,
                         **{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}})
    return rows


def _steps_label(x: float, _pos=None) -> str:
    """A tick label for a number of training steps: ``0``, ``450k``, ``1.25M``.

    >>> _steps_label(0), _steps_label(450_000), _steps_label(1_250_000)
    ('0', '450k', '1.25M')
    """
    if abs(x) >= 1_000_000:
        return f"{x / 1e6:.3g}M"
    return f"{x / 1e3:.3g}k" if x else "0"


def plot_learning_curve(eval_csv: str | os.PathLike, path: str | os.PathLike, title: str = "") -> Path:
    """Win rate (with Wilson 95% bands) against each opponent, per side and both, over training."""
    from matplotlib.figure import Figure   # no pyplot: leaves the caller's backend alone
    from matplotlib.ticker import FuncFormatter

    with open(eval_csv, newline="") as fh:
        rows = list(csv.DictReader(fh))
    opponents = list(dict.fromkeys(r["opponent"] for r in rows))
    fig = Figure(figsize=(5.5 * len(opponents), 4))
    axes = fig.subplots(1, len(opponents), squeeze=False)
    for ax, opp in zip(axes[0], opponents):
        for side, style in (("both", "-"), ("attacker", "--"), ("defender", ":")):
            sel = [r for r in rows if r["opponent"] == opp and r["side"] == side]
            if not sel:
                continue
            x = [int(r["timesteps"]) for r in sel]
            y = [float(r["win_rate"]) for r in sel]
            line, = ax.plot(x, y, style, marker="o", ms=3, label=f"as {side}" if side != "both" else "both sides")
            ax.fill_between(x, [float(r["win_low"]) for r in sel], [float(r["win_high"]) for r in sel],
                            color=line.get_color(), alpha=0.12)
        ax.set_title(f"vs {opp}")
        ax.set_xlabel("training steps")
        # thousands as "450k": plain tick labels of six or seven digits ran into each other
        ax.xaxis.set_major_formatter(FuncFormatter(_steps_label))
        ax.set_ylabel("win rate")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    return path


def write_evals(out_dir: Path, evals: list) -> None:
    """Write every evaluation of a run so far to ``eval.json`` and ``eval.csv`` (one row per opponent and side)."""
    (out_dir / "eval.json").write_text(json.dumps(evals, indent=1))
    with open(out_dir / "eval.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=EVAL_CSV_FIELDS)
        w.writeheader()
        for rec in evals:
            for row in eval_rows(rec["results"], rec["timesteps"], rec["minutes"]):
                w.writerow(row)


