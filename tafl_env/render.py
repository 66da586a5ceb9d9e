"""Drawing a game: text (``ansi``), an image (``rgb_array``, numpy only) and a window (``human``).

Every function reads one game (row ``game``) of a batched :class:`~tafl_env.engine.State`, so the
AEC env, the vector envs and scripts draw boards the same way.

    >>> from tafl_env.game import Game
    >>> g = Game("legacy_ard_ri")
    >>> print(render_ansi(g.engine, g.state))
    7 + . t t t . +
    6 . . . t . . .
    5 t . T T T . t
    4 t t T K T t t
    3 t . T T T . t
    2 . . . t . . .
    1 + . t t t . +
      a b c d e f g
    defender to move, turn 0
    >>> render_rgb(g.engine, g.state, square_px=16).shape
    (112, 112, 3)

Text symbols: ``t`` attacker soldier, ``c`` commander, ``T`` defender soldier, ``N`` knight,
``K`` king (RULES §1 letters), ``#`` the empty throne, ``+`` an empty restricted corner, ``.`` any
other empty square.

Image colours: wooden squares; the throne dark brown; restricted corners dark red; the other escape
squares (the edge in Historisches Tablut) a pale green tint; attackers are dark discs (a commander has a
red centre), defenders light discs (the knight has a blue centre), the king a light disc with a gold
cross. The square of the piece that must continue a berserk chain is yellow.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .engine import Engine, State
from .extras import require
from .engine.state import REASON_NAMES, RESULT_NAMES, RUNNING, TRUNCATED
from .notation import (ATTACKER_SOLDIER, COMMANDER, DEFENDER_SOLDIER, EMPTY, FILES, KING, KNIGHT,
                       PIECE_LETTERS, square_name)
from .observation import static_planes
from .rules import SIDES

# --- colours (RGB) ------------------------------------------------------------------------------

SQUARE = (222, 190, 140)
GRID = (150, 115, 75)
THRONE = (120, 70, 35)
CORNER = (150, 30, 30)
ESCAPE = (190, 215, 160)
CHAIN = (250, 220, 40)
ATTACKER_FILL = (35, 35, 40)
DEFENDER_FILL = (245, 245, 240)
OUTLINE = (20, 20, 20)
COMMANDER_MARK = (220, 40, 40)
KNIGHT_MARK = (40, 90, 220)
KING_MARK = (212, 160, 20)

EMPTY_THRONE_CHAR = "#"
EMPTY_CORNER_CHAR = "+"


def _square_kinds(engine: Engine) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(S,) bool arrays: throne, restricted corners, escape squares."""
    planes = static_planes(engine) > 0
    return planes[:, 0], planes[:, 1], planes[:, 2]


# --- text -----------------------------------------------------------------------------------------

def status_line(engine: Engine, state: State, game: int = 0) -> str:
    """``'attacker to move, turn 3'``, with the pending chain or the result when there is one."""
    n = engine.rules.board_size
    turn = int(state.turn[game])
    reason = int(state.reason[game])
    if reason == RUNNING:
        text = f"{SIDES[int(state.to_move[game])]} to move, turn {turn}"
        chain = int(state.chain[game])
        if chain >= 0:
            text += f", berserk chain: {square_name(chain, n)} may capture again or pass"
        return text
    if reason == TRUNCATED:
        return f"game over after turn {turn}: truncated (move cap)"
    result = RESULT_NAMES[int(state.winner[game])]
    verdict = "draw" if result == "draw" else f"{result} wins"
    return f"game over after turn {turn}: {verdict} ({REASON_NAMES[reason]})"


def render_ansi(engine: Engine, state: State, game: int = 0) -> str:
    """The board as text (rank N on top, files below) and a status line."""
    n = engine.rules.board_size
    s = n * n
    throne, corner, _ = _square_kinds(engine)
    cells = state.board[game, :s].tolist()
    width = len(str(n))
    lines = []
    for r in range(n - 1, -1, -1):
        row = []
        for sq in range(r * n, (r + 1) * n):
            code = cells[sq]
            if code != EMPTY:
                row.append(PIECE_LETTERS[code])
            elif throne[sq]:
                row.append(EMPTY_THRONE_CHAR)
            elif corner[sq]:
                row.append(EMPTY_CORNER_CHAR)
            else:
                row.append(".")
        lines.append(f"{r + 1:>{width}} " + " ".join(row))
    lines.append(" " * (width + 1) + " ".join(FILES[:n]))
    lines.append(status_line(engine, state, game))
    return "\n".join(lines)


# --- image ----------------------------------------------------------------------------------------

@lru_cache(maxsize=16)
def _stencils(px: int) -> dict[str, np.ndarray]:
    """(px, px) bool masks of one square: grid line, disc, outline ring, centre dot, cross."""
    c = (px - 1) / 2.0
    yy, xx = np.mgrid[0:px, 0:px]
    d = np.hypot(yy - c, xx - c)
    r = px * 0.40
    line = max(1, px // 16)
    arm = max(1, px // 12)
    grid = np.zeros((px, px), dtype=bool)
    grid[:line, :] = grid[:, :line] = True
    disc = d <= r
    ring = disc & (d > r - max(1.0, px / 16))
    dot = d <= r * 0.38
    cross = disc & ((np.abs(yy - c) <= arm / 2 + 0.25) | (np.abs(xx - c) <= arm / 2 + 0.25)) & (d <= r * 0.7)
    return {"grid": grid, "disc": disc, "ring": ring, "dot": dot, "cross": cross}


def render_rgb(engine: Engine, state: State, game: int = 0, square_px: int = 32) -> np.ndarray:
    """The board as an ``(N*square_px, N*square_px, 3)`` uint8 image, rank N at the top."""
    if square_px < 4:
        raise ValueError(f"square_px must be at least 4, got {square_px}")
    n = engine.rules.board_size
    s = n * n
    px = square_px
    throne, corner, escape = _square_kinds(engine)
    board = state.board[game, :s]

    background = np.empty((s, 3), dtype=np.uint8)
    background[:] = SQUARE
    background[escape] = ESCAPE
    background[corner] = CORNER
    background[throne] = THRONE
    chain = int(state.chain[game])
    if chain >= 0:
        background[chain] = CHAIN

    st = _stencils(px)
    tiles = np.empty((s, px, px, 3), dtype=np.uint8)
    tiles[:] = background[:, None, None, :]
    tiles[:, st["grid"]] = GRID

    def paint(codes: tuple[int, ...], stencil: str, colour: tuple[int, int, int]) -> None:
        rows = np.flatnonzero(np.isin(board, codes))
        if len(rows):
            sub = tiles[rows]
            sub[:, st[stencil]] = colour
            tiles[rows] = sub

    paint((ATTACKER_SOLDIER, COMMANDER), "disc", ATTACKER_FILL)
    paint((DEFENDER_SOLDIER, KNIGHT, KING), "disc", DEFENDER_FILL)
    paint((DEFENDER_SOLDIER, KNIGHT, KING), "ring", OUTLINE)
    paint((COMMANDER,), "dot", COMMANDER_MARK)
    paint((KNIGHT,), "dot", KNIGHT_MARK)
    paint((KING,), "cross", KING_MARK)

    # (S, px, px, 3) -> rank N at the top: (N ranks reversed, px, N files, px, 3)
    image = tiles.reshape(n, n, px, px, 3)[::-1].transpose(0, 2, 1, 3, 4)
    return np.ascontiguousarray(image.reshape(n * px, n * px, 3))


# --- window ---------------------------------------------------------------------------------------

class HumanRenderer:
    """A pygame window showing rgb frames; pygame is imported only when a frame is first shown
    (without it, a :class:`~tafl_env.extras.MissingExtraError` names the ``render`` extra).

    ``show(frame)`` draws an ``(H, W, 3)`` uint8 image, handles window events (closing the window
    closes the renderer) and waits to keep ``fps``. ``close()`` shuts the window.
    """

    def __init__(self, caption: str = "tafl-env", fps: int = 4):
        self.caption = caption
        self.fps = fps
        self._pygame = None
        self._screen = None
        self._clock = None

    @property
    def is_open(self) -> bool:
        return self._screen is not None

    def show(self, frame: np.ndarray) -> None:
        frame = np.asarray(frame, dtype=np.uint8)
        height, width = frame.shape[:2]
        if self._screen is None or self._screen.get_size() != (width, height):
            self._open(width, height)
        pg = self._pygame
        pg.surfarray.blit_array(self._screen, frame.transpose(1, 0, 2))
        pg.display.flip()
        for event in pg.event.get():
            if event.type == pg.QUIT:
                self.close()
                return
        if self.fps:
            self._clock.tick(self.fps)

    def _open(self, width: int, height: int) -> None:
        require("render", "render_mode='human' (a window)")
        import pygame

        self._pygame = pygame
        pygame.display.init()
        pygame.display.set_caption(self.caption)
        self._screen = pygame.display.set_mode((width, height))
        self._clock = pygame.time.Clock()

    def close(self) -> None:
        if self._screen is not None:
            self._pygame.display.quit()
            self._screen = None
            self._clock = None
