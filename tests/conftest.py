"""Shared test helpers: the public case data and board diagrams → position strings.

Test modules import what they need from here (``from conftest import CASES_DIR, diagram_position``);
pytest puts this folder on ``sys.path`` because ``tests/`` is not a package. One diagram reader
serves every test module, so that all of them read a board the same way.

Board diagrams
--------------

A diagram draws the board rank N on top, one rank per line, the squares from file ``a``::

    9 . . . t t t . . .        rank number first (optional), cells separated by spaces ...
    8 . . . . t . . . .
    ...
      a b c d e f g h i        ... and an optional line of file letters, which is ignored

    3 .A.D                     ... or with the squares of a rank written together

``.`` is an empty square. Pieces are written with the position-string letters of RULES.md §1
(``t`` attacker soldier, ``c`` commander, ``T`` defender soldier, ``N`` knight, ``K`` king) or the
diagram letters of RULES.md §2 (``A`` attacker, ``C`` commander, ``D`` defender, ``N``, ``K``); both
may be mixed. Without rank numbers the first line is rank N.

A diagram is complete by default: N ranks of N squares, every rank once. With ``partial=True`` (and
the board size ``n``) only the ranks that matter are drawn, each with its rank number; undrawn ranks
are empty and a short rank is empty to its right, so the same small pattern in the bottom-left corner
is one position on every board size.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

# The compile notice (tafl_env/engine/compile_notice.py) goes to stderr; tests that check a
# command's one-line error must not depend on whether the kernels were in the cache.
os.environ.setdefault("TAFL_COMPILE_NOTICE", "0")

CASES_DIR = Path(__file__).resolve().parent / "data" / "cases"
"""The public test cases (perft counts and game records of an independent implementation)."""

FILES = "abcdefghijklmnopqrs"

# Diagram letter -> position-string letter (RULES.md §1 and §2 letters, both accepted).
_LETTERS = {"t": "t", "c": "c", "T": "T", "N": "N", "K": "K", "A": "t", "C": "c", "D": "T"}


def _rows(diagram: str) -> list[tuple[int | None, list[str]]]:
    """(rank or None, cells) of every drawn rank, top line first; blank lines and file-letter lines
    are skipped."""
    rows = []
    for line in diagram.splitlines():
        tokens = line.split()
        if not tokens:
            continue
        if "".join(tokens) == FILES[: len("".join(tokens))]:
            continue  # a footer of file letters
        rank = None
        if tokens[0].isdigit():
            rank, tokens = int(tokens[0]), tokens[1:]
        cells = list(tokens[0]) if len(tokens) == 1 else tokens
        for cell in cells:
            if cell != "." and cell not in _LETTERS:
                raise ValueError(f"diagram line {line.strip()!r}: unknown piece {cell!r}")
        rows.append((rank, cells))
    return rows


def diagram_pieces(diagram: str, n: int | None = None, *, partial: bool = False) -> dict[str, str]:
    """``{square: letter}`` of the pieces of a diagram (see the module docstring), letters as in
    position strings, e.g. ``{"e5": "K", "e4": "T", ...}``."""
    rows = _rows(diagram)
    labelled = [rank is not None for rank, _ in rows]
    if partial:
        if n is None:
            raise ValueError("a partial diagram needs the board size n")
        if not all(labelled):
            raise ValueError("every rank of a partial diagram needs its rank number")
    else:
        if any(labelled) and not all(labelled):
            raise ValueError("either every rank of a diagram has its number or none has")
        size = len(rows)
        if n is not None and n != size:
            raise ValueError(f"the diagram has {size} ranks, expected {n}")
        n = size
        if not all(labelled):
            rows = [(n - i, cells) for i, (_, cells) in enumerate(rows)]
        if sorted(rank for rank, _ in rows) != list(range(1, n + 1)):
            raise ValueError(f"the diagram needs the ranks 1..{n}, each once")
    seen = set()
    pieces: dict[str, str] = {}
    for rank, cells in rows:
        if rank in seen:
            raise ValueError(f"rank {rank} is drawn twice")
        seen.add(rank)
        if not 1 <= rank <= n:
            raise ValueError(f"rank {rank} is off a {n}x{n} board")
        if len(cells) > n or (not partial and len(cells) != n):
            raise ValueError(f"rank {rank} has {len(cells)} squares on a {n}x{n} board")
        for file, cell in enumerate(cells):
            if cell != ".":
                pieces[f"{FILES[file]}{rank}"] = _LETTERS[cell]
    return pieces


def pieces_position(pieces: dict[str, str], n: int) -> str:
    """The position string of ``{square: letter}`` on an n×n board (RULES.md §1: rank 1 first,
    digits for runs of empty squares)."""
    out = "/"
    for rank in range(1, n + 1):
        run = 0
        for file in FILES[:n]:
            letter = pieces.get(f"{file}{rank}")
            if letter is None:
                run += 1
                continue
            out += (str(run) if run else "") + letter
            run = 0
        out += (str(run) if run else "") + "/"
    return out


def diagram_position(diagram: str, n: int | None = None, *, partial: bool = False) -> str:
    """The position string of a board diagram (see the module docstring).

    >>> diagram_position('''
    ...     3 . t .
    ...     2 T K T
    ...     1 . t .
    ...       a b c''')
    '/1t1/TKT/1t1/'
    >>> diagram_position("2 .A.D", 5, partial=True)
    '/5/1t1T1/5/5/5/'
    """
    pieces = diagram_pieces(diagram, n, partial=partial)
    if n is None:
        n = len(_rows(diagram))
    return pieces_position(pieces, n)


def load_script(relative: str):
    """A script of the repository (``benchmarks/…py``, ``tools/…py``: folders that are no package) as
    a module, loaded as running it would: registered under its name before it runs (its dataclasses
    look their module up there) and with its folder on the path (it imports its neighbours by name;
    appended, so that nothing installed is shadowed)."""
    path = Path(__file__).resolve().parents[1] / relative
    if str(path.parent) not in sys.path:
        sys.path.append(str(path.parent))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
