"""Board pictures with coordinates and the last move marked."""

from __future__ import annotations

import numpy as np
import pytest

from tafl_env import render as R
from tafl_env.game import Game
from tafl_env.notation import parse_square


def _tile(img: np.ndarray, n: int, px: int, square: str, left: int = 0) -> np.ndarray:
    r, f = divmod(parse_square(square, n), n)
    return img[(n - 1 - r) * px:(n - r) * px, left + f * px:left + (f + 1) * px]


def _has(img: np.ndarray, colour) -> bool:
    return bool(np.all(img == np.array(colour, dtype=np.uint8), axis=-1).any())


def test_default_image_is_unchanged_by_the_new_options():
    g = Game("legacy_ard_ri")
    plain = R.render_rgb(g.engine, g.state, square_px=16)
    assert plain.shape == (112, 112, 3)
    assert np.array_equal(plain, R.render_rgb(g.engine, g.state, square_px=16, coords=False, last_move=None))
    assert not _has(plain, R.LAST_MOVE) and not _has(plain, R.LABEL)


@pytest.mark.parametrize("variant,px", [("legacy_ard_ri", 16), ("legacy_tawlbwrdd", 24), ("legacy_alea_evangelii", 32)])
def test_coordinates_frame_the_board_in_a_square_image(variant, px):
    g = Game(variant)
    n = g.n
    img = R.render_rgb(g.engine, g.state, square_px=px, coords=True)
    m = R.margin_px(px)
    assert img.shape == (n * px + m, n * px + m, 3)
    assert np.array_equal(img[: n * px, m:], R.render_rgb(g.engine, g.state, square_px=px))
    left, bottom = img[: n * px, :m], img[n * px:, m:]
    for r in range(n):            # a rank number beside every rank
        assert _has(left[r * px:(r + 1) * px], R.LABEL), r
    for f in range(n):            # a file letter below every file
        assert _has(bottom[:, f * px:(f + 1) * px], R.LABEL), f
    assert not _has(img[n * px:, :m], R.LABEL)     # the corner stays empty
    # the labels differ from one another (they are glyphs, not blobs)
    files = [bottom[:, f * px:(f + 1) * px] for f in range(n)]
    assert len({f.tobytes() for f in files}) == n


def test_the_last_move_is_framed_in_the_image():
    g = Game("historical_tablut")
    move = g.push("e2-c2")
    px = 24
    img = R.render_rgb(g.engine, g.state, square_px=px, last_move=move)
    for square in ("e2", "c2"):
        assert _has(_tile(img, 9, px, square), R.LAST_MOVE), square
    others = img.copy()
    for square in ("e2", "c2"):
        _tile(others, 9, px, square)[:] = 0
    assert not _has(others, R.LAST_MOVE)
    # the same with coordinates, and given as a pair of squares
    pair = (parse_square("e2", 9), parse_square("c2", 9))
    img2 = R.render_rgb(g.engine, g.state, square_px=px, coords=True, last_move=pair)
    assert _has(_tile(img2, 9, px, "c2", left=R.margin_px(px)), R.LAST_MOVE)
    with pytest.raises(ValueError):
        R.render_rgb(g.engine, g.state, last_move=(0, 999))


def test_the_last_move_is_marked_in_text():
    g = Game("historical_tablut")
    move = g.push("e2-c2")
    rows = R.render_ansi(g.engine, g.state, last_move=move).splitlines()
    assert rows[7] == "2 . .(t). * . . . ."
    plain = R.render_ansi(g.engine, g.state).splitlines()
    assert plain[7] == "2 . . t . . . . . ." and "(" not in "".join(plain)
    # a piece on the last file gets its closing parenthesis after the row
    g = Game("historical_tablut")
    move = g.push("i4-i3")
    assert R.render_ansi(g.engine, g.state, last_move=move).splitlines()[6] == "3 . . . . T . . .(t)"
    # a pass marks nothing
    assert R.render_ansi(g.engine, g.state, last_move=(None, None)) == R.render_ansi(g.engine, g.state)
