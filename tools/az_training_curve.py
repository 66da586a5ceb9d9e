"""The training curve of an AZ run from its TensorBoard log: per iteration the self-play results
(the attackers' share of the games, the learner's score against its sparring agent by side), the
learner's losses and the throughput, as a picture and a CSV for the run's card.

    python tools/az_training_curve.py --run runs/az/legacy_tawlbwrdd_run1 \
        --out results/training/legacy_tawlbwrdd_az/run1
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

SERIES = {
    "selfplay/share_attacker": "attackers' share of self-play games",
    "selfplay/share_capped": "share of games cut at the move cap",
    "loss/value_loss": "value loss",
    "loss/policy_kl": "policy KL to the search targets",
    "selfplay/game_turns": "turns a self-play game",
    "selfplay/leaf_evaluations_per_s": "network evaluations a second (self-play)",
    "selfplay/sparring_score_attacker": "learner's score against the sparring agent, attacking",
    "selfplay/sparring_score_defender": "learner's score against the sparring agent, defending",
}


def read_scalars(run: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run / "tb"), size_guidance={"scalars": 0})
    acc.Reload()
    have = set(acc.Tags()["scalars"])
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in SERIES if tag in have}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", required=True, help="the run's folder (its tb/ log)")
    p.add_argument("--out", required=True, help="folder for training_curve.csv and training_curve.png")
    args = p.parse_args(argv)
    run, out = Path(args.run), Path(args.out)
    data = read_scalars(run)
    out.mkdir(parents=True, exist_ok=True)
    steps = sorted({s for series in data.values() for s, _ in series})
    table = {tag: dict(series) for tag, series in data.items()}
    with (out / "training_curve.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["iteration", *data])
        for s in steps:
            w.writerow([s, *(f"{table[t][s]:.4g}" if s in table[t] else "" for t in data)])
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, (len(SERIES) + 1) // 2, figsize=(17, 6.5), sharex=True)
    for ax, (tag, label) in zip(axes.flat, SERIES.items()):
        if tag in data:
            xs, ys = zip(*data[tag])
            ax.plot(xs, ys, lw=1)
        ax.set_title(label, fontsize=9)
        ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("iteration")
    fig.suptitle(f"{run.name}: self-play and learner, per iteration", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "training_curve.png", dpi=90)
    print(f"wrote {out / 'training_curve.csv'} and {out / 'training_curve.png'} ({len(steps)} iterations)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
