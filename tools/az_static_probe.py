"""Play an AZ model at several static-value weights (``static_value_weight``, agents/az/search.py:
the greedy evaluation's share of the search's leaf value) against one opponent, on the same openings
of the variant's suite, each weight attacking and defending: which weight to train or play with.

    python tools/az_static_probe.py --model results/training/legacy_tawlbwrdd_az/run1_part3/model.pt \
        --variant legacy_tawlbwrdd --weights 0 0.25 0.5 0.75 1 --opponent mcts:100 --openings 20

Every weight plays the same openings with the same seeds (the AZ search has no noise; the opponent's
draws repeat), so the rows differ by the weight alone. Prints a table and writes ``--out`` (JSON) when
given. Scores are the model's (a win 1, a draw 1/2), with Wilson 95% intervals.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def probe(model: str, variant: str, weights: list[float], opponent: str, openings: int, simulations: int = 64,
          seed: int = 7) -> list[dict]:
    """One row per weight: wins as attacker and as defender, draws, games and the score."""
    from agents import make_agent
    from agents.az.agent import AZAgent
    from agents.evaluation.openings import load_openings
    from agents.evaluation.play import play_games
    from agents.evaluation.stats import wilson_interval

    suite = load_openings(variant)
    if not 1 <= openings <= len(suite):
        raise SystemExit(f"--openings must be 1..{len(suite)} (the suite of {variant}), got {openings}")
    suite = suite[:openings]
    rows = []
    for weight in weights:
        row = {"static_value_weight": weight, "games": 2 * openings}
        points = 0.0
        for side, won in (("attacker", "attacker"), ("defender", "defender")):
            az = AZAgent(model, simulations=simulations, seed=seed, static_value_weight=weight)
            other = make_agent(opponent, seed=seed + 1)
            pair = (az, other) if side == "attacker" else (other, az)
            games = play_games(variant, *pair, openings, seed=seed, openings=suite)
            row[f"wins_as_{side}"] = sum(g["result"] == won for g in games)
            row[f"draws_as_{side}"] = sum(g["result"] == "draw" for g in games)
            points += row[f"wins_as_{side}"] + 0.5 * row[f"draws_as_{side}"]
        row["score"] = points / row["games"]
        row["interval"] = list(wilson_interval(points, row["games"]))
        rows.append(row)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="an AZ model (NAME.pt with NAME.json, or a checkpoint folder)")
    p.add_argument("--variant", required=True)
    p.add_argument("--weights", type=float, nargs="+", required=True, help="static_value_weight values in [0, 1]")
    p.add_argument("--opponent", default="mcts:100", help="an agent spec (default mcts:100)")
    p.add_argument("--openings", type=int, default=20, help="openings of the suite, each played from both sides")
    p.add_argument("--simulations", type=int, default=64)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", help="write the rows here (JSON)")
    args = p.parse_args(argv)
    for w in args.weights:
        if not 0 <= w <= 1:
            p.error(f"--weights must lie in [0, 1], got {w}")
    rows = probe(args.model, args.variant, args.weights, args.opponent, args.openings, args.simulations, args.seed)
    print(f"{args.model} at {args.simulations} simulations against {args.opponent}, "
          f"{args.openings} openings a side, seed {args.seed}")
    print("| static_value_weight | as attacker | as defender | score [Wilson 95%] |")
    print("|---:|---:|---:|---|")
    for r in rows:
        lo, hi = r["interval"]
        print(f"| {r['static_value_weight']:g} | {r['wins_as_attacker']}/{args.openings} | "
              f"{r['wins_as_defender']}/{args.openings} | {r['score']:.3f} [{lo:.3f}, {hi:.3f}] |")
    if args.out:
        Path(args.out).write_text(json.dumps({"model": args.model, "variant": args.variant, "opponent": args.opponent,
                                              "openings": args.openings, "simulations": args.simulations,
                                              "seed": args.seed, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
