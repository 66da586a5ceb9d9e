"""OpenTafl's AI rated on this project's fixed anchors, from matches played by opentafl_matches.py.

    python benchmarks/opentafl_ai_rating.py --variant historical_tablut MATCHES.json [MATCHES.json ...]

Each file is the last line of ``benchmarks/opentafl_matches.py --json`` (games of OpenTafl's AI
against one of our agents, the sides alternating). Our agent must be an anchor of the variant
(``results/anchors/<variant>.json``: its spec, e.g. ``mcts:1000``) or ``--rated SPEC=ELO`` a line
of the leaderboard. The AI's rating is fitted as ``tafl rate`` fits an agent (Bradley-Terry with the
anchors' ratings and their side term held, a 95% profile-likelihood interval,
:func:`agents.evaluation.ratings.ratings_against_fixed`). Unlike ``tafl rate`` the games start from
the variant's start (OpenTafl's driver plays no opening suite) and the AI thinks by the clock, so
its rating belongs to its think time and the machine's load; both are in the match files.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from agents.evaluation.anchors import load_anchors
from agents.evaluation.ratings import ratings_against_fixed

AI = "opentafl-ai"


def games_of(match: dict) -> list[dict]:
    """The match's games as rating rows (attacker, defender, result)."""
    ours = match["agent"]
    rows = []
    for g in match["results"]:
        ai_attacks = g["ai_side"] == "attackers"
        rows.append({"attacker": AI if ai_attacks else ours, "defender": ours if ai_attacks else AI,
                     "result": g["result"]})
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variant", required=True)
    p.add_argument("matches", nargs="+", type=Path, help="opentafl_matches.py --json outputs")
    p.add_argument("--rated", action="append", default=[], metavar="SPEC=ELO",
                   help="a non-anchor opponent's rating (e.g. az:historical_tablut:64=1930, from the leaderboard)")
    args = p.parse_args(argv)
    table = load_anchors(args.variant)
    fixed = {a["spec"]: float(a["rating"]) for a in table["anchors"]}
    for item in args.rated:
        spec, _, elo = item.rpartition("=")
        fixed[spec] = float(elo)
    games, think, per_opponent = [], set(), []
    for path in args.matches:
        match = json.loads(path.read_text().strip().splitlines()[-1])
        if match["variant"] != args.variant:
            p.error(f"{path} holds {match['variant']} games, not {args.variant}")
        if match["agent"] not in fixed:
            p.error(f"{path}: {match['agent']} is no anchor of {args.variant}; give its rating with --rated")
        rows = games_of(match)
        games += rows
        think.add(match["think_s"])
        ai_score = sum(1.0 if r["result"] == ("attacker" if r["attacker"] == AI else "defender")
                       else 0.5 if r["result"] == "draw" else 0.0 for r in rows) / len(rows)
        per_opponent.append({"opponent": match["agent"], "opponent_elo": fixed[match["agent"]], "games": len(rows),
                             "ai_score": round(ai_score, 3), "ai_s_per_move": match.get("ai_s_per_move"),
                             "ai_cpu_s_per_move": match.get("ai_cpu_s_per_move"),
                             "opponent_s_per_move": match.get("agent_s_per_move")})
        print(f"against {match['agent']} ({fixed[match['agent']]:.0f}): {len(rows)} games, OpenTafl's AI scores "
              f"{ai_score:.3f}")
    h = float(table["side_advantage"]["elo"])
    row = ratings_against_fixed(games, fixed, h)["ratings"][0]
    out = {"variant": args.variant, "think_s": sorted(think), "side_term": h, "games": row["games"],
           "elo": round(row["rating"], 1), "low": round(row["low"], 1), "high": round(row["high"], 1),
           "opponents": per_opponent}
    print(f"OpenTafl's AI ({', '.join(f'{t:g} s' for t in sorted(think))} a move): {out['elo']:.0f} "
          f"[{out['low']:.0f}, {out['high']:.0f}] Elo on the {args.variant} anchors, {row['games']} games")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
