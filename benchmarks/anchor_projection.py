"""How many rounds an unfinished anchor build still needs: replay each pair's recorded chunks into
the rounds to come and fit after each round.

The build's schedule (``agents.evaluation.anchors.schedule``) decides which pairs a round plays; a
future chunk of a pair is taken, in turn, from that pair's recorded chunks (same sides), so the
projection assumes the games to come score as the recorded ones did. It prints, per round, the games,
the widest interval the build's target looks at and every anchor's half-width, and stops at the
first round whose fit meets the target (or after ``--rounds``). Usage::

    python benchmarks/anchor_projection.py legacy_alea_evangelii [--target-ci 50] [--rounds 60]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

from agents.evaluation.anchors import PIN, UNBOUNDED, fit_anchors, games_path, schedule


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variant")
    ap.add_argument("--target-ci", type=float, default=50.0)
    ap.add_argument("--rounds", type=int, default=60)
    args = ap.parse_args()
    lines = [json.loads(line) for line in open(games_path(args.variant)) if line.strip()]
    anchors, chunks = lines[0]["settings"]["anchors"], lines[1:]
    by_pair = defaultdict(list)
    for c in chunks:
        by_pair[c["attacker"], c["defender"]].append(c)
    played = {c["key"] for c in chunks}
    projected, used = list(chunks), defaultdict(int)
    for r in range(args.rounds):
        for a, b in schedule(list(anchors), r):
            for pair in ((a, b), (b, a)):
                if f"r{r}:{pair[0]}>{pair[1]}" not in played:
                    projected.append(by_pair[pair][used[pair] % len(by_pair[pair])])
                    used[pair] += 1
        fit = fit_anchors(args.variant, anchors, projected)
        half = {x["name"]: round(max(x["rating"] - x["low"], x["high"] - x["rating"]), 1)
                for x in fit["anchors"] if x["name"] != PIN[0] and x["name"] not in UNBOUNDED}
        widest = max(half.values())
        print(f"after round {r}: {fit['games']} games, widest ±{widest}  {half}")
        if widest <= args.target_ci:
            break


if __name__ == "__main__":
    main()
