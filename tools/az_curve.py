"""A learning curve from an AZ run's checkpoints: each checkpoint's agent (``az:CKPT:SIMS``) and
network alone (``azpolicy:CKPT``) against an opponent, both sides, paired random openings
(:mod:`az_eval`'s), Wilson 95% bands; x = self-play positions recorded by that checkpoint.

    python tools/az_curve.py --run runs/az/X --every 20 --opponent greedy --games 20 \
        --out results/training/legacy_ard_ri_az/curve
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

from az_eval import Opening

from agents import make_agent
from agents.evaluation.play import play_games
from agents.evaluation.stats import wilson_interval
from agents.evaluation.learning_curve import EVAL_CSV_FIELDS, plot_learning_curve


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", required=True)
    p.add_argument("--every", type=int, default=20, help="checkpoint iterations to take (and the last)")
    p.add_argument("--opponent", default="greedy")
    p.add_argument("--games", type=int, default=20, help="games per side")
    p.add_argument("--sims", type=int, default=64)
    p.add_argument("--seed", type=int, default=5101)
    p.add_argument("--opening-turns", type=int, default=4)
    p.add_argument("--out", required=True, help="folder for curve.csv and curve.png")
    args = p.parse_args(argv)
    run = Path(args.run)
    cks = sorted((run / "checkpoints").glob("iter_*"))
    chosen = [c for c in cks if int(c.name[5:]) % args.every == 0]
    if cks and cks[-1] not in chosen:
        chosen.append(cks[-1])
    variant = json.loads((run / "final.json").read_text())["variant"]
    rows = []
    for ck in chosen:
        counters = json.loads((ck / "trainer.json").read_text())["counters"]
        for label, spec in ((args.opponent, f"az:{ck}:{args.sims}"),
                            (f"{args.opponent} [network alone]", f"azpolicy:{ck}")):
            results = {}
            for s, side in enumerate(("attacker", "defender")):
                me = Opening(make_agent(spec, seed=args.seed + s), args.opening_turns, args.seed, 0)
                opp = Opening(make_agent(args.opponent, seed=args.seed + 7 + s), args.opening_turns, args.seed, 0)
                pair = (me, opp) if side == "attacker" else (opp, me)
                results[side] = [g["result"] for g in play_games(variant, *pair, args.games, seed=args.seed + s)]
            for side in ("attacker", "defender", "both"):
                res = [(r, sd) for sd in ("attacker", "defender") for r in results[sd] if side in (sd, "both")]
                n = len(res)
                w = sum(r == sd for r, sd in res)
                d = sum(r == "draw" for r, _ in res)
                lo, hi = wilson_interval(w, n)
                slo, shi = wilson_interval(w + 0.5 * d, n)
                rows.append({"timesteps": counters["positions"], "minutes": round(counters["minutes"], 2),
                             "opponent": label, "side": side, "games": n, "wins": w, "draws": d,
                             "losses": n - w - d, "win_rate": round(w / n, 4), "win_low": round(lo, 4),
                             "win_high": round(hi, 4), "score": round((w + 0.5 * d) / n, 4),
                             "score_low": round(slo, 4), "score_high": round(shi, 4)})
            print(ck.name, label, rows[-1]["score"], flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "curve.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=EVAL_CSV_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    plot_learning_curve(out / "curve.csv", out / "curve.png",
                        title=f"{variant} AZ checkpoints vs {args.opponent} (x: self-play positions)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
