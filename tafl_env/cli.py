"""The ``tafl`` command line (DESIGN.md, "Command line").

::

    tafl variants                                   the variant ids, board sizes and summaries
    tafl moves VARIANT [--position POS --to-move SIDE] [--moves MOVE...]
    tafl perft VARIANT DEPTH [--position POS --to-move SIDE] [--moves MOVE...]
    tafl replay VARIANT [--position POS --to-move SIDE] MOVE... | --file F
    tafl replay FILE.otg                            an OpenTafl game record (its rules, its moves)
    tafl bench [VARIANT...] [--batch B...] [--seconds S]
    tafl eval --config FILE [--games N] [--out DIR] [--agents NAME...]   a round-robin tournament
    tafl play VARIANT --vs AGENT [--side attacker|defender] [--seed S]   play an agent in the terminal
    tafl train --config FILE [--out DIR] [--timesteps N] [--seed S] [--resume CKPT]   self-play training

``eval``, ``play`` and ``train`` are not part of this package: the ``agents`` package contributes
them through the entry-point group ``tafl.commands`` (``pyproject.toml``), and :func:`main` loads
an add-on command only when it is asked for (or for ``--help``). ``tafl_env`` imports nothing from
``agents``: the environments stand alone, the agents build on them. An add-on entry point names a
function ``add(subparsers)`` that adds one sub-parser named like the entry point and sets its
``func(args) -> int``; it raises :class:`CommandError` for bad input, like the built-in commands.

Every command takes ``--json``: then the last line of stdout is one JSON object. The rule commands
(``moves``, ``perft``, ``replay``) take ``--option NAME=VALUE`` (repeatable) for any rule option of
the variant (values read as int, ``None``, ``true``/``false`` or text) and apply no move cap unless
``--max-turns N`` (or ``--option max_turns=N``) is given. Bad input (an unknown variant, option,
side, a malformed position or move, an illegal move) ends with exit status 2 and a message on
stderr, without a traceback.

The rule commands import no training library (no torch, SB3, gymnasium or pettingzoo): only numpy
and this package, so that scripts may call them thousands of times. The add-on commands need
extras (:mod:`tafl_env.extras`): ``eval`` PyYAML, tqdm and matplotlib (the ``eval`` extra),
``train`` and a ``policy:`` agent also torch and sb3-contrib (the ``train`` extra); without them
they stop at once with one line naming the extra to install.

    >>> main(["perft", "historical_tablut", "1"])
    80
    0
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from typing import Any, Sequence

from . import __version__
from .errors import TaflError, preview
from .extras import MissingExtraError
from .rules import EXTRA_VARIANTS, SIDES, VARIANTS, RuleSet, base_rules, make_rules

PROG = "tafl"
COMMANDS_GROUP = "tafl.commands"
"""The entry-point group through which other packages add commands (``agents``: eval, play, train)."""
BUILTIN_COMMANDS = ("variants", "moves", "perft", "replay", "bench")
DEFAULT_BATCHES = (1, 64, 1024, 4096)
DEFAULT_SECONDS = 2.0


class CommandError(Exception):
    """Bad input to a command: reported on stderr, exit status 2."""


# --- argument helpers ------------------------------------------------------------------------------

def parse_option_value(text: str) -> Any:
    """``"3"`` → 3, ``"None"``/``"null"`` → None, ``"true"``/``"false"`` → bool, else the text.

    >>> [parse_option_value(v) for v in ["3", "None", "true", "False", "draw"]]
    [3, None, True, False, 'draw']
    """
    low = text.strip().lower()
    if low in ("none", "null"):
        return None
    if low == "true":
        return True
    if low == "false":
        return False
    try:
        return int(text)
    except ValueError:
        return text


def parse_options(items: Sequence[str] | None) -> dict[str, Any]:
    """``["repetition=draw", "max-turns=50"]`` → ``{"repetition": "draw", "max_turns": 50}``."""
    options: dict[str, Any] = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name:
            raise CommandError(f"malformed --option {preview(item)}: expected NAME=VALUE, e.g. repetition=draw")
        options[name] = parse_option_value(value)
    return options


def rule_option_names() -> list[str]:
    import dataclasses

    return sorted(f.name for f in dataclasses.fields(RuleSet) if f.name not in ("name", "title", "summary"))


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive int, got {preview(text)}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive int, got {preview(text)}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an int >= 0, got {preview(text)}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an int >= 0, got {preview(text)}")
    return value


MAX_SEED = 2**32 - 1
"""The largest seed a flag takes: numpy's legacy seeding (which Stable-Baselines3 calls) and many
other libraries take 32-bit seeds."""


def seed_int(text: str) -> int:
    """A ``--seed`` value: an int from 0 to :data:`MAX_SEED`."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a seed (an int from 0 to {MAX_SEED}), "
                                         f"got {preview(text)}") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"expected a seed (an int from 0 to {MAX_SEED}), got {preview(text)}")
    return value


def bounded_float(low: float, high: float, what: str, *, low_open: bool = False):
    """An argparse type: a finite number from ``low`` to ``high`` (above ``low`` with
    ``low_open``), described as ``what`` in the error (``inf`` and ``nan`` are refused)."""
    span = f"{'> ' if low_open else '>= '}{low:g} and <= {high:g}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {preview(text)}") from None
        if not (low < value if low_open else low <= value) or not value <= high:
            raise argparse.ArgumentTypeError(f"expected {what} {span}, got {preview(text)}")
        return value
    return parse


MAX_BENCH_SECONDS = 3600.0
"""The longest timed run of ``tafl bench`` per variant and batch."""


def emit_json(obj: dict) -> None:
    print(json.dumps(obj))


# --- building games -------------------------------------------------------------------------------

def rule_options_from_args(args: argparse.Namespace, *, cap: bool = False) -> dict[str, Any]:
    """The rule options of a rule command: ``--option`` items, then ``--max-turns``.

    With ``cap=False`` (moves, perft, replay) there is no move cap unless one is asked for.
    """
    options = parse_options(args.option)
    if getattr(args, "max_turns", None) is not None:
        options["max_turns"] = args.max_turns
    elif not cap:
        options.setdefault("max_turns", None)
    return options


def make_game(args: argparse.Namespace, position: str | None = None, to_move: str | None = None):
    """The :class:`~tafl_env.Game` a rule command starts from (before any move is played)."""
    from .game import Game

    return Game(args.variant, position=position if position is not None else args.position,
                to_move=to_move if to_move is not None else args.to_move, **rule_options_from_args(args))


def play_moves(game, moves: Sequence[str]) -> None:
    """Push ``moves`` (notation) in order; the first bad one is a :class:`CommandError` naming it."""
    for i, text in enumerate(moves, 1):
        try:
            game.push(text)
        except TaflError as exc:
            raise CommandError(
                f"move {i} {preview(text)}: {exc} (after {i - 1} move{'' if i == 2 else 's'}: position "
                f"{game.position}, {game.to_move} to move"
                f"{', chain on ' + game.chain if game.chain else ''})"
            ) from None


# --- move files -----------------------------------------------------------------------------------

_MOVE_NUMBER = re.compile(r"\d+\.+")
RECORD_KEYS = ("result", "reason", "turns")
SUMMARY_KEYS = ("position", "to_move", "result", "reason", "turns", "chain")


def read_move_source(text: str, name: str = "<file>") -> dict[str, Any]:
    """Moves (and optionally ``position``/``to_move``/``variant``) from the text of a move file.

    A JSON object, or a JSON-lines file whose first line is an object, with a ``"moves"`` list is
    used as it is: its ``"position"``/``"to_move"`` are the start. In a game record that also has
    ``"result"``, ``"reason"`` or ``"turns"`` (the format of ``cases/games.jsonl``) they describe the
    end instead: the game starts from ``"start_position"``/``"start_to_move"`` or the variant's
    start, and the record's summary is returned as ``"expect"`` (a replay warns if it differs).
    Otherwise the text is moves separated by whitespace; ``#`` starts a comment that runs to the
    end of the line; move numbers (``1.``, ``12...``) are ignored.

    >>> read_move_source("# a game\\n1. e2-c2 e8-c8\\n2. pass")["moves"]
    ['e2-c2', 'e8-c8', 'pass']
    >>> read_move_source('{"moves": ["e2-c2"], "to_move": "attacker"}')
    {'moves': ['e2-c2'], 'to_move': 'attacker'}
    """
    stripped = text.lstrip()
    if stripped.startswith("{"):
        obj = None
        try:
            obj = json.loads(stripped)
        except json.JSONDecodeError:
            first = stripped.split("\n", 1)[0]
            try:
                obj = json.loads(first)
            except json.JSONDecodeError as exc:
                raise CommandError(f"{name}: not valid JSON: {exc}") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("moves"), list):
            raise CommandError(f"{name}: a JSON move file must be an object with a \"moves\" list")
        if not all(isinstance(m, str) for m in obj["moves"]):
            raise CommandError(f"{name}: every entry of \"moves\" must be a move string")
        out: dict[str, Any] = {"moves": list(obj["moves"])}
        if obj.get("variant") is not None:
            out["variant"] = obj["variant"]
        if any(key in obj for key in RECORD_KEYS):
            # A finished record (cases/games.jsonl): position/to_move are where the game ended.
            out["expect"] = {key: obj[key] for key in SUMMARY_KEYS if key in obj}
            start = {"position": obj.get("start_position"), "to_move": obj.get("start_to_move")}
        else:
            start = {"position": obj.get("position"), "to_move": obj.get("to_move")}
        out.update({key: value for key, value in start.items() if value is not None})
        return out
    moves: list[str] = []
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        for token in line.split():
            token = _MOVE_NUMBER.sub("", token, count=1) if _MOVE_NUMBER.match(token) else token
            if token:
                moves.append(token)
    return {"moves": moves}


def _read_file(path: str) -> str:
    name = "<stdin>" if path == "-" else repr(path)
    try:
        if path == "-":  # bytes, decoded strictly: a lenient locale must not smuggle bad input in
            raw = getattr(sys.stdin, "buffer", None)
            return raw.read().decode("utf-8") if raw is not None else sys.stdin.read()
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError as exc:
        raise CommandError(f"cannot read move file {name}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise CommandError(f"move file {name} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at "
                           f"offset {exc.start})") from None


# --- commands -------------------------------------------------------------------------------------

def cmd_variants(args: argparse.Namespace) -> int:
    rows = []
    for vid, extra in [(v, False) for v in VARIANTS] + [(v, True) for v in EXTRA_VARIANTS]:
        r = base_rules(vid)
        rows.append({"id": vid, "title": r.title, "board_size": r.board_size,
                     "first_to_move": r.first_to_move, "summary": r.summary, "extra": extra})
    if args.json:
        emit_json({"variants": rows})
        return 0
    width = max(len(row["id"]) for row in rows)
    for row in rows:
        if row["extra"] and not any(prev["extra"] for prev in rows[: rows.index(row)]):
            print("\nextra variants (same engine; RULES.md §4):")
        size = f"{row['board_size']}x{row['board_size']}"
        print(f"{row['id']:<{width}}  {size:>5}  {row['first_to_move']:<8}  {row['title']}: {row['summary']}")
    return 0


def cmd_moves(args: argparse.Namespace) -> int:
    game = make_game(args)
    play_moves(game, args.moves or ())
    moves = [m.notation for m in game.legal_moves()]
    if args.json:
        emit_json({"variant": game.variant, "position": game.position, "to_move": game.to_move,
                   "chain": game.chain, "moves": moves, "count": len(moves)})
        return 0
    for m in moves:
        print(m)
    if game.is_over():
        print(f"(the game is over: {result_text(game)})", file=sys.stderr)
    return 0


def cmd_perft(args: argparse.Namespace) -> int:
    from .perft import perft

    game = make_game(args)
    play_moves(game, args.moves or ())
    t0 = time.perf_counter()
    nodes = perft(game.engine, game.state, args.depth)
    seconds = time.perf_counter() - t0
    if args.json:
        emit_json({"variant": game.variant, "depth": args.depth, "nodes": int(nodes),
                   "seconds": round(seconds, 6)})
    else:
        print(int(nodes))
    return 0


def result_text(game) -> str:
    if game.result is None:
        return "running" if game.reason is None else str(game.reason)
    if game.result == "draw":
        return f"draw ({game.reason})"
    return f"{game.result} wins ({game.reason})"


def replay_record(args: argparse.Namespace) -> int:
    """``tafl replay FILE.otg``: an OpenTafl game record, replayed under the rules of its rules tag."""
    from .opentafl import read_otg

    if args.moves or args.file is not None or args.position is not None:
        raise CommandError("a game record brings its own rules, start and moves: give the .otg file alone")
    record = read_otg(_read_file(args.variant))
    game = record.game
    summary = game.summary()
    if args.json:
        emit_json({**summary, "rules": game.rules.name, "tags": record.tags})
        return 0
    print(game)
    chain = f", chain on {game.chain}" if game.chain else ""
    turns = f"{game.turns} turn{'' if game.turns == 1 else 's'}"
    print(f"{game.rules.title}: {result_text(game)} after {turns}; {game.to_move} to move{chain}; "
          f"position {game.position}")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    if args.variant.lower().endswith(".otg"):
        return replay_record(args)
    moves = list(args.moves or ())
    position, to_move = args.position, args.to_move
    expect: dict[str, Any] = {}
    if args.file is not None:
        if moves:
            raise CommandError("give the moves either on the command line or with --file, not both")
        name = "<stdin>" if args.file == "-" else args.file
        source = read_move_source(_read_file(args.file), name)
        moves = source["moves"]
        expect = source.get("expect", {})
        if position is None and "position" in source:
            position = source["position"]
            if to_move is None:
                to_move = source.get("to_move")
        elif to_move is None and position is None:
            to_move = source.get("to_move")
        if source.get("variant") not in (None, args.variant):
            print(f"{PROG} replay: warning: {name} is a game of {source['variant']}; "
                  f"replaying it as {args.variant}", file=sys.stderr)
    game = make_game(args, position, to_move)
    play_moves(game, moves)
    summary = game.summary()
    differs = sorted(key for key, value in expect.items() if summary.get(key) != value)
    if differs:
        print(f"{PROG} replay: warning: the replay differs from the record in "
              + "; ".join(f"{key}: {preview(summary.get(key))}, record {preview(expect[key])}" for key in differs),
              file=sys.stderr)
    if args.json:
        emit_json(summary)
        return 0
    print(game)
    chain = f", chain on {game.chain}" if game.chain else ""
    turns = f"{game.turns} turn{'' if game.turns == 1 else 's'}"
    print(f"{result_text(game)} after {turns}; {game.to_move} to move{chain}; position {game.position}")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import bench_engine
    from .engine._jit import PARALLEL_MIN_BATCH
    from .engine.core import MAX_BATCH

    variants = args.variants or list(VARIANTS)
    options = parse_options(args.option)
    for v in variants:
        make_rules(v, **options)  # every id and option is checked before anything runs
    for b in args.batch:
        if b > MAX_BATCH:
            raise CommandError(f"--batch {b} is more games than a batch holds (at most {MAX_BATCH})")
    results = []
    header = f"{'variant':<24} {'batch':>6} {'threads':>7} {'steps/s':>14} {'per CPU-s':>14} {'peak MiB':>9}"
    for v in variants:
        for b in args.batch:
            # Threads serve batches of PARALLEL_MIN_BATCH games or more; smaller ones run on one.
            for threads in sorted({t if b >= PARALLEL_MIN_BATCH else 1 for t in args.threads}):
                r = bench_engine(v, b, args.seconds, seed=args.seed, unpack_mask=args.unpack_mask,
                                 threads=threads, **options)
                results.append({"variant": r["variant"], "batch": r["batch"], "threads": r["threads"],
                                "steps_per_s": round(r["steps_per_s"], 1),
                                "peak_mem_mb": round(r["peak_mem_mb"], 3)})
                if not args.json:
                    if len(results) == 1:   # after the first run: a batch refused at once prints nothing
                        print(header)
                    print(f"{v:<24} {b:>6} {r['threads']:>7} {r['steps_per_s']:>14,.0f} "
                          f"{r['steps_per_cpu_s']:>14,.0f} {r['peak_mem_mb']:>9.2f}", flush=True)
    if args.json:
        emit_json({"results": results})
    return 0


# --- the parser -----------------------------------------------------------------------------------

def add_json_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="make the last line of stdout one JSON object")


def add_rule_options(p: argparse.ArgumentParser, *, cap_help: str | None) -> None:
    p.add_argument("--option", "-o", action="append", metavar="NAME=VALUE",
                   help="set a rule option (repeatable); VALUE is read as an int, None, true/false or "
                        f"text. Options: {', '.join(rule_option_names())}")
    if cap_help is not None:
        p.add_argument("--max-turns", type=positive_int, metavar="N", help=cap_help)


def add_start_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--position", metavar="POS",
                   help="start from this position string (RULES.md §1, rank 1 first), e.g. "
                        "/3ttt3/4t4/4T4/t3T3t/ttTTKTTtt/t3T3t/4T4/4t4/3ttt3/")
    p.add_argument("--to-move", choices=SIDES, metavar="SIDE",
                   help="attacker or defender (default: the variant's first mover)")


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose usage errors are one line on stderr (``tafl perft: error: ...``,
    exit status 2) like every other bad input; ``--help`` shows the usage. Sub-parsers are of the
    same class."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser(add_ons: Sequence[str] | None = ()) -> argparse.ArgumentParser:
    """The ``tafl`` parser: the built-in commands, then the add-on commands named in ``add_ons``
    (``None``: every installed one; see :func:`add_on_commands`)."""
    parser = ArgumentParser(
        prog=PROG,
        description="Tafl from the command line: variants, legal moves, perft, replays, benchmarks, "
                    "and the commands other packages add (agents: eval, play, train).",
        epilog=f"Variants: {', '.join(VARIANTS)} (extra: {', '.join(EXTRA_VARIANTS)}). "
               f"Run '{PROG} COMMAND --help' for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} (tafl-env) {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    no_cap = "stop the game after N turns (default: no move cap)"

    p = sub.add_parser("variants", help="list the variant ids, board sizes and one-line summaries",
                       description="List the variant ids, board sizes and one-line summaries.")
    add_json_flag(p)
    p.set_defaults(func=cmd_variants)

    p = sub.add_parser("moves", help="list the legal moves in notation",
                       description="List the legal moves in notation (after playing --moves from the "
                                   "start or from --position).")
    p.add_argument("variant", metavar="VARIANT")
    add_start_options(p)
    p.add_argument("--moves", nargs="+", metavar="MOVE", help="moves to play first (notation)")
    add_rule_options(p, cap_help=no_cap)
    add_json_flag(p)
    p.set_defaults(func=cmd_moves)

    p = sub.add_parser("perft", help="count the action sequences of length DEPTH",
                       description="Count the action sequences of length DEPTH (pass counts as an action; "
                                   "a finished game has none). The count alone is the last line.")
    p.add_argument("variant", metavar="VARIANT")
    p.add_argument("depth", metavar="DEPTH", type=non_negative_int)
    add_start_options(p)
    p.add_argument("--moves", nargs="+", metavar="MOVE",
                   help="moves to play first (notation); how a state inside a berserk chain is reached")
    add_rule_options(p, cap_help=no_cap)
    add_json_flag(p)
    p.set_defaults(func=cmd_perft)

    p = sub.add_parser("replay", help="play moves in notation and report the result",
                       description="Play moves in notation (RULES.md §1; 'pass' ends a berserk chain, an "
                                   "opponent's move during a chain implies it) and report the board and "
                                   "result. An illegal or malformed move stops with exit status 2.")
    p.add_argument("variant", metavar="VARIANT",
                   help="the variant id, or an OpenTafl game record FILE.otg (replayed under its own rules)")
    p.add_argument("moves", nargs="*", metavar="MOVE", help="the moves, in order")
    add_start_options(p)
    p.add_argument("--file", "-f", metavar="F",
                   help="read the moves from F ('-': stdin): moves separated by whitespace, '#' comments, "
                        "move numbers like '1.' ignored; or a JSON object (or JSON-lines file whose first "
                        "line is one) with a \"moves\" list and optional \"position\"/\"to_move\"")
    add_rule_options(p, cap_help=no_cap)
    add_json_flag(p)
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("bench", help="batched random self-play throughput",
                       description="Batched random self-play throughput: the full legal mask every step, a "
                                   "uniformly random legal action per game, finished games restarted. "
                                   "Peak memory is measured in a separate short run under tracemalloc.")
    p.add_argument("variants", nargs="*", metavar="VARIANT", help="default: all five variants")
    p.add_argument("--batch", nargs="+", type=positive_int, default=list(DEFAULT_BATCHES), metavar="B",
                   help=f"batch sizes (default: {' '.join(map(str, DEFAULT_BATCHES))})")
    p.add_argument("--seconds", type=bounded_float(0, MAX_BENCH_SECONDS, "a number of seconds"),
                   default=DEFAULT_SECONDS, metavar="S",
                   help=f"timed seconds per variant and batch (default: {DEFAULT_SECONDS:g})")
    p.add_argument("--seed", type=seed_int, default=0, help="random seed (default: 0)")
    p.add_argument("--threads", nargs="+", type=positive_int, default=[1, 2], metavar="T",
                   help="threads of the batched kernels, a row each (default: 1 2; smaller batches "
                        "than 2048 games always run on one)")
    p.add_argument("--unpack-mask", action="store_true",
                   help="also build the int8 (B, num_actions) action mask every step, as an env does")
    add_rule_options(p, cap_help=None)
    add_json_flag(p)
    p.set_defaults(func=cmd_bench)

    entry_points = add_on_commands()
    for name in sorted(entry_points) if add_ons is None else add_ons:
        if name in entry_points and name not in BUILTIN_COMMANDS:
            _load_add_on(entry_points[name], sub)
    return parser


# --- add-on commands (entry points) -----------------------------------------------------------------

def add_on_commands() -> dict:
    """The installed add-on commands: name → ``importlib.metadata.EntryPoint`` of :data:`COMMANDS_GROUP`
    (not loaded; the first of a name wins)."""
    from importlib.metadata import entry_points

    found: dict = {}
    for ep in entry_points(group=COMMANDS_GROUP):
        found.setdefault(ep.name, ep)
    return found


def _load_add_on(ep, sub) -> None:
    try:
        add = ep.load()
    except MissingExtraError:
        raise
    except Exception as exc:  # a broken add-on must not take the built-in commands down with it
        raise CommandError(f"the command {ep.name!r} ({ep.value}) cannot be loaded: "
                           f"{type(exc).__name__}: {exc}") from None
    add(sub)


def _command_word(argv: Sequence[str]) -> str | None:
    """The command of ``argv``: its first word that is not an option (top-level options take no value)."""
    return next((word for word in argv if not word.startswith("-")), None)


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse, letting replay's moves be interleaved with options (``replay V --json m1 m2``).

    Python 3.11's argparse gives a ``nargs='*'`` positional nothing once it has been matched empty
    after the variant; the moves it leaves over are appended here, in order.
    """
    args, rest = parser.parse_known_args(argv)
    if rest and getattr(args, "command", None) == "replay":
        unknown = [tok for tok in rest if tok.startswith("-") and tok != "-"]
        if not unknown:
            args.moves = list(args.moves or ()) + rest
            rest = []
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return args


def _check_thread_setting() -> None:
    """``$TAFL_THREADS``, when set, is checked before any command runs (an engine made earlier in
    the process, and cached, would not read it again)."""
    import os

    if "TAFL_THREADS" in os.environ:
        from .engine._jit import threads_setting

        threads_setting(None)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``tafl`` command; returns the exit status (0 ok, 2 bad input, a missing extra or Ctrl-C)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    word = _command_word(argv)
    # A built-in command loads no add-on (the rule commands stay light); an add-on command loads
    # only itself; anything else (no command, a typo, top-level --help) loads them all to list them.
    try:
        parser = build_parser(() if word in BUILTIN_COMMANDS else
                              [word] if word in add_on_commands() else None)
    except (CommandError, MissingExtraError) as exc:
        print(f"{PROG} {word or ''}: error: {exc}".replace(f"{PROG} : ", f"{PROG}: "), file=sys.stderr)
        return 2
    try:
        args = _parse(parser, argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        _check_thread_setting()
        return args.func(args)
    except (CommandError, TaflError, MissingExtraError) as exc:
        print(f"{PROG} {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: one line, no traceback (a prompt left open gets its newline)
        try:
            print(flush=True)
        except (OSError, ValueError):
            pass
        print(f"{PROG} {args.command}: interrupted", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `tafl moves ... | head -1`: stop quietly
        try:
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 1


if __name__ == "__main__":
    sys.exit(main())
