"""Animated GIFs of games: one frame for the start and one after every move."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np

from tafl_env.rules import RuleSet

__all__ = ["export_gif"]


def export_gif(variant: str | RuleSet, moves: Sequence[str], path: str | os.PathLike, fps: float = 2,
               *, square_px: int = 24, position: str | None = None, to_move: str | None = None,
               **options) -> Path:
    """An animated GIF of a game: one frame for the start and one after every move (PIL).

    Frames come from :func:`tafl_env.render.render_rgb` with coordinates (file letters below, rank
    numbers on the left) and the move just played framed in blue; the last frame is held three
    times as long. PIL comes with matplotlib (the ``eval`` extra).
    """
    from PIL import Image

    from tafl_env.game import Game
    from tafl_env.render import render_rgb

    if isinstance(variant, RuleSet):
        game = Game(variant, position=position, to_move=to_move)
    else:
        game = Game(variant, position=position, to_move=to_move, **{"max_turns": None, **options})
    frames = [render_rgb(game.engine, game.state, 0, square_px=square_px, coords=True)]
    for m in moves:
        played = game.push(m)
        frames.append(render_rgb(game.engine, game.state, 0, square_px=square_px, coords=True,
                                 last_move=played))
    images = [Image.fromarray(np.ascontiguousarray(f, dtype=np.uint8)) for f in frames]
    ms = max(int(round(1000.0 / fps)), 20)
    durations = [ms] * (len(images) - 1) + [3 * ms]
    path = Path(path)
    images[0].save(path, save_all=True, append_images=images[1:], duration=durations, loop=0,
                   optimize=False, disposal=1)
    return path

