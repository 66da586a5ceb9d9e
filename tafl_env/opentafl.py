"""OpenTafl's rules strings and game records (``.otg``), read and written for this engine's rules.

OpenTafl (the Java program that speaks the OpenTafl Engine Protocol) writes positions and moves as
this project does (RULES.md §1.3-1.4); its rules are a *rules string* of ``key:value`` entries
(``dim:9 esc:e ... start:/…/``, the notation spec's section 3). :func:`rules_string` writes the
string that plays a :class:`~tafl_env.rules.RuleSet`, :func:`parse_rules_string` reads one back (the
entries OpenTafl leaves out take its defaults, :data:`OPENTAFL_DEFAULTS`) or refuses, in one line,
the entries this engine cannot play::

    >>> from tafl_env.rules import make_rules
    >>> rules_string(make_rules("historical_tablut"))
    'dim:9 name:historical_tablut esc:e atkf:y tfr:l ks:c cor: start:/3ttt3/4t4/4T4/t3T3t/ttTTKTTtt/t3T3t/4T4/4t4/3ttt3/'
    >>> parse_rules_string(_) == make_rules("historical_tablut")
    True
    >>> parse_rules_string("dim:7 name:Brandub surf:n ks:w cenh: cenhe: start:/3t3/3t3/3T3/ttTKTtt/3T3/3t3/3t3/")
    Traceback (most recent call last):
    ...
    tafl_env.opentafl.UnsupportedRulesError: OpenTafl rules this engine cannot play: ks:w (a weak king, captured by two men anywhere)

The option ↔ entry table, and what OpenTafl plays differently under the same string, are in
docs/opentafl.md and RULES.md §10. A game record (:func:`write_otg`, :func:`read_otg`) is OpenTafl's
``.otg`` file: ``[tag:value]`` lines ending with the rules tag, then one line per turn
(``1. e2-c2 e5-e6``).
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field

from .errors import InvalidMoveError, InvalidOptionError, InvalidPositionError, TaflError, preview
from .notation import parse_position
from .rules import SIDES, RuleSet, all_variant_ids, base_rules, make_rules, side_index

__all__ = ["OPENTAFL_DEFAULTS", "UnsupportedRulesError", "rules_string", "parse_rules_string",
           "OtgRecord", "write_otg", "read_otg"]

ALL_TYPES = "tcnkmgTCNKMG"
"""OpenTafl's piece types in its own order (attackers, then defenders): soldier (taflman),
commander, knight, king, mercenary, guard."""

OPENTAFL_DEFAULTS: dict[str, str] = {
    "name": "", "esc": "c", "surf": "y", "atkf": "y", "tfr": "d", "ka": "y", "ks": "s", "kj": "n",
    "nj": "c", "cj": "j", "mj": "n", "gj": "n", "cor": "default", "cen": "default", "afor": "",
    "dfor": "", "spd": "-1",
    "corh": "tcnkmTCNKM", "cenh": "tcnkm", "cenhe": "tcnkmTCNKM", "aforh": "TCNKM", "dforh": "tcnkm",
    "corp": "K", "cenp": "tcnkmTCNKM", "aforp": "tcnkmTCNKM", "dforp": "tcnkmTCNKM",
    "cors": "K", "cens": "K", "afors": "tcnkmTCNKM", "dfors": "TCNKM",
    "corre": "tcnkmTCNKM", "cenre": "tcnkmTCNKM", "aforre": "tcnkmTCNKM", "dforre": "tcnkmTCNKM",
    "sw": "n", "swf": "y", "efe": "n", "linc": "n", "ber": "n",
}
"""The value of every entry a rules string leaves out (OpenTafl 0.4.8's ``RulesSerializer``);
``cor``/``cen`` ``default`` are the four corner squares and the centre square."""

_KEYS = set(OPENTAFL_DEFAULTS) | {"dim", "start", "starti"}

_TFR = {"starter_loses": "l", "draw": "d", "ignore": "i"}
"""repetition → ``tfr``. OpenTafl's ``l`` gives the win to the player whose move makes the third
occurrence; in a repetition of alternating moves that is the opponent of the player who started
it, so it is this engine's ``starter_loses`` (RULES.md §10 says where the two part)."""


class UnsupportedRulesError(TaflError):
    """A rules string (or a rule set) holds rules the other side cannot play; ``keys`` names the
    entries (``linc:y``) or options (``commander_sandwich=False``), and the message says why."""

    def __init__(self, problems: list[str], *, writing: bool = False):
        self.keys = [p.split(" ", 1)[0] for p in problems]
        head = ("these rules have no OpenTafl rules string: " if writing
                else "OpenTafl rules this engine cannot play: ")
        super().__init__(head + "; ".join(problems))


# --- writing -------------------------------------------------------------------------------------

def _inverted(layout: str) -> str:
    """A position string with its rank records in reverse order (OpenTafl's ``starti:``)."""
    return "/" + "/".join(reversed(layout.strip().strip("/").split("/"))) + "/"


def rules_string(rules: RuleSet, *, inverted: bool = False) -> str:
    """The OpenTafl rules string that plays ``rules`` (entries at OpenTafl's default left out).

    ``name:`` carries the rule set's name, so that :func:`parse_rules_string` gives a variant's own
    name, title and move cap back. ``inverted`` writes the start position as ``starti:`` (its ranks
    top first), as OpenTafl's game records do. A rule set OpenTafl cannot play raises
    :class:`UnsupportedRulesError`: commanders without the commander sandwich, or with it on the
    throne. The move cap is not a rule of the game and is not written.

    >>> rules_string(make_rules("legacy_ard_ri"))
    'dim:7 name:legacy_ard_ri atkf:n tfr:l ks:m spd:1 start:/2ttt2/3t3/t1TTT1t/ttTKTtt/t1TTT1t/3t3/2ttt2/'
    """
    letters = set(rules.layout)
    has_c, has_n = "c" in letters, "N" in letters
    problems = []
    if has_c and not rules.commander_sandwich:
        problems.append("commander_sandwich=False (OpenTafl's commanders always capture the king in a line)")
    if has_c and rules.commander_capture_on_throne:
        problems.append("commander_capture_on_throne=True (OpenTafl's king is safe from commanders on the throne)")
    if problems:
        raise UnsupportedRulesError(problems, writing=True)
    out = [f"dim:{rules.board_size}", f"name:{rules.name.replace(' ', '_')}"]
    if rules.escape == "edge":
        out.append("esc:e")
    if not rules.encirclement:
        out.append("surf:n")
    out.append("atkf:" + ("y" if rules.first_to_move == "attacker" else "n"))
    out.append("tfr:" + _TFR[rules.repetition])
    if not rules.king_armed:
        out.append("ka:n")
    if rules.king_capture == "tablut":
        out.append("ks:c")
    elif rules.edge_hostile_to_king:
        out.append("ks:m")
    if rules.jumps:
        out.append("kj:j")
    else:
        out += ["nj:n"] * has_n + ["cj:n"] * has_c
    corners = rules.escape == "corners" or rules.restricted_corners or rules.hostile_corners
    if not corners:
        out.append("cor:")
    if rules.move_range is not None:
        out.append(f"spd:{rules.move_range}")
    if not rules.throne_passable:
        out.append("cenp:K")
    if corners and not rules.restricted_corners:
        out.append("cors:tcnkmTCNKM")
    if corners and not rules.hostile_corners:
        out.append("corh:")
    if not rules.king_armed:
        out.append("cenh:")      # else OpenTafl's king-held throne would capture for an unarmed king
    if not rules.throne_hostile:
        out.append("cenhe:")
    if rules.berserk:
        out.append("ber:c")
    out.append(("starti:" + _inverted(rules.layout)) if inverted else ("start:" + rules.layout))
    return " ".join(out)


# --- reading -------------------------------------------------------------------------------------

def _entries(text: str) -> dict[str, str]:
    """``key:value`` entries of a rules string (a later one wins, as in OpenTafl); a bare word is a
    key with an empty value."""
    if not isinstance(text, str) or not text.strip():
        raise UnsupportedRulesError([f"{preview(text)} (not a rules string: expected 'dim:N ... start:/.../')"])
    out: dict[str, str] = {}
    for token in text.split():
        key, _, value = token.partition(":")
        out[key] = value
    return out


def _speed(value: str, present: set[str], n: int) -> tuple[int | None, str | None]:
    """``spd`` → (move_range, problem). One number for every piece, or one per piece type (the
    types on the board must agree); a limit of N or more, 0 or −1 is no limit."""
    parts = [p for p in value.split(",") if p.strip()]
    try:
        nums = [int(p) for p in parts]
    except ValueError:
        return None, f"spd:{value} (not a list of numbers)"
    if len(nums) == 1:
        limits = {nums[0]}
    elif len(nums) in (12, 10, 8):
        order = {12: ALL_TYPES, 10: "tcnkmTCNKM", 8: "tcnkTCNK"}[len(nums)]
        limits = {nums[order.index(t)] for t in present}
    else:
        return None, f"spd:{value} (one limit for all pieces, or one per piece type; OpenTafl reads two as none)"
    limits = {k if 1 <= k <= n - 1 else None for k in limits}
    if len(limits) > 1:
        return None, f"spd:{value} (different speed limits for different pieces)"
    return limits.pop(), None


def parse_rules_string(text: str, *, max_turns: int | None | str = "variant") -> RuleSet:
    """The :class:`RuleSet` an OpenTafl rules string plays (OpenTafl's defaults for the entries it
    leaves out), or :class:`UnsupportedRulesError` naming every entry this engine cannot play.

    ``name:`` that is one of this project's variant ids gives that variant's name, title and move
    cap; any other name (OpenTafl's own, ``Tablut``) names a new rule set. ``max_turns`` sets the
    move cap instead (``None``: no cap, as in OpenTafl; the default ``"variant"``: the named
    variant's cap, else none).

    >>> r = parse_rules_string("dim:7 name:legacy_ard_ri atkf:n tfr:l ks:m spd:1 start:/2ttt2/3t3/t1TTT1t/ttTKTtt/t1TTT1t/3t3/2ttt2/")
    >>> r == make_rules("legacy_ard_ri")
    True
    >>> try:
    ...     parse_rules_string("dim:9 linc:y sw:s tfr:w start:/3ttt3/4t4/4T4/t3T3t/ttTTKTTtt/t3T3t/4T4/4t4/3ttt3/")
    ... except UnsupportedRulesError as exc:
    ...     print(exc.keys)
    ['tfr:w', 'sw:s', 'linc:y']
    """
    given = _entries(text)
    problems: list[str] = []
    unknown = sorted(set(given) - _KEYS)
    if unknown:
        problems += [f"{k}:{given[k]} (not an OpenTafl rules entry)" for k in unknown]
    if "dim" not in given:
        raise UnsupportedRulesError(problems + ["dim (missing: a rules string starts with dim:N)"])
    e = {**OPENTAFL_DEFAULTS, **given}
    try:
        n = int(e["dim"])
    except ValueError:
        n = 0
    if not (5 <= n <= 19 and n % 2 == 1):
        raise UnsupportedRulesError(problems + [f"dim:{e['dim']} (boards are odd, 5 to 19 squares a side)"])
    if "start" in given:
        layout = given["start"]
    elif "starti" in given:
        layout = _inverted(given["starti"])
    else:
        raise UnsupportedRulesError(problems + ["start (missing: a rules string ends with start:/.../)"])
    try:
        parse_position(layout, n)
    except InvalidPositionError as exc:
        raise UnsupportedRulesError(problems + [f"start:{preview(layout)} ({exc})"]) from None
    letters = set(re.sub(r"[0-9/]", "", layout))
    present = {"t", "T", "K"} | letters
    nonking = present - {"K"}
    movers = {"t", "T", "c", "N"} & present

    def bad(key: str, why: str) -> None:
        problems.append(f"{key}:{e[key]} ({why})")

    def side_set(key: str) -> bool | None:
        """A hostility list, as OpenTafl reads it: by side (its 't' and 'T' entries) only."""
        att, dfd = "t" in e[key], "T" in e[key]
        return att if att == dfd else None

    opts: dict = {"board_size": n, "layout": layout}
    opts["escape"] = {"c": "corners", "e": "edge"}.get(e["esc"])
    if opts["escape"] is None:
        bad("esc", "c or e")
    if e["surf"] not in ("y", "n"):
        bad("surf", "y or n")
    opts["encirclement"] = e["surf"] == "y"
    if e["atkf"] not in ("y", "n"):
        bad("atkf", "y or n")
    opts["first_to_move"] = "attacker" if e["atkf"] != "n" else "defender"
    repetition = {v: k for k, v in _TFR.items()}.get(e["tfr"])
    if repetition is None:
        bad("tfr", "the player whose move makes the third occurrence loses; the repetition rules here are "
                   "tfr:l, tfr:d and tfr:i" if e["tfr"] == "w" else "d, i or l")
    opts["repetition"] = repetition or "starter_loses"
    if e["ka"] not in ("y", "n"):
        bad("ka", "a king that captures only as hammer or only as anvil" if e["ka"] in ("a", "h") else "y or n")
    opts["king_armed"] = e["ka"] != "n"
    ks = {"y": "s", "n": "w"}.get(e["ks"], e["ks"])
    if ks == "s":
        opts.update(king_capture="four_sided", edge_hostile_to_king=False)
    elif ks == "m":
        opts.update(king_capture="four_sided", edge_hostile_to_king=True)
    elif ks == "c":
        opts.update(king_capture="tablut", edge_hostile_to_king=False)
    else:
        bad("ks", "a weak king, captured by two men anywhere" if ks == "w" else "s, m or c")
    # jumps: the king, and the knights and commanders on the board, all or none (RULES §5.2)
    jumpers = {"kj": "j"} | ({"nj": "c"} if "N" in letters else {}) | ({"cj": "j"} if "c" in letters else {})
    jumps = any(e[k] != "n" for k in jumpers)
    for key, want in jumpers.items():
        if jumps and e[key] != want:
            why = {"r": "jumps only from or to the throne, a corner or a fort",
                   "n": "some pieces jump and others do not"}.get(e[key])
            bad(key, why or {"kj": "the king jumps without capturing", "nj": "the knight's jump captures",
                             "cj": "the commander jumps without capturing"}[key])
    opts["jumps"] = jumps
    if e["ber"] not in ("n", "c"):
        bad("ber", "a berserk piece that may go on without capturing" if e["ber"] == "m" else "n or c")
    opts["berserk"] = e["ber"] == "c"
    opts["commander_sandwich"] = "c" in letters
    opts["commander_capture_on_throne"] = False
    if e["sw"] != "n":
        bad("sw", "shieldwall captures")
    if e["efe"] != "n":
        bad("efe", "edge fort escapes")
    if e["linc"] != "n":
        bad("linc", "Linnaean capture against the throne")
    for key in ("afor", "dfor"):
        if e[key]:
            bad(key, "fortress squares")
    move_range, why = _speed(e["spd"], present, n)
    if why:
        problems.append(why)
    opts["move_range"] = move_range
    # the centre: a throne on which only the king stops
    center = f"{'abcdefghijklmnopqrs'[n // 2]}{n // 2 + 1}"
    cen = {s for s in e["cen"].split(",") if s} if e["cen"] != "default" else {center}
    if cen != {center}:
        bad("cen", "the throne is the centre square, always")
    else:
        if "K" not in e["cens"] or nonking & set(e["cens"]):
            bad("cens", "only the king may stop on the throne, and he may always")
        passers = nonking & set(e["cenp"])
        if "K" not in e["cenp"] or passers not in (set(), nonking):
            bad("cenp", "the king crosses the empty throne; the other pieces all may, or none")
        opts["throne_passable"] = bool(passers)
        if not ({"K"} | (passers and movers)) <= set(e["cenre"]):
            bad("cenre", "pieces that may cross the throne may enter it from outside")
        hostile = side_set("cenhe")
        if hostile is None:
            bad("cenhe", "the empty throne is hostile to both sides or to neither")
        opts["throne_hostile"] = bool(hostile)
        if "T" in e["cenh"]:
            bad("cenh", "the throne held by the king is never hostile to his own men")
        elif "t" in e["cenh"] and not opts["king_armed"]:
            bad("cenh", "an unarmed king on the throne would still capture attackers; write cenh: with ka:n")
    # the corners: the four corner squares, or none
    corners = {f"{f}{r}" for f in "a" + "abcdefghijklmnopqrs"[n - 1] for r in (1, n)}
    cor = {s for s in e["cor"].split(",") if s} if e["cor"] != "default" else corners
    if cor == corners:
        stoppers = nonking & set(e["cors"])
        if "K" not in e["cors"] or stoppers not in (set(), nonking):
            bad("cors", "the king may enter a corner; the other pieces all may, or none")
        opts["restricted_corners"] = not stoppers
        # (OpenTafl 0.4.8 reads corre only when cenre is given too)
        reenter = e["corre"] if "cenre" in given else OPENTAFL_DEFAULTS["corre"]
        if not ({"K"} | (stoppers and movers)) <= set(reenter):
            problems.append(f"corre:{reenter} (pieces that may stop on a corner may enter it)")
        hostile = side_set("corh")
        if hostile is None:
            bad("corh", "the corners are hostile to both sides or to neither")
        opts["hostile_corners"] = bool(hostile)
    elif not cor:
        opts.update(restricted_corners=False, hostile_corners=False)
        if opts["escape"] == "corners":
            problems.append("cor: (no corner squares, but the king escapes to the corners)")
    else:
        bad("cor", "the corners are the four corner squares or none")
    if problems:
        raise UnsupportedRulesError(problems)
    name = given.get("name", "").strip()
    base = None
    if name in all_variant_ids():
        base = base_rules(name)
        if max_turns != "variant":
            opts["max_turns"] = max_turns
    else:
        opts["max_turns"] = None if max_turns == "variant" else max_turns
    try:
        if base is not None:
            return make_rules(base, **opts)
        title = name.replace("_", " ") or f"OpenTafl {n}x{n}"
        return RuleSet(name=name or f"opentafl_{n}x{n}", title=title, **opts)
    except InvalidOptionError as exc:
        raise UnsupportedRulesError([f"start:{preview(layout)} ({exc})"]) from None


# --- game records --------------------------------------------------------------------------------

_RESULT_TAG = {"attacker": "1", "defender": "-1", "draw": "0", None: "?"}


def write_otg(game, *, start: str | None = None, to_move: str | None = None,
              tags: dict[str, str] | None = None) -> str:
    """OpenTafl's game record (``.otg``) of a :class:`tafl_env.Game`: tags, then a line per turn.

    ``start``/``to_move`` give the game's first position and side to move when it did not start
    from the variant's start (a :class:`~tafl_env.Game` does not keep them); the rules tag then
    carries that position as its start, as OpenTafl has no other way to replay it. ``tags`` adds
    tags (``attackers``, ``defenders``, ``event``, ...). A turn is a move of the side that moved
    first and the reply, berserk continuations included; a pass is left out (OpenTafl has none,
    and the next move implies it, RULES.md §6.7).

    >>> from tafl_env import Game
    >>> g = Game("legacy_ard_ri"); _ = [g.push(m) for m in ("c3-c2", "b4-b3", "e3-e2")]
    >>> print(write_otg(g, tags={"date": "2024.01.02"}))
    [date:2024.01.02]
    [result:?]
    [compiler:tafl-env]
    [rules:dim:7 name:legacy_ard_ri atkf:n tfr:l ks:m spd:1 starti:/2ttt2/3t3/t1TTT1t/ttTKTtt/t1TTT1t/3t3/2ttt2/]
    <BLANKLINE>
    1. c3-c2 b4-b3 
    [|]
    <BLANKLINE>
    2. e3-e2xd2 
    []
    <BLANKLINE>
    <BLANKLINE>
    """
    from .game import Game

    rules = game.rules
    first = rules.first_to_move if to_move is None else SIDES[side_index(to_move)]
    position = rules.layout if start is None else start
    replay = Game(rules.replace(max_turns=None), position=position, to_move=first)
    turns: list[list[tuple[str, str]]] = []
    lost = ValueError("the game's moves do not lead from its start to its position: give the start "
                      "position it was played from (start=, to_move=)")
    for m in game.moves:
        who = replay.to_move
        try:
            replay.push(m.action)
        except TaflError:
            raise lost from None
        if m.is_pass:
            continue
        if not turns or (who == first and _other_moved(turns[-1])):
            turns.append([])
        turns[-1].append((who, m.notation))
    if replay.position != game.position or replay.to_move != game.to_move:
        raise lost
    record_rules = rules
    if position != rules.layout or first != rules.first_to_move:
        record_rules = rules.replace(layout=position, first_to_move=first)
    head = {"date": _dt.date.today().strftime("%Y.%m.%d"), "result": _RESULT_TAG[game.result],
            "compiler": "tafl-env"}
    if game.reason:
        head["termination"] = game.reason
    head.update(tags or {})
    head.pop("rules", None)
    lines = [f"[{k}:{v}]" for k, v in head.items()]
    lines.append(f"[rules:{rules_string(record_rules, inverted=True)}]")
    lines.append("")
    for k, turn in enumerate(turns, 1):
        lines.append(f"{k}. " + "".join(f"{text} " for _, text in turn))
        lines.append("[" + "|" * (len(turn) - 1) + "]")
        lines.append("")
    return "\n".join(lines) + "\n"


def _other_moved(turn: list) -> bool:
    """Whether a turn line already holds a move of the second side (then the first side's next
    move opens a new line)."""
    return len({who for who, _ in turn}) > 1


@dataclass
class OtgRecord:
    """A game record read by :func:`read_otg`: its tags, rules, start, the moves as written and the
    game they give (replayed by this engine, no move cap)."""

    tags: dict[str, str]
    rules: RuleSet
    position: str
    to_move: str
    moves: list[str] = field(default_factory=list)
    game: object = None


_TURN = re.compile(r"^(\d+)\.\s+(.*)$")
_TAG = re.compile(r"^\[([A-Za-z-]+):(.*)\]\s*$")


def read_otg(text: str) -> OtgRecord:
    """Read an OpenTafl game record: the tags, the rules (:func:`parse_rules_string` of the rules
    tag), the principal line of moves (variations and comments are skipped), replayed here.

    A move this engine finds illegal (OpenTafl plays some rules otherwise, RULES.md §10) is an
    error naming it and its turn.

    >>> rec = read_otg(write_otg(__import__("tafl_env").Game("historical_tablut")))
    >>> rec.rules.name, rec.moves, rec.game.turns
    ('historical_tablut', [], 0)
    """
    from .errors import IllegalMoveError
    from .game import Game

    if not isinstance(text, str):
        raise InvalidMoveError(f"a game record is text, not {type(text).__name__}")
    tags: dict[str, str] = {}
    moves: list[tuple[int, str]] = []
    in_moves = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        turn = _TURN.match(line)
        if turn:
            in_moves = True
            for token in turn.group(2).split():
                if token == "....." or not token:
                    continue
                if token == "---":          # resignation
                    break
                moves.append((int(turn.group(1)), token))
            continue
        tag = _TAG.match(line)
        if tag and not in_moves:
            tags[tag.group(1)] = tag.group(2)
    if "rules" not in tags:
        raise UnsupportedRulesError(["rules (the record has no [rules:...] tag)"])
    rules = parse_rules_string(tags["rules"], max_turns=None)
    position = tags.get("position", rules.layout)
    to_move = rules.first_to_move
    game = Game(rules, position=position, to_move=to_move)
    for number, token in moves:
        try:
            game.push(token)
        except (InvalidMoveError, IllegalMoveError) as exc:
            raise type(exc)(f"turn {number} of the record: {exc}") from None
    return OtgRecord(tags, rules, position, to_move, [t for _, t in moves], game)

