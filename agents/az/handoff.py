"""A training run's hand-off: what a resume needs to go on, small enough to commit.

A run's folder holds tens to hundreds of MB (the replay window, the optimiser's state, every
checkpoint). A training run that goes on in several parts of a few hours commits a hand-off instead::

    python -m agents.az.handoff OUT/checkpoints/iter_XXXXXX DEST [--positions N]

``DEST`` gets the checkpoint (its network, ``trainer.json``: the counters, the pool's paths and
the random generator's state), the pool's networks at the same relative paths, the run's small
records (``summary.json``, ``config.yaml``, ``eval.json``) and the replay window in its compact
form, ``window.npz`` (:func:`agents.az.replay.compact_arrays`: about ten times smaller; the
newest ``N`` positions, all by default). It keeps **no optimiser state**: AdamW's moment
estimates rebuild within a few hundred steps, and a resume says that it starts them afresh.
A resume reads it as any checkpoint::

    cp -r DEST runs/az/RUN
    tafl train --config CONFIG --resume runs/az/RUN/checkpoints/iter_XXXXXX

and goes on with the same network, counters, pool, generator and window (the window's policy
targets rounded to ``float16``) as the uninterrupted run would have.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np

__all__ = ["make_handoff", "main"]

RECORDS = ("summary.json", "config.yaml", "eval.json")
"""Small files of the run's folder that a hand-off carries (the card reads them)."""


def make_handoff(checkpoint: str | Path, dest: str | Path, positions: int | None = None) -> dict:
    """Write the hand-off of ``checkpoint`` (``OUT/checkpoints/iter_XXXXXX``) to ``dest`` (module
    docstring); returns what it wrote: the files and their bytes, and the window's positions."""
    from .checkpoint import CheckpointError, read_json, read_replay
    from .config import MAX_MEMORY_BYTES
    from .replay import ReplayWindow, compact_arrays

    ck = Path(checkpoint)
    if not (ck / "trainer.json").is_file() or not (ck / "model.pt").is_file():
        raise CheckpointError(f"{ck} is not an AZ training checkpoint (a folder OUT/checkpoints/iter_XXXXXX "
                              "with model.pt and trainer.json)")
    if not (ck / "replay.npz").is_file():
        raise CheckpointError(f"{ck} holds no replay window (only a run's newest checkpoint keeps one)")
    if positions is not None and (isinstance(positions, bool) or not isinstance(positions, int) or positions < 1):
        raise ValueError(f"positions must be an int >= 1, got {positions!r}")
    out = ck.parent.parent
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} exists and is not empty: a hand-off goes to a new folder")
    trainer = read_json(ck / "trainer.json", "trainer state")
    record = read_json(ck / "model.json", "model record")
    n = int(record["network"]["board_size"])
    arrays = read_replay(ck / "replay.npz", (n, n, 14), n * n * 4 * (n - 1) + 1, MAX_MEMORY_BYTES)
    window = ReplayWindow.from_state_dict(arrays)
    target = dest / "checkpoints" / ck.name
    target.mkdir(parents=True)
    for name in ("model.pt", "model.json", "trainer.json"):
        shutil.copy2(ck / name, target / name)
    compact = compact_arrays(window, positions)
    np.savez_compressed(target / "window.npz", **compact)
    for entry in trainer.get("pool", []):
        src = out / entry
        if src.is_file():
            (dest / entry).parent.mkdir(parents=True, exist_ok=True)
            for suffix in (".pt", ".json"):
                shutil.copy2(src.with_suffix(suffix), (dest / entry).with_suffix(suffix))
    for name in RECORDS:
        if (out / name).is_file():
            shutil.copy2(out / name, dest / name)
    files = {str(p.relative_to(dest)): p.stat().st_size for p in sorted(dest.rglob("*")) if p.is_file()}
    return {"checkpoint": str(ck), "dest": str(dest), "positions": int(len(compact["values"])),
            "window_positions": len(window), "bytes": sum(files.values()), "files": files}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m agents.az.handoff",
                                description="Write a training checkpoint's hand-off: the network, counters, pool "
                                            "and a compact replay window, without the optimiser state "
                                            "(agents/az/handoff.py).")
    p.add_argument("checkpoint", help="OUT/checkpoints/iter_XXXXXX (the run's newest: it keeps the window)")
    p.add_argument("dest", help="a new folder")
    p.add_argument("--positions", type=int, default=None, help="keep the newest N positions of the window (all)")
    args = p.parse_args(argv)
    try:
        info = make_handoff(args.checkpoint, args.dest, args.positions)
    except (ValueError, OSError) as exc:
        print(f"error: {' '.join(str(exc).split())[:400]}", file=sys.stderr)
        return 2
    print(json.dumps({k: v for k, v in info.items() if k != "files"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
