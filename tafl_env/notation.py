"""Notation (RULES.md §1, §6.7): squares, piece letters, position strings and move strings.

Squares are ints ``(rank-1)*N + file``; ``a1`` is 0. A position string is the OpenTafl positional
record, rank 1 first. A move string is the OpenTafl short move record::

    >>> square_name(0, 9), parse_square("e5", 9)
    ('a1', 40)
    >>> m = parse_move("f7-f9xf8/g9", 11)
    >>> square_name(m.origin, 11), square_name(m.target, 11), sorted(square_name(s, 11) for s in m.captures)
    ('f7', 'f9', ['f8', 'g9'])

Readers are lenient where RULES §6.7 says so (``-`` for every move type, an optional piece letter
before a square, a trailing ``+``/``++``/``-``/``--``, an empty capture suffix); writers always
produce the full form (``^`` for jumps, ``=``/``^=`` inside a berserk chain, captures listed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .errors import InvalidMoveError, InvalidPositionError, preview

# Piece codes of the engine. OFFBOARD is the value of the sentinel cell past the last square.
EMPTY, ATTACKER_SOLDIER, COMMANDER, DEFENDER_SOLDIER, KNIGHT, KING, OFFBOARD = range(7)
NUM_CODES = 7
PIECE_LETTERS = {ATTACKER_SOLDIER: "t", COMMANDER: "c", DEFENDER_SOLDIER: "T", KNIGHT: "N", KING: "K"}
LETTER_CODES = {letter: code for code, letter in PIECE_LETTERS.items()}
FILES = "abcdefghijklmnopqrstuvwxyz"

PASS = "pass"


def square_name(square: int, n: int) -> str:
    """``square_name(0, 9) == 'a1'``."""
    if not 0 <= square < n * n:
        raise InvalidMoveError(f"square index {square} is off the {n}x{n} board")
    return f"{FILES[square % n]}{square // n + 1}"


# ASCII digits only: in a Python regex \d also matches other scripts' digits (fullwidth "２"),
# which int() would then read as if they were ASCII.
_SQUARE_RE = re.compile(r"([a-z])([0-9]{1,2})")


def parse_square(text: str, n: int) -> int:
    """``parse_square('e5', 9) == 40``; a malformed or off-board square is an error naming it."""
    m = _SQUARE_RE.fullmatch(text.strip())
    if not m:
        raise InvalidMoveError(f"malformed square {preview(text)}: expected a file letter and a rank, like 'e5'")
    file, rank = FILES.index(m.group(1)), int(m.group(2))
    if file >= n or not 1 <= rank <= n:
        raise InvalidMoveError(f"square {preview(text)} is off the {n}x{n} board")
    return (rank - 1) * n + file


# --- position strings ---------------------------------------------------------------------------

def parse_position(text: str, n: int) -> np.ndarray:
    """Position string → int8 array of N*N piece codes (square index order).

    Shape is checked (N records of N squares each); what the pieces may stand on is checked by the
    engine, which knows the rules (RULES §6.6).
    """
    if not isinstance(text, str):
        raise InvalidPositionError(f"a position string must be a str, not {type(text).__name__}")
    s = text.strip()
    if not (s.startswith("/") and s.endswith("/")) or len(s) < 2:
        raise InvalidPositionError(
            f"malformed position {preview(text)}: it must start and end with '/' (e.g. '/3ttt3/.../')"
        )
    records = s[1:-1].split("/")
    if len(records) != n:
        raise InvalidPositionError(
            f"malformed position {preview(text)}: {len(records)} rank records, expected {n} for a {n}x{n} board"
        )
    board = np.zeros(n * n, dtype=np.int8)
    for r, record in enumerate(records):
        col = 0
        for tok in re.findall(r"[0-9]+|.", record):
            if tok[0] in "0123456789":
                if tok.startswith("0"):
                    raise InvalidPositionError(f"malformed rank {r + 1} record {preview(record)}: "
                                               f"empty run {preview(tok)}")
                if len(tok) > len(str(n)):   # (int() of 4300+ digits is itself an error)
                    raise InvalidPositionError(f"malformed rank {r + 1} record {preview(record)}: run "
                                               f"{preview(tok)} is longer than the {n}-square rank")
                col += int(tok)
            elif tok in LETTER_CODES:
                if col < n:
                    board[r * n + col] = LETTER_CODES[tok]
                col += 1
            else:
                raise InvalidPositionError(
                    f"unknown piece letter {preview(tok)} in rank {r + 1} record {preview(record)}; "
                    f"letters are {', '.join(LETTER_CODES)}"
                )
        if col != n:
            raise InvalidPositionError(
                f"rank {r + 1} record {preview(record)} covers {col} squares, expected {n}"
            )
    return board


def format_position(board: np.ndarray, n: int) -> str:
    """int array of N*N piece codes → position string (rank 1 first)."""
    out = ["/"]
    cells = np.asarray(board)[: n * n].tolist()
    for r in range(n):
        run = 0
        for code in cells[r * n:(r + 1) * n]:
            if code == EMPTY:
                run += 1
                continue
            if run:
                out.append(str(run))
                run = 0
            out.append(PIECE_LETTERS[code])
        if run:
            out.append(str(run))
        out.append("/")
    return "".join(out)


def board_diagram(board: np.ndarray, n: int) -> str:
    """A text board, rank N at the top, with coordinates (used by ``repr``/``ansi`` rendering)."""
    cells = np.asarray(board)[: n * n].tolist()
    width = len(str(n))
    lines = []
    for r in range(n - 1, -1, -1):
        row = " ".join(PIECE_LETTERS.get(c, ".") for c in cells[r * n:(r + 1) * n])
        lines.append(f"{r + 1:>{width}} {row}")
    lines.append(" " * (width + 1) + " ".join(FILES[:n]))
    return "\n".join(lines)


# --- moves --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ParsedMove:
    """A move string as read: origin, target, separator and the optional capture set.

    ``captures`` is ``None`` when the string lists none (then it is not checked); otherwise the
    set of captured squares, which must equal what the move really captures.
    """

    origin: int
    target: int
    jump: bool
    continuation: bool
    captures: frozenset[int] | None


_MOVE_RE = re.compile(
    r"(?P<p1>[tTcCnNkK])?(?P<origin>[a-z][0-9]{1,2})"
    r"(?P<sep>\^=|-=|=|\^|-)"
    r"(?P<p2>[tTcCnNkK])?(?P<target>[a-z][0-9]{1,2})"
    r"(?:x(?P<caps>[tTcCnNkK]?[a-z][0-9]{1,2}(?:/[tTcCnNkK]?[a-z][0-9]{1,2})*)?)?"
    r"(?P<trail>\+\+|\+|--|-)?"
)
_CAPTURE_RE = re.compile(r"(?:[tTcCnNkK](?=[a-z]))?([a-z][0-9]{1,2})")


def parse_move(text: str, n: int) -> ParsedMove | str:
    """Parse one move string; returns :data:`PASS` for ``"pass"``.

    Raises :class:`InvalidMoveError` naming the string and the part that is wrong.
    """
    if not isinstance(text, str):
        raise InvalidMoveError(f"a move must be a str, not {type(text).__name__}")
    s = text.strip()
    if s.lower() == PASS:
        return PASS
    m = _MOVE_RE.fullmatch(s)
    if not m:
        raise InvalidMoveError(
            f"malformed move {preview(text)}: expected like 'f7-f9', 'f7^f9', 'f9=f4xf3' or 'pass'"
        )
    try:
        origin = parse_square(m.group("origin"), n)
        target = parse_square(m.group("target"), n)
        caps = None
        if m.group("caps"):
            caps = frozenset(parse_square(_CAPTURE_RE.fullmatch(c).group(1), n)
                             for c in m.group("caps").split("/"))
    except InvalidMoveError as exc:
        raise InvalidMoveError(f"malformed move {preview(text)}: {exc}") from None
    sep = m.group("sep")
    return ParsedMove(origin, target, jump=sep.startswith("^"), continuation=sep.endswith("="),
                      captures=caps)


def format_move(origin: int, target: int, n: int, *, jump: bool = False, continuation: bool = False,
                captures: tuple[int, ...] = ()) -> str:
    """The writer's form: ``f7-f9``, ``f7^f9``, ``f9=f4xf3``, ``f7^=f9xf8/g9``."""
    sep = ("^" if jump else "") + ("=" if continuation else "")
    sep = sep or "-"
    text = f"{square_name(origin, n)}{sep}{square_name(target, n)}"
    if captures:
        text += "x" + "/".join(square_name(c, n) for c in captures)
    return text
