"""How many rounds an unfinished anchor build still needs: replay each pair's recorded chunks into
the rounds to come and fit after each round.

The build's own ``round_chunks`` says which chunks a round plays; a future chunk is taken, in turn,
from the recorded chunks of the same attacker and defender, so the projection assumes the games to
come score as the recorded ones did. It prints, per round, the games, the widest interval the build's
target looks at (the build's own measure) and every anchor's half-width, and stops at the first round
whose fit meets the target (or after ``--rounds``). It only reads the record, so it may run beside a
build. Usage::

    python benchmarks/anchor_projection.py legacy_alea_evangelii [--target-ci 50] [--rounds 60]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

from agents.evaluation.anchors import _widest, fit_anchors, games_path, half_width, round_chunks
from agents.evaluation.openings import load_openings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variant")
    ap.add_argument("--target-ci", type=float, default=50.0)
    ap.add_argument("--rounds", type=int, default=60)
    args = ap.parse_args()
    with games_path(args.variant).open(encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.endswith("\n")]   # not a line being written
    settings, chunks = lines[0]["settings"], lines[1:]
    anchors, suite = settings["anchors"], load_openings(args.variant)
    by_pair = defaultdict(list)
    for c in chunks:
        by_pair[c["attacker"], c["defender"]].append(c)
    played = {c["key"] for c in chunks}
    projected, used = list(chunks), defaultdict(int)
    for r in range(args.rounds):
        for chunk in round_chunks(args.variant, anchors, suite, settings["seed"], r):
            if chunk.key not in played:
                pair = chunk.attacker, chunk.defender
                projected.append(by_pair[pair][used[pair] % len(by_pair[pair])])
                used[pair] += 1
        fit = fit_anchors(args.variant, anchors, projected)
        widest = _widest(fit)
        half = {x["name"]: None if half_width(x) is None else round(half_width(x), 1) for x in fit["anchors"]}
        print(f"after round {r}: {fit['games']} games, widest ±{widest:.1f}  {half}")
        if widest <= args.target_ci:
            break


if __name__ == "__main__":
    main()
