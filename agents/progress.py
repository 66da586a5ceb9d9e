"""Progress bars of a training run (tqdm on stderr), so that no stage runs silently: the warm start's
games and fitting, PPO, and every evaluation (every trainer: :mod:`agents.ppo`, :mod:`agents.az`,
and the evaluations of :mod:`agents.evaluation.learning_curve`). ``enabled=False`` gives a bar that
shows nothing."""

from __future__ import annotations

import time


def progress_bar(total: int, desc: str, unit: str, enabled: bool, leave: bool = True):
    """A tqdm bar (``tqdm.auto``: a widget in a notebook), or a silent one when not ``enabled``."""
    if enabled:
        from tqdm.auto import tqdm
    else:  # plain tqdm: tqdm.auto would warn in a notebook without ipywidgets, for a bar never shown
        from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=not enabled, leave=leave, dynamic_ncols=True,
                mininterval=1.0)


class Throttle:
    """True at most once every ``seconds`` (for postfix updates between bar updates)."""

    def __init__(self, seconds: float = 1.0):
        self.seconds = seconds
        self.last = -float("inf")

    def __call__(self) -> bool:
        now = time.monotonic()
        if now - self.last >= self.seconds:
            self.last = now
            return True
        return False
