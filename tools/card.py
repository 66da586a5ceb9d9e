"""Make a training card: a run of ``tafl train`` recorded in ``results/training/<variant>/``.

    python tools/card.py VARIANT RUN_DIR [--ship] [--recheck-games 200]

- copies the run's outputs (``config.yaml``, ``command.txt``, ``eval.csv``, ``eval.json``,
  ``final_eval.json``, ``summary.json``, ``learning_curve.png``; SB3's ``tb/progress.csv`` as
  ``train_log.csv``) into ``results/training/<variant>/``;
- ``--ship``: copies the final model to ``agents/pretrained/<variant>.zip``, where
  ``policy:<variant>`` finds it (the model records its rules; a model of other rules is refused);
- re-checks the final model through the ``policy:PATH`` agent, as ``tafl eval`` and ``tafl play``
  load it, against random and greedy with a seed other than the run's, through the run's own
  evaluation (``agents.evaluation.learning_curve.evaluate_agent``; ``check_policy_agent.json``);
- writes ``README.md``: the command, the run's figures, the final evaluation per side with Wilson
  intervals, the re-check, the evaluation against MCTS when
  ``tafl eval --config configs/tournaments/cards/<variant>.yaml`` has written
  ``vs_mcts/results.json``, the league's shares of games, and the learning curve. Text after the
  line ``<!-- notes -->`` of an existing README is kept, so a card's discussion survives a rerun.

Nothing here is rule or agent logic: it reads the files the run and the evaluation wrote.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTES = "<!-- notes -->"
COPIED = ("config.yaml", "command.txt", "eval.csv", "eval.json", "final_eval.json", "summary.json",
          "learning_curve.png")
RECHECK_SEED = 424242


def copy_run(run: Path, card: Path) -> None:
    card.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        if not (run / name).is_file():
            sys.exit(f"card: {run / name} is missing; is {run} a finished tafl train run?")
        shutil.copy2(run / name, card / name)
    if (run / "tb" / "progress.csv").is_file():
        shutil.copy2(run / "tb" / "progress.csv", card / "train_log.csv")


def recheck(model: Path, cfg: dict, games: int) -> dict:
    """The final model through the policy:PATH agent against random and greedy, both sides, with a
    seed other than the run's: the training run's own evaluation (``evaluate_agent``) again."""
    from agents import make_agent
    from agents.evaluation.learning_curve import evaluate_agent

    return evaluate_agent(make_agent(f"policy:{model}", seed=RECHECK_SEED), cfg, games, RECHECK_SEED,
                          opponents=("random", "greedy"))


def _pct(x: float) -> str:
    return f"{x:.3f}"


def final_table(final: dict) -> list[str]:
    lines = ["| opponent | policy plays | games | wins | draws | losses | win rate | Wilson 95% | score (draw = ½) |",
             "|---|---|---:|---:|---:|---:|---:|---|---:|"]
    for opponent, sides in final["results"].items():
        for side in ("attacker", "defender", "both"):
            r = sides[side]
            label = "both sides" if side == "both" else side
            rate = f"**{_pct(r['win_rate'])}**" if side == "both" else _pct(r["win_rate"])
            lines.append(f"| {opponent} | {label} | {r['games']} | {r['wins']} | {r['draws']} | {r['losses']} | "
                         f"{rate} | [{_pct(r['win_low'])}, {_pct(r['win_high'])}] | {_pct(r['score'])} |")
    return lines


def recheck_table(check: dict) -> list[str]:
    lines = ["| opponent | as attacker | as defender | both sides | Wilson 95% (both) |",
             "|---|---:|---:|---:|---|"]
    for opponent, r in check.items():
        att, dfn, both = r["attacker"], r["defender"], r["both"]
        lines.append(f"| {opponent} | {att['wins']}/{att['games']} | {dfn['wins']}/{dfn['games']} | "
                     f"{both['wins']}/{both['games']} = {both['win_rate']:.3f} | "
                     f"[{both['win_low']:.3f}, {both['win_high']:.3f}] |")
    return lines


def mcts_table(results: dict) -> list[str]:
    """The policy's rows (agent ``ppo``) of a card tournament's results.json."""
    sides = {row["side"]: row for row in results["sides"] if row["agent"] == "ppo"}
    pair = next(p for p in results["pairings"] if p["agent"] == "ppo")
    opponent = pair["opponent"]
    spec = results["agents"][opponent]
    lines = [f"Against `{spec}` (`tafl eval --config configs/tournaments/cards/{results['variant']}.yaml`, "
             f"seed {results['seed']}, {results['seconds'] / 60:.1f} min):", "",
             "| policy plays | games | wins | draws | losses | win rate | score [Wilson 95%] |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for label, r in (("attacker", sides["attacker"]), ("defender", sides["defender"]), ("both sides", pair)):
        lines.append(f"| {label} | {r['games']} | {r['wins']} | {r['draws']} | {r['losses']} | "
                     f"{r['win_rate']:.3f} | {r['score']:.3f} [{r['score_low']:.3f}, {r['score_high']:.3f}] |")
    return lines


def league_shares(cfg: dict) -> str:
    """The share of the learner's training games of each kind (env slots per rollout, README of the run)."""
    slots = {"self-play (both sides)": 2 * cfg["selfplay_games"],
             "frozen snapshots of itself": cfg["snapshot_games"],
             "greedy": cfg["greedy_games"] + cfg.get("greedy_attacker_games", 0),
             "random": cfg["random_games"]}
    total = sum(slots.values())
    parts = [f"{name} {n / total:.0%}" for name, n in slots.items() if n]
    imitation = (f"; before PPO, a warm start by behaviour cloning of greedy-vs-greedy games "
                 f"({cfg['imitation_games']} games)" if cfg.get("imitation_games") else "")
    always = cfg.get("greedy_attacker_games", 0)
    return (f"Learner env slots per rollout: {total}, of which " + ", ".join(parts)
            + (f" (greedy includes {always} slots where the learner always attacks)" if always else "")
            + imitation + ".")


GROUP_NAMES = {"selfplay": "self-play", "snapshot": "snapshots", "greedy": "greedy",
               "greedy_attacker": "greedy (learner attacking)", "random": "random"}


def league_games(train_log: Path) -> str:
    """The games the learner finished during PPO, by opponent kind, from SB3's log (``league/*_games``
    per rollout; a self-play game is seen by both of its slots, so it is counted once)."""
    import csv

    totals = dict.fromkeys(GROUP_NAMES, 0.0)
    with open(train_log, newline="") as f:
        for row in csv.DictReader(f):
            for g in GROUP_NAMES:
                for side in ("attacker", "defender"):
                    v = row.get(f"league/{g}_{side}_games")
                    if v:
                        totals[g] += float(v) / (2 if g == "selfplay" else 1)
    total = sum(totals.values())
    if not total:
        return ""
    parts = [f"{GROUP_NAMES[g]} {n / total:.0%}" for g, n in totals.items() if n]
    return f"Games the learner finished during PPO: {total:,.0f}, of which " + ", ".join(parts) + "."


def write_readme(variant: str, card: Path, shipped: bool = True) -> None:
    summary = json.loads((card / "summary.json").read_text())
    final = json.loads((card / "final_eval.json").read_text())
    cfg = yaml.safe_load((card / "config.yaml").read_text())
    command = (card / "command.txt").read_text().strip()
    old = (card / "README.md").read_text() if (card / "README.md").is_file() else ""
    notes = old.split(NOTES, 1)[1].strip() if NOTES in old else ""
    imit = summary.get("imitation") or {}
    config_path = command.split("--config", 1)[1].split()[0] if "--config" in command else f"configs/train/{variant}.yaml"
    card_flag = f" --card {card.name}" if card.name != variant else ""
    lines = [f"# Training run: {variant}", "",
             f"MaskablePPO league (agents/ppo/) on a 2-core CPU, seed {summary['seed']}, the config "
             f"`{config_path}`." + (f" The model is shipped as `agents/pretrained/{variant}.zip` "
                                     f"(`policy:{variant}`; `tafl play {variant} --vs policy:{variant}`)."
                                     if shipped else " The model is not shipped (a comparison run)."), "",
             "Command (from the repository root; it wrote to a scratch directory, whose files are copied here "
             f"by `python tools/card.py {variant} RUN_DIR{card_flag}{' --ship' if shipped else ''}`):",
             "", "```", command, "```", "",
             f"- training: {summary['timesteps']:,} PPO steps in {summary['minutes']:.1f} minutes of wall time "
             f"(stopped: {summary['stopped']}), {summary['parameters']:,} parameters, {summary['num_envs']} envs "
             f"({', '.join(summary['groups'])} groups)."]
    if imit:
        lines.append(f"- warm start (included in those minutes): behaviour cloning of the greedy agent on "
                     f"{imit['positions']:,} positions of greedy-vs-greedy games ({imit['minutes']:.2f} min; final "
                     f"best-move accuracy {imit.get('best_accuracy', float('nan')):.2f}, move accuracy "
                     f"{imit['accuracy']:.2f}), then PPO.")
    games = league_games(card / "train_log.csv") if (card / "train_log.csv").is_file() else ""
    lines += [f"- league: {league_shares(cfg)}" + (f" {games}" if games else ""),
              f"- final evaluation: {final['games_per_side']} games per side against each opponent (deterministic "
              "policy: the most probable legal move), agents.evaluation.play.play_games, seeds derived from the run seed.",
              "", *final_table(final), ""]
    if (card / "check_policy_agent.json").is_file():
        check = json.loads((card / "check_policy_agent.json").read_text())
        n = check["random"]["attacker"]["games"]
        lines += ["Re-check through the `policy:PATH` agent (agents/ppo/policy.py, as `tafl eval` / `tafl play` load it), "
                  f"evaluated like the run's own evaluations with seed {RECHECK_SEED} instead of the run's, "
                  f"{n} games per side (`check_policy_agent.json`):", "", *recheck_table(check), ""]
    if (card / "vs_mcts" / "results.json").is_file():
        lines += [*mcts_table(json.loads((card / "vs_mcts" / "results.json").read_text())), ""]
    lines += ["Files: `config.yaml` (the resolved config), `command.txt`, `eval.csv` / `eval.json` (every evaluation "
              "during training), `final_eval.json`, `summary.json`, `train_log.csv` (SB3's log: losses and league "
              "win rates per rollout), `learning_curve.png`"
              + (", `vs_mcts/` (the MCTS evaluation)." if (card / "vs_mcts").is_dir() else "."), "",
              "![learning curve](learning_curve.png)", "", NOTES, ""]
    if notes:
        lines += [notes, ""]
    (card / "README.md").write_text("\n".join(lines))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("variant")
    ap.add_argument("run", type=Path, help="the output directory of the tafl train run")
    ap.add_argument("--ship", action="store_true", help="copy the final model into agents/pretrained/")
    ap.add_argument("--recheck-games", type=int, default=200, help="games per side of the re-check (0: skip)")
    ap.add_argument("--readme-only", action="store_true", help="only rewrite README.md from the card's files")
    ap.add_argument("--card", help="the card's folder name in results/training/ (default: the variant id)")
    args = ap.parse_args(argv)
    card = ROOT / "results" / "training" / (args.card or args.variant)
    if not args.readme_only:
        copy_run(args.run, card)
        model = args.run / "final.zip"
        if args.ship:
            shutil.copy2(model, ROOT / "agents" / "pretrained" / f"{args.variant}.zip")
        if args.recheck_games:
            check = recheck(model, yaml.safe_load((card / "config.yaml").read_text()), args.recheck_games)
            (card / "check_policy_agent.json").write_text(json.dumps(check))
    shipped = (ROOT / "agents" / "pretrained" / f"{args.variant}.zip").is_file() and card.name == args.variant
    write_readme(args.variant, card, shipped)
    print(card / "README.md")


if __name__ == "__main__":
    main()
