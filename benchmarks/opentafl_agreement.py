"""Rules agreement of this engine with OpenTafl's own rules engine over random games.

Each game is played here by uniformly random legal actions under ``rules_string(make_rules(variant))``
and replayed in OpenTafl's rules engine (its ``RulesCheck`` driver, java, in ../shared/opentafl or
$OPENTAFL_HOME). After every move OpenTafl's position, side to move, result and sorted legal moves must
be this engine's, and every move played here must be one OpenTafl accepts. A game ends at its result
here or at the variant's move cap (OpenTafl has none: a capped game simply stops being compared).

Under the same string OpenTafl plays some details otherwise (RULES.md §10). A game that parts at one of
them is classified by the condition that holds at the ply where the two part (:data:`CLASSES`) and is
compared no further; any other difference is "unexplained":

    python benchmarks/opentafl_agreement.py                      # 2,000 games per variant
    python benchmarks/opentafl_agreement.py --games 20 --variants historical_tablut legacy_berserk
    python benchmarks/opentafl_agreement.py --variants legacy_berserk --no-pass

In Berserk most uniformly random games pass in an open chain sooner or later, which OpenTafl cannot
follow; ``--no-pass`` never chooses the pass, so that the games go on being compared past the chains.

One line per variant, the first unexplained games in full, then one JSON object as the last line
(``--json`` prints only that). The exit status is 1 if any game is unexplained.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

import tafl_env
from tafl_env import Game, make_rules
from tafl_env.notation import PIECE_LETTERS, parse_position, square_name
from tafl_env.opentafl import rules_string
from tafl_env.rules import RuleSet

ROOT = Path(__file__).resolve().parents[1]

CLASSES = {
    "agree": "every position, side to move, legal move and result identical to the end",
    "repetition": "a third occurrence that OpenTafl's tfr:l gives to the player whose move made it, "
                  "RULES.md §3.9 to the opponent of the player who started the repeating run",
    "no-empty-neighbour": "OpenTafl's attackers win: no defender has an empty neighbouring square",
    "attackers-without-move": "the attackers have no legal move (§3.8); OpenTafl has no rule for it",
    "defenders-without-move": "the defenders have no legal move but an empty neighbouring square (§3.8); "
                              "OpenTafl has no rule for it",
    "berserk-pass": "the pass that ends a berserk chain here (§5.5); OpenTafl's berserk piece cannot pass",
    "berserk-corner-continuation": "a chain open here only for the king's move into a corner (§5.5); "
                                   "OpenTafl's berserk piece goes on only while it can capture",
    "commander-king-capture": "the king captured four-sided here while the attackers have commanders; "
                              "OpenTafl then takes him only by a commander sandwich (§5.4)",
    "commander-counted-twice": "OpenTafl takes the king when a commander lands next to him with a plain "
                               "attacker on his far side, if its move captures another piece as well "
                               "(its sandwich counts the moving commander twice)",
    "unexplained": "any other difference",
}
"""The classes of a game, as the JSON counts them."""

RESULT_OF_VICTORY = {"0": None, "1": "draw", "2": "attacker", "3": "defender"}
SHOW_UNEXPLAINED = 3


def opentafl_home() -> Path | None:
    """OpenTafl's folder (its jars, the RulesCheck driver and match.sh): $OPENTAFL_HOME, else
    ../shared/opentafl beside the repository; None without it or without java (the benchmarks and
    tests that need OpenTafl use this one lookup)."""
    home = Path(os.environ.get("OPENTAFL_HOME") or ROOT.parent / "shared" / "opentafl")
    if all((home / name).exists() for name in ("opentafl.jar", "headless-driver.jar", "match.sh")) \
            and shutil.which("java"):
        return home
    return None


# --- the two sides of a game ---------------------------------------------------------------------

@dataclass
class OurState:
    """This engine's view at a ply: ``moves`` are the legal moves as ``a1-a3``, sorted, the pass left
    out; ``chain`` is the square of the piece that must continue a berserk chain."""

    position: str
    side: str
    chain: str | None
    moves: tuple[str, ...]
    result: str | None
    reason: str | None


@dataclass
class TheirState:
    """OpenTafl's view at a ply (a ``STATE`` line of RulesCheck), or ``refused`` with its error code
    when it did not accept the move."""

    position: str = ""
    side: str = ""
    result: str | None = None
    moves: tuple[str, ...] = ()
    refused: str | None = None


@dataclass
class RandomGame:
    """A game played here: the state at the start and after each move, and the moves. The last move
    may be a pass, with no state after it (OpenTafl cannot follow it)."""

    variant: str
    game_seed: int
    states: list[OurState] = field(default_factory=list)
    moves: list = field(default_factory=list)


@dataclass
class Verdict:
    """How a game compared: its class, the plies whose states were found identical, and for a
    difference the ply where the two parted and what differs there."""

    kind: str
    plies: int
    ply: int | None = None
    detail: str = ""


@lru_cache(maxsize=None)
def _move_names(variant: str) -> np.ndarray:
    """``a1-a3`` of every action id ('' for the pass and the ids of moves off the board)."""
    game = Game(variant)
    eng = game.engine
    actions = np.arange(eng.num_actions)
    origins, _, _, targets = eng.decode(actions)
    names = [square_name(s, game.n) for s in range(game.n * game.n)]
    on_board = range(game.n * game.n)
    out = np.array([f"{names[o]}-{names[t]}" if o in on_board and t in on_board else ""
                    for o, t in zip(origins.tolist(), targets.tolist())], dtype=object)
    out[eng.pass_action] = ""
    return out


def play_random_game(variant: str, game_seed: int, *, allow_pass: bool = True) -> RandomGame:
    """A uniformly random game of ``variant`` here, to its result or the variant's move cap; a pass
    ends it early. ``allow_pass=False`` never chooses the pass (in an open chain it then picks among
    the continuations)."""
    rules = make_rules(variant)
    game = Game(rules.replace(max_turns=None))
    pass_action = game.engine.pass_action
    names = _move_names(variant)
    rng = random.Random(game_seed)
    record = RandomGame(variant, game_seed)
    while True:
        actions = game.legal_actions()
        slides = actions[actions != pass_action]
        record.states.append(OurState(game.position, game.to_move[0], game.chain, tuple(sorted(names[slides])),
                                      game.result, game.reason))
        if game.is_over() or game.turns >= rules.max_turns:
            return record
        choices = actions if allow_pass else slides
        move = game.push(int(choices[rng.randrange(len(choices))]))
        record.moves.append(move)
        if move.is_pass:
            return record


class RulesCheck:
    """OpenTafl's RulesCheck driver in a java process, replaying one game after another."""

    def __init__(self, home: Path):
        self._folder = tempfile.TemporaryDirectory(prefix="opentafl-")   # for what OpenTafl may write
        classpath = f"{home}/headless-driver.jar:{home}/opentafl.jar:{home}/lib/*"
        self._proc = subprocess.Popen(["java", "-cp", classpath, "com.manywords.softworks.tafl.RulesCheck"],
                                      cwd=self._folder.name, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, text=True, encoding="ascii")
        self._rules = None

    def replay(self, rules_text: str, moves: list[str]) -> list[TheirState]:
        """OpenTafl's state at the start and after each move (a refused move leaves the state as it
        was: only the states up to the first refusal mean anything)."""
        head = "" if rules_text == self._rules else f"RULES {rules_text}\n"
        self._rules = rules_text
        # The moves of one game are a few KiB, well under a pipe's buffer: write them all, then read.
        self._proc.stdin.write(head + "NEW\n" + "".join(f"MOVE {m}\n" for m in moves))
        self._proc.stdin.flush()
        return [self._read() for _ in range(len(moves) + 1)]

    def _read(self) -> TheirState:
        line = self._proc.stdout.readline()
        words = line.split()
        if words[:1] == ["ILLEGAL"]:
            return TheirState(refused=words[2])
        if words[:1] != ["STATE"]:
            raise RuntimeError(f"OpenTafl's RulesCheck said {line!r}")
        moves = tuple(sorted(words[5].split(","))) if len(words) > 5 else ()
        return TheirState(words[4], words[2], RESULT_OF_VICTORY[words[3]], moves)

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.stdin.close()
            self._proc.wait(timeout=30)
        self._folder.cleanup()

    def __enter__(self) -> "RulesCheck":
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is not None:
            self._proc.kill()
        self.close()


# --- comparing -----------------------------------------------------------------------------------

def check_game(checker: RulesCheck, variant: str, game_seed: int, *,
               allow_pass: bool = True) -> tuple[Verdict, RandomGame]:
    """Play one random game here, replay it in OpenTafl, and compare the two ply by ply."""
    record = play_random_game(variant, game_seed, allow_pass=allow_pass)
    names = _move_names(variant)
    sent = [names[m.action] for m in record.moves if not m.is_pass]
    theirs = checker.replay(rules_string(make_rules(variant)), sent)
    return compare(record, theirs), record


def compare(record: RandomGame, theirs: list[TheirState]) -> Verdict:
    """The verdict on one game: the first state where the two differ, classified."""
    rules = make_rules(record.variant)
    for ply, (mine, their) in enumerate(zip(record.states, theirs)):
        difference = _difference(rules, record, ply, mine, their)
        if difference:
            kind = _classify(rules, record, theirs, ply) if ply else "unexplained"
            return Verdict(kind, max(ply - 1, 0), ply, difference)
        if mine.result is not None:
            return Verdict("agree", ply)
    last = len(record.states) - 1
    if record.moves and record.moves[-1].is_pass:
        # The state before the pass compared equal, side to move included: OpenTafl's chain is
        # open too, and its berserk piece must move.
        return Verdict("berserk-pass", last, last + 1, f"a pass here at ply {last + 1}")
    return Verdict("agree", last)


def _difference(rules: RuleSet, record: RandomGame, ply: int, mine: OurState, their: TheirState) -> str:
    """What differs between the two states of one ply ('' if nothing). After the end only the
    position and the result count (who is to move in a finished game is a convention, §6.3)."""
    if their.refused:
        return f"OpenTafl refuses the move {record.moves[ply - 1].notation} (its code {their.refused})"
    out = []
    if mine.position != their.position:
        out.append(f"position: here {mine.position}, OpenTafl {their.position}")
    if mine.result != their.result:
        out.append(f"result: here {mine.result} ({mine.reason}), OpenTafl {their.result}")
    if out or mine.result is not None:
        return "; ".join(out)
    if mine.side != their.side:
        return f"side to move: here {mine.side} (chain {mine.chain}), OpenTafl {their.side}"
    if mine.chain is None:
        return _moves_difference(mine.moves, their.moves)
    # In a chain OpenTafl's berserk piece may make any of its moves, capturing or not (RulesCheck
    # lists every piece's moves; it refuses the others): they must be the piece's moves here,
    # our continuations among them.
    ordinary = _piece_moves(rules, mine.position, mine.side, mine.chain)
    allowed = tuple(m for m in their.moves if m.split("-")[0] == mine.chain)
    if allowed != ordinary:
        return "the berserk piece's moves: " + _moves_difference(ordinary, allowed)
    if not set(mine.moves) <= set(allowed):
        return f"continuations here that OpenTafl refuses: {sorted(set(mine.moves) - set(allowed))}"
    return ""


def _moves_difference(mine: tuple[str, ...], theirs: tuple[str, ...]) -> str:
    if mine == theirs:
        return ""
    return (f"legal moves: only here {sorted(set(mine) - set(theirs))}, "
            f"only in OpenTafl {sorted(set(theirs) - set(mine))}")


def _piece_moves(rules: RuleSet, position: str, side: str, square: str) -> tuple[str, ...]:
    """The moves here of the piece on ``square`` with no chain open."""
    game = Game(rules.replace(max_turns=None), position=position, to_move="attacker" if side == "a" else "defender")
    names = _move_names(rules.name)
    return tuple(sorted(m for m in names[game.legal_actions()] if m.split("-")[0] == square))


def _classify(rules: RuleSet, record: RandomGame, theirs: list[TheirState], ply: int) -> str:
    """The class whose condition holds where the two part, at ``ply`` (>= 1), else "unexplained"."""
    mine, their, before, move = record.states[ply], theirs[ply], record.states[ply - 1], record.moves[ply - 1]
    if their.refused:
        return "unexplained"
    n = rules.board_size
    mover_wins = "attacker" if before.side == "a" else "defender"
    board, before_board = _board(mine.position, n), _board(before.position, n)
    if mine.position == their.position:
        if mine.result is None and their.result == "attacker" and not _defender_with_empty_neighbour(board, n):
            return "no-empty-neighbour"
        if mine.reason == "repetition" and their.result == mover_wins \
                and _occurrences(record.states[:ply + 1], mine) >= 3:
            return "repetition"
        if mine.reason == "no_moves" and their.result is None and not their.moves and mine.side == their.side:
            return "attackers-without-move" if mine.side == "a" else "defenders-without-move"
        if mine.result is None and their.result is None and mine.chain and their.side != mine.side:
            return _why_our_chain_opened(rules, record, ply)
        return "unexplained"
    their_board = _board(their.position, n)
    if _without_king(board) != _without_king(their_board):
        return "unexplained"
    # the positions differ by the king alone: one side took him, the other did not
    if mine.reason == "king_captured" and their.result is None and "c" in before_board.values() \
            and not _commander_sandwich(before_board, move, n):
        return "commander-king-capture"
    if mine.result is None and their.result == "attacker" and "K" not in their_board \
            and move.captures and _commander_counted_twice(before_board, move, n):
        return "commander-counted-twice"
    return "unexplained"


def _why_our_chain_opened(rules: RuleSet, record: RandomGame, ply: int) -> str:
    """A chain open here but not in OpenTafl: explained if each continuation is one that OpenTafl does
    not count as a capture (the king's move into a corner that takes nothing; a four-sided capture of
    the king while the attackers have commanders)."""
    game = Game(rules.replace(max_turns=None))
    for m in record.moves[:ply]:
        game.push(m.action)
    n = game.n
    board = _board(game.position, n)
    king = next((sq for sq, p in board.items() if p == "K"), None)
    kinds = set()
    for m in game.legal_moves():
        if m.is_pass:
            continue
        if board[m.origin] == "K" and not m.captures and _is_corner(m.target, n):
            kinds.add("berserk-corner-continuation")
        elif list(m.captures) == [king] and "c" in board.values() \
                and not _commander_sandwich(board, m, n):
            kinds.add("commander-king-capture")
        else:
            return "unexplained"
    return min(kinds) if kinds else "unexplained"


# --- conditions on a position --------------------------------------------------------------------

def _board(position: str, n: int) -> dict[int, str]:
    """square index → piece letter, occupied squares only."""
    codes = parse_position(position, n)
    return {sq: PIECE_LETTERS[int(codes[sq])] for sq in np.flatnonzero(codes).tolist()}


def _without_king(board: dict[int, str]) -> dict[int, str]:
    return {sq: p for sq, p in board.items() if p != "K"}


def _neighbours(square: int, n: int) -> list[int]:
    row, col = divmod(square, n)
    return [r * n + c for r, c in ((row + 1, col), (row - 1, col), (row, col + 1), (row, col - 1))
            if 0 <= r < n and 0 <= c < n]


def _defender_with_empty_neighbour(board: dict[int, str], n: int) -> bool:
    return any(nb not in board for sq, p in board.items() if p in "TNK" for nb in _neighbours(sq, n))


def _is_corner(square: int, n: int) -> bool:
    return square in (0, n - 1, n * (n - 1), n * n - 1)


def _king_beside_landing(board: dict[int, str], move, n: int) -> tuple[int, int | None] | None:
    """(the king's square, the square beyond him in line or None off the board) if ``move`` lands
    next to the king, else None."""
    row, col = divmod(move.target, n)
    for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        kr, kc, fr, fc = row + dr, col + dc, row + 2 * dr, col + 2 * dc
        if 0 <= kr < n and 0 <= kc < n and board.get(kr * n + kc) == "K":
            return kr * n + kc, (fr * n + fc if 0 <= fr < n and 0 <= fc < n else None)
    return None


def _commander_sandwich(board: dict[int, str], move, n: int) -> bool:
    """Whether ``move`` (``board`` the position before it) brings a commander next to the king with a
    commander or a corner beyond him (§5.4)."""
    beside = _king_beside_landing(board, move, n)
    if board.get(move.origin) != "c" or beside is None or beside[1] is None:
        return False
    return board.get(beside[1]) == "c" or _is_corner(beside[1], n)


def _commander_counted_twice(board: dict[int, str], move, n: int) -> bool:
    """Whether ``move`` brings a commander next to the king, off the throne, with an ordinary attacker
    beyond him: OpenTafl counts that commander twice (as the mover and as the piece on the landing
    square) when it judges the captures of a move that captures anything."""
    beside = _king_beside_landing(board, move, n)
    centre = (n // 2) * n + n // 2
    return board.get(move.origin) == "c" and beside is not None and beside[0] != centre \
        and beside[1] is not None and board.get(beside[1]) == "t"


def _occurrences(states: list[OurState], state: OurState) -> int:
    """How often ``state``'s board and side to move occur in ``states`` at the end of a turn (the
    positions inside a berserk chain are not recorded, §3.9)."""
    return sum(s.position == state.position and s.side == state.side and s.chain is None for s in states)


# --- the run -------------------------------------------------------------------------------------

def check_variant(checker: RulesCheck, variant: str, games: int, seed: int, *,
                  allow_pass: bool = True) -> tuple[dict, list[str]]:
    """``games`` random games of ``variant``: the report and the first unexplained games in full."""
    classes, ends = Counter(), Counter()
    plies = chain_plies = 0
    shown: list[str] = []
    start = time.perf_counter()
    for g in range(games):
        game_seed = seed * 1_000_000 + g
        verdict, record = check_game(checker, variant, game_seed, allow_pass=allow_pass)
        classes[verdict.kind] += 1
        plies += verdict.plies
        chain_plies += sum(s.chain is not None for s in record.states[:verdict.plies + 1])
        if verdict.kind == "agree":
            ends[record.states[-1].reason or "capped"] += 1
        if verdict.kind == "unexplained" and len(shown) < SHOW_UNEXPLAINED:
            shown.append(describe(record, verdict))
    report = {"variant": variant, "games": games, "plies": plies, "chain_plies": chain_plies,
              "classes": dict(classes), "agree_ends": dict(ends), "seconds": round(time.perf_counter() - start, 1)}
    return report, shown


def describe(record: RandomGame, verdict: Verdict) -> str:
    """A game in full up to the ply where it parted: its seed, the moves, what differs there and
    this engine's states before and after the last move."""
    ply = verdict.ply or 0
    after = record.states[ply] if ply < len(record.states) else None
    return (f"{record.variant}, game seed {record.game_seed}, ply {ply}: {verdict.detail}\n"
            f"    moves: {' '.join(m.notation for m in record.moves[:ply])}\n"
            f"    here before the move: {record.states[ply - 1] if ply else None}\n"
            f"    here after it: {after}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--games", type=int, default=2_000, help="random games per variant (default 2000)")
    p.add_argument("--variants", nargs="+", default=list(tafl_env.VARIANTS), metavar="VARIANT",
                   help="default: the five variants")
    p.add_argument("--seed", type=int, default=0, help="game g plays with the seed SEED*1000000+g")
    p.add_argument("--no-pass", action="store_true", help="never choose the pass in a berserk chain")
    p.add_argument("--json", action="store_true", help="print only the JSON line")
    args = p.parse_args(argv)
    home = opentafl_home()
    if home is None:
        print("OpenTafl (../shared/opentafl or $OPENTAFL_HOME) and java are needed", file=sys.stderr)
        return 2
    reports = []
    with RulesCheck(home) as checker:
        for variant in args.variants:
            report, shown = check_variant(checker, variant, args.games, args.seed, allow_pass=not args.no_pass)
            reports.append(report)
            if not args.json:
                print(f"{variant:<22} {report['games']:>6} games {report['plies']:>9} plies compared "
                      f"({report['chain_plies']} in chains), {report['seconds']} s; {report['classes']}; "
                      f"agreed games ended {report['agree_ends']}", flush=True)
                for text in shown:
                    print("  unexplained: " + text, flush=True)
    print(json.dumps({"games_per_variant": args.games, "seed": args.seed, "no_pass": args.no_pass,
                      "variants": reports}))
    return 1 if any(r["classes"].get("unexplained") for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
