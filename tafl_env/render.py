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

Both drawings can mark the last move (``last_move=(origin, target)``, square indices): the text
puts the moved piece in parentheses and the square it left as ``*``; the image frames both squares
in blue. ``render_rgb(..., coords=True)`` adds a margin with the file letters below the board and
the rank numbers on its left (the image stays square).

    >>> g.push("c5-c6").notation
    'c5-c6'
    >>> move = g.moves[-1]
    >>> print(render_ansi(g.engine, g.state, last_move=(move.origin, move.target)).splitlines()[1])
    6 . .(T)t . . .
    >>> render_rgb(g.engine, g.state, square_px=16, coords=True).shape
    (122, 122, 3)
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
LAST_MOVE = (40, 110, 220)
MARGIN = (240, 226, 200)
LABEL = (90, 60, 30)

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


LAST_ORIGIN_CHAR = "*"


def _last_move_squares(last_move, s: int) -> tuple[int, int] | None:
    """``(origin, target)`` of a last move given as a pair or a :class:`~tafl_env.game.Move`
    (``None`` for no move or a pass)."""
    if last_move is None:
        return None
    origin, target = (last_move.origin, last_move.target) if hasattr(last_move, "origin") else last_move
    if origin is None or target is None:
        return None
    origin, target = int(origin), int(target)
    if not (0 <= origin < s and 0 <= target < s):
        raise ValueError(f"last_move squares must lie in 0..{s - 1}, got {(origin, target)}")
    return origin, target


def render_ansi(engine: Engine, state: State, game: int = 0, last_move=None) -> str:
    """The board as text (rank N on top, files below) and a status line.

    ``last_move``: ``(origin, target)`` squares (or a ``Move``) to mark: the moved piece in
    parentheses, the square it left as ``*`` (when still empty).
    """
    n = engine.rules.board_size
    s = n * n
    throne, corner, _ = _square_kinds(engine)
    cells = state.board[game, :s].tolist()
    width = len(str(n))
    marked = _last_move_squares(last_move, s)
    lines = []
    for r in range(n - 1, -1, -1):
        text = [f"{r + 1:>{width}}"]
        for sq in range(r * n, (r + 1) * n):
            code = cells[sq]
            if code != EMPTY:
                char = PIECE_LETTERS[code]
            elif marked and sq == marked[0]:
                char = LAST_ORIGIN_CHAR
            elif throne[sq]:
                char = EMPTY_THRONE_CHAR
            elif corner[sq]:
                char = EMPTY_CORNER_CHAR
            else:
                char = "."
            text += [" ", char]
        if marked and marked[1] // n == r:   # the separators around the target become ( )
            k = 2 * (marked[1] % n) + 1
            text[k] = "("
            if k + 2 < len(text):
                text[k + 2] = ")"
            else:
                text.append(")")
        lines.append("".join(text))
    lines.append(" " * (width + 1) + " ".join(FILES[:n]))
    lines.append(status_line(engine, state, game))
    return "\n".join(lines)


# --- image ----------------------------------------------------------------------------------------

@lru_cache(maxsize=16)
def _stencils(px: int) -> dict[str, np.ndarray]:
    """(px, px) bool masks of one square: grid line, disc, outline ring, centre dot, cross, and the
    frame inside the grid line that marks a last move."""
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
    band = max(1, px // 12)
    frame = np.zeros((px, px), dtype=bool)
    frame[line:line + band, line:] = frame[px - band:, line:] = True
    frame[line:, line:line + band] = frame[line:, px - band:] = True
    return {"grid": grid, "disc": disc, "ring": ring, "dot": dot, "cross": cross, "frame": frame}


def render_rgb(engine: Engine, state: State, game: int = 0, square_px: int = 32, *, coords: bool = False,
               last_move=None) -> np.ndarray:
    """The board as an ``(N*square_px, N*square_px, 3)`` uint8 image, rank N at the top.

    ``coords``: add a margin with file letters below and rank numbers left of the board, so the
    image is ``(N*square_px + M)`` square (``M`` = :func:`margin_px`). ``last_move``:
    ``(origin, target)`` squares (or a ``Move``) framed in blue.
    """
    if square_px < 4:
        raise ValueError(f"square_px must be at least 4, got {square_px}")
    n = engine.rules.board_size
    s = n * n
    px = square_px
    throne, corner, escape = _square_kinds(engine)
    board = state.board[game, :s]
    marked = _last_move_squares(last_move, s)

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
    if marked:
        tiles[list(marked)] = np.where(st["frame"][None, :, :, None], np.array(LAST_MOVE, np.uint8),
                                       tiles[list(marked)])

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
    image = np.ascontiguousarray(tiles.reshape(n, n, px, px, 3)[::-1].transpose(0, 2, 1, 3, 4)
                                 .reshape(n * px, n * px, 3))
    return _with_coordinates(image, n, px) if coords else image


# --- coordinates ----------------------------------------------------------------------------------

_GLYPHS = {  # 3x5 bitmaps, rows top to bottom
    "0": "111101101101111", "1": "010110010010111", "2": "111001111100111", "3": "111001111001111",
    "4": "101101111001001", "5": "111100111001111", "6": "111100111101111", "7": "111001001010010",
    "8": "111101111101111", "9": "111101111001111",
    "a": "000011101101011", "b": "100110101101110", "c": "000011100100011", "d": "001011101101011",
    "e": "000010111100011", "f": "001010111010010", "g": "011101011001110", "h": "100110101101101",
    "i": "010000010010010", "j": "001000001101010", "k": "100101110110101", "l": "110010010010111",
    "m": "000111111101101", "n": "000110101101101", "o": "000010101101010", "p": "110101110100100",
    "q": "011101011001001", "r": "000101110100100", "s": "000011110011110",
}


def _glyph_scale(px: int) -> int:
    return max(1, round(px / 14))


def margin_px(square_px: int) -> int:
    """The width of the coordinate margin that ``render_rgb(..., coords=True)`` adds."""
    return max(square_px // 2, 10 * _glyph_scale(square_px))


def _text_mask(text: str, scale: int) -> np.ndarray:
    """A bool bitmap of ``text`` in the 3x5 font, ``scale`` pixels per dot, one dot between glyphs."""
    width = 4 * len(text) - 1
    mask = np.zeros((5, width), dtype=bool)
    for k, ch in enumerate(text):
        mask[:, 4 * k:4 * k + 3] = np.array([c == "1" for c in _GLYPHS[ch]]).reshape(5, 3)
    return np.kron(mask, np.ones((scale, scale), dtype=bool))


def _with_coordinates(image: np.ndarray, n: int, px: int) -> np.ndarray:
    m = margin_px(px)
    scale = _glyph_scale(px)
    out = np.empty((n * px + m, m + n * px, 3), dtype=np.uint8)
    out[:] = MARGIN
    out[: n * px, m:] = image

    def put(text: str, cy: int, cx: int) -> None:
        mask = _text_mask(text, scale)
        h, w = mask.shape
        y0, x0 = cy - h // 2, cx - w // 2
        out[y0:y0 + h, x0:x0 + w][mask] = LABEL

    for r in range(n):  # rank r + 1, drawn at row n - 1 - r
        put(str(r + 1), (n - 1 - r) * px + px // 2, m // 2)
    for f in range(n):
        put(FILES[f], n * px + m // 2, m + f * px + px // 2)
    return out


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
