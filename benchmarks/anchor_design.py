"""Fixed schedule or designed rounds: how fast does an anchor build narrow its intervals?

Continues a variant's recorded anchor build (``results/anchors/<variant>/games.jsonl``) in
simulation, once with the fixed schedule (:func:`agents.evaluation.anchors.schedule`) and once with
designed rounds (:func:`agents.evaluation.anchors.designed_pairs`), for the same budget of
core-seconds, and prints the widest interval each reaches. A simulated chunk plays no game: it
takes its cost (seconds and moves) from a recorded chunk of the same pairing and side, and its
results from the ratings fitted to the record (each game won by the attacker with the model's
probability; no draws), so both arms see the same world and differ only in which pairs they buy.

    python benchmarks/anchor_design.py legacy_berserk --hours 0.5 1 --seed 1 [--record FILE]

(``--record``: a record as it stood, e.g. ``git show COMMIT:results/anchors/legacy_berserk/games.jsonl``.)

A model check, not a measurement of games: the real build's intervals come from real games
(benchmarks/RESULTS.md puts the two side by side).
"""

from __future__ import annotations

import argparse
import collections
import json
import random
from pathlib import Path

from agents.evaluation.anchors import PIN, UNBOUNDED, designed_pairs, fit_anchors, games_path, schedule


def simulate(variant: str, design: bool, hours: float, seed: int = 1, record: str | None = None) -> dict:
    """Continue the record (``record``, or the variant's) for ``hours`` of both of 2 cores; the
    widest interval and the games reached."""
    path = Path(record) if record else games_path(variant)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    anchors = lines[0]["settings"]["anchors"]
    names = list(anchors)
    chunks = lines[1:]
    fit = fit_anchors(variant, anchors, chunks)
    rating = {a["name"]: a["rating"] for a in fit["anchors"]}
    h = fit["side_advantage"]["elo"]
    recorded = collections.defaultdict(list)
    for c in chunks:
        recorded[c["attacker"], c["defender"]].append(c)
    rng = random.Random(seed)
    first = 1 + max(int(c["key"][1:c["key"].index(":")]) for c in chunks)
    spent, round_ = 0.0, first
    while spent < hours * 3600 * 2:
        pairs = designed_pairs(anchors, chunks) if design else schedule(names, round_)
        for a, b in pairs:
            for att, dfd in ((a, b), (b, a)):
                like = rng.choice(recorded[att, dfd])
                p = 1.0 / (1.0 + 10 ** (-(rating[att] - rating[dfd] + h) / 400.0))
                games = [{"attacker": att, "defender": dfd,
                          "result": "attacker" if rng.random() < p else "defender"} for _ in like["games"]]
                chunks.append({"key": f"r{round_}:{att}>{dfd}", "attacker": att, "defender": dfd,
                               "seconds": like["seconds"], "timing": like["timing"], "games": games})
                spent += like["seconds"]
        round_ += 1
    end = fit_anchors(variant, anchors, chunks)
    widest = max(max(a["rating"] - a["low"], a["high"] - a["rating"]) for a in end["anchors"]
                 if a["name"] != PIN[0] and a["name"] not in UNBOUNDED)
    return {"rounds": round_ - first, "games": end["games"], "widest": round(widest, 1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("variant")
    p.add_argument("--hours", type=float, nargs="+", default=[0.5, 1.0])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--record", help="the record to continue (default: results/anchors/VARIANT/games.jsonl)")
    args = p.parse_args()
    print("| time (both cores) | fixed schedule: rounds, games, widest | designed rounds: rounds, games, widest |")
    print("|---|---|---|")
    for hours in args.hours:
        f, d = (simulate(args.variant, design, hours, args.seed, args.record) for design in (False, True))
        print(f"| {hours} h | {f['rounds']}, {f['games']}, ±{f['widest']} | {d['rounds']}, {d['games']}, ±{d['widest']} |")


if __name__ == "__main__":
    main()
