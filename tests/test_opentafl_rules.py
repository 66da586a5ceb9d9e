"""OpenTafl rules strings and game records (tafl_env.opentafl): round trips for every variant and rule
option, OpenTafl's defaults, the entries refused (one line naming them), OpenTafl's own variants, .otg
records both ways; with OpenTafl at hand (../shared/opentafl or $OPENTAFL_HOME), its rules engine
agrees move by move with this one, and it reads the records written here."""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import load_script
from tafl_env import EXTRA_VARIANTS, VARIANTS, Game, make_rules
from tafl_env.notation import square_name
from tafl_env.opentafl import (OPENTAFL_DEFAULTS, UnsupportedRulesError, parse_rules_string, read_otg,
                               rules_string, write_otg)
from tafl_env.rules import RuleSet

ALL = VARIANTS + EXTRA_VARIANTS
TABLUT = "/3ttt3/4t4/4T4/t3T3t/ttTTKTTtt/t3T3t/4T4/4t4/3ttt3/"
FETLAR = "/3ttttt3/5t5/11/t4T4t/t3TTT3t/tt1TTKTT1tt/t3TTT3t/t4T4t/11/5t5/3ttttt3/"


def _agreement_benchmark():
    """benchmarks/opentafl_agreement.py as a module."""
    return load_script("benchmarks/opentafl_agreement.py")


opentafl_home = _agreement_benchmark().opentafl_home

needs_opentafl = pytest.mark.skipif(opentafl_home() is None, reason="OpenTafl (../shared/opentafl or "
                                    "$OPENTAFL_HOME) and java are not here")


def canonical(rules: RuleSet) -> RuleSet:
    """``rules`` with the options that change nothing under the others set as the reader sets them:
    the edge under the Tablut capture, the commander options without commanders."""
    out = rules
    if rules.king_capture == "tablut":
        out = out.replace(edge_hostile_to_king=False)
    if "c" not in rules.layout:
        out = out.replace(commander_sandwich=False, commander_capture_on_throne=False)
    return out


# --- writing and reading our rules ----------------------------------------------------------------

@pytest.mark.parametrize("variant", ALL)
def test_every_variant_round_trips(variant):
    rules = make_rules(variant)
    text = rules_string(rules)
    assert text.startswith(f"dim:{rules.board_size} ") and text.endswith(f"start:{rules.layout}")
    assert parse_rules_string(text) == rules
    inverted = rules_string(rules, inverted=True)
    assert "starti:" in inverted and parse_rules_string(inverted) == rules


def _option_values(rules: RuleSet) -> list[tuple[str, object]]:
    n = rules.board_size
    values = {"first_to_move": ["attacker", "defender"], "move_range": [None, 1, 2, n - 1],
              "king_capture": ["four_sided", "tablut"], "escape": ["corners", "edge"],
              "repetition": ["starter_loses", "draw", "ignore"]}
    for f in dataclasses.fields(RuleSet):
        if f.type in ("bool", bool):
            values[f.name] = [True, False]
    return [(name, v) for name, vs in values.items() for v in vs if getattr(rules, name) != v]


@pytest.mark.parametrize("variant", ALL)
def test_every_rule_option_round_trips(variant):
    base = make_rules(variant)
    checked = 0
    for name, value in _option_values(base):
        rules = base.replace(**{name: value})
        if "c" in rules.layout and (not rules.commander_sandwich or rules.commander_capture_on_throne):
            with pytest.raises(UnsupportedRulesError) as err:
                rules_string(rules)
            assert err.value.keys[0].split("=")[0] in ("commander_sandwich", "commander_capture_on_throne")
            continue
        assert parse_rules_string(rules_string(rules)) == canonical(rules), (name, value)
        checked += 1
    assert checked >= 15


def test_the_move_cap_is_not_a_rule_of_the_string():
    rules = make_rules("legacy_tawlbwrdd", max_turns=77)
    text = rules_string(rules)
    assert "77" not in text
    assert parse_rules_string(text).max_turns == 300               # the named variant's cap
    assert parse_rules_string(text, max_turns=77) == rules
    assert parse_rules_string(text.replace("name:legacy_tawlbwrdd", "name:Mine")).max_turns is None


def test_other_layouts_and_names():
    rules = make_rules("historical_tablut", layout="/3ttt3/4t4/9/t3T3t/ttT1K1Ttt/t3T3t/9/4t4/3ttt3/")
    assert parse_rules_string(rules_string(rules)) == rules
    mine = parse_rules_string(f"dim:9 name:My_Tablut esc:e ks:c cor: tfr:l start:{TABLUT}")
    assert (mine.name, mine.title, mine.max_turns) == ("My_Tablut", "My Tablut", None)
    ours = make_rules("historical_tablut")
    assert dataclasses.replace(mine, name=ours.name, title=ours.title, summary=ours.summary, max_turns=200) == ours


# --- OpenTafl's defaults --------------------------------------------------------------------------

def test_left_out_entries_take_opentafl_defaults():
    r = parse_rules_string(f"dim:11 start:{FETLAR}")
    assert (r.escape, r.encirclement, r.first_to_move, r.repetition) == ("corners", True, "attacker", "draw")
    assert (r.king_armed, r.king_capture, r.edge_hostile_to_king, r.jumps, r.berserk) == \
        (True, "four_sided", False, False, False)
    assert (r.hostile_corners, r.restricted_corners, r.throne_hostile, r.throne_passable, r.move_range) == \
        (True, True, True, True, None)
    every = " ".join(f"{k}:{v}" for k, v in OPENTAFL_DEFAULTS.items() if k not in ("name", "cor", "cen"))
    assert parse_rules_string(f"dim:11 {every} start:{FETLAR}") == r
    # OpenTafl reads its hostility lists by side (their t and T entries), its other lists by piece
    assert parse_rules_string(f"dim:11 cenhe:tT corh:Tt start:{FETLAR}") == r
    assert parse_rules_string(f"dim:11 cenhe:kK start:{FETLAR}").throne_hostile is False


@pytest.mark.parametrize("entry,field,value", [
    ("esc:e", "escape", "edge"), ("surf:n", "encirclement", False), ("atkf:n", "first_to_move", "defender"),
    ("tfr:l", "repetition", "starter_loses"), ("tfr:i", "repetition", "ignore"), ("ka:n cenh:", "king_armed", False),
    ("ks:m", "edge_hostile_to_king", True), ("ks:y", "king_capture", "four_sided"), ("ks:c", "king_capture", "tablut"),
    ("kj:j", "jumps", True), ("ber:c", "berserk", True), ("spd:2", "move_range", 2), ("spd:11", "move_range", None),
    ("spd:-1", "move_range", None), ("spd:3,3,3,3,3,3,3,3,3,3,3,3,", "move_range", 3),
    ("spd:1,-1,-1,-1,-1,-1,1,-1,-1,1,-1,-1", "move_range", 1),
    ("cenp:K", "throne_passable", False), ("cenhe:", "throne_hostile", False), ("corh:", "hostile_corners", False),
    ("cors:tcnkmTCNKM", "restricted_corners", False), ("cor:", "restricted_corners", False),
])
def test_each_entry(entry, field, value):
    extra = " esc:e" if entry == "cor:" else ""
    assert getattr(parse_rules_string(f"dim:11 {entry}{extra} start:{FETLAR}"), field) == value


# --- refusals ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("entries,key", [
    ("sw:s", "sw:s"), ("sw:w", "sw:w"), ("efe:y", "efe:y"), ("linc:y", "linc:y"), ("tfr:w", "tfr:w"),
    ("ka:a", "ka:a"), ("ka:h", "ka:h"), ("ks:w", "ks:w"), ("ks:n", "ks:n"), ("kj:r", "kj:r"), ("kj:c", "kj:c"),
    ("ber:m", "ber:m"), ("afor:a4,a5,", "afor:a4,a5,"), ("dfor:b1,", "dfor:b1,"), ("cen:", "cen:"),
    ("cen:e5,", "cen:e5,"), ("cens:", "cens:"), ("cens:tcnkmTCNKM", "cens:tcnkmTCNKM"),
    ("cor:a1,a2,b1,b2,", "cor:a1,a2,b1,b2,"), ("cor:", "cor:"), ("cenhe:t", "cenhe:t"), ("corh:T", "corh:T"),
    ("cenh:T", "cenh:T"), ("ka:n", "cenh:tcnkm"), ("cenp:tK", "cenp:tK"), ("cors:", "cors:"),
    ("spd:3,4", "spd:3,4"), ("spd:-1,-1,-1,-1,-1,-1,-1,-1,-1,1,-1,-1,", "spd:-1,-1,-1,-1,-1,-1,-1,-1,-1,1,-1,-1,"),
    ("spd:fast", "spd:fast"), ("esc:x", "esc:x"), ("shield:y", "shield:y"), ("dim:8", "dim:8"), ("dim:21", "dim:21"),
])
def test_unsupported_entries_are_named_in_one_line(entries, key):
    text = f"dim:11 {entries} start:{FETLAR}" if not entries.startswith("dim:") else f"{entries} start:/8/"
    with pytest.raises(ValueError) as err:
        parse_rules_string(text)
    assert isinstance(err.value, UnsupportedRulesError)
    assert key in err.value.keys, str(err.value)
    assert "\n" not in str(err.value) and key in str(err.value)


def test_every_problem_is_named_at_once():
    with pytest.raises(UnsupportedRulesError) as err:
        parse_rules_string(f"dim:11 sw:s efe:y tfr:w start:{FETLAR}")
    assert err.value.keys == ["tfr:w", "sw:s", "efe:y"]


@pytest.mark.parametrize("text,key", [
    ("", ""), ("dim:9", "start"), (f"start:{TABLUT}", "dim"),
    ("dim:9 start:/3ttt3/4t4/4T4/t3T3t/ttTTKTTtt/t3T3t/4T4/4t4/", "start:"),
    ("dim:9 start:/3mmm3/4t4/4T4/t3T3t/ttTTKTTtt/t3T3t/4T4/4t4/3ttt3/", "start:"),
    ("dim:9 start:/3ttt3/4t4/4T4/t3T3t/ttTTKKTtt/t3T3t/4T4/4t4/3ttt3/", "start:"),
    ("dim:11 nj:j start:/3ttttt3/5c5/11/t4T4t/t3TTT3t/tc1TTKTT1ct/t3TNT3t/t4T4t/11/5c5/3ttttt3/", "nj:j"),
])
def test_malformed_strings(text, key):
    with pytest.raises(UnsupportedRulesError) as err:
        parse_rules_string(text)
    assert any(k.startswith(key) for k in err.value.keys), str(err.value)


def test_rules_opentafl_cannot_play_have_no_string():
    berserk = make_rules("legacy_berserk")
    for option, value in (("commander_sandwich", False), ("commander_capture_on_throne", True)):
        with pytest.raises(UnsupportedRulesError) as err:
            rules_string(berserk.replace(**{option: value}))
        assert err.value.keys == [f"{option}={value}"]


# --- OpenTafl's own variants (the strings OpenTafl 0.4.8 sends an engine; match.sh --list) ------------

OPENTAFL_VARIANTS = {
    "Sea Battles 9x9": ("dim:9 name:Sea_Battle esc:e atkf:y ka:n nj:n cj:n cor: cen: start:" + TABLUT, ["cen:"]),
    "Fetlar 11x11": ("dim:11 name:Fetlar atkf:y nj:n cj:n start:" + FETLAR, None),
    "Copenhagen 11x11": ("dim:11 name:Copenhagen atkf:y tfr:w sw:s efe:y start:" + FETLAR, ["tfr:w", "sw:s", "efe:y"]),
    "Copenhagen 11x11 (relaxed shieldwall variant)": (
        "dim:11 name:Copenhagen_(relaxed_shieldwall) atkf:y tfr:w sw:s swf:n efe:y start:" + FETLAR,
        ["tfr:w", "sw:s", "efe:y"]),
    "Berserk 11x11": ("dim:11 name:Berserk surf:n atkf:n tfr:l kj:r ber:c start:/3ttttt3/5c5/11/t4T4t/t3NTT3t/"
                      "tc1TTKTT1ct/t3TTT3t/t4T4t/11/5c5/3ttttt3/", ["kj:r"]),
    "Brandub 7x7": ("dim:7 name:Brandub surf:n atkf:y ks:w cenh: cenhe: start:/3t3/3t3/3T3/ttTKTtt/3T3/3t3/3t3/",
                    ["ks:w"]),
    "Tawlbwrdd 11x11": ("dim:11 name:Tawlbwrdd esc:e atkf:y ks:w nj:n cj:n cor: cen: start:/4ttt4/4t1t4/5t5/5T5/"
                        "tt2TTT2tt/t1tTTKTTt1t/tt2TTT2tt/5T5/5t5/4t1t4/4ttt4/", ["ks:w", "cen:"]),
    "Tablut 9x9": ("dim:9 name:Tablut esc:e atkf:y ks:c nj:n cor: cenp:tcnkTCNK cens: cenh: cenhe:tcnkTCNK linc:y "
                   "start:" + TABLUT, ["linc:y", "cens:"]),
    "Foteviken Tablut 9x9": ("dim:9 name:Foteviken_Tablut esc:e atkf:y nj:n cor: afor:a4,a5,a6,b5,d1,e1,f1,e2,i4,"
                             "i5,i6,h5,d9,e9,f9,e8, cenp:tcnkTCNK aforp:tcnkTCNK cens: cenh: cenhe:K aforh:K cenre: "
                             "aforre: start:" + TABLUT, ["afor:a4,a5,a6,b5,d1,e1,f1,e2,i4,i5,i6,h5,d9,e9,f9,e8,",
                                                          "cens:", "cenre:"]),
    "Magpie 7x7": ("dim:7 name:Magpie surf:n atkf:y ks:m spd:-1,-1,-1,-1,-1,-1,-1,-1,-1,1,-1,-1, "
                   "start:/3t3/3t3/3T3/ttTKTtt/3T3/3t3/3t3/", ["spd:-1,-1,-1,-1,-1,-1,-1,-1,-1,1,-1,-1,"]),
    "Computer Fetlar 11x11": ("dim:11 name:Computer_Fetlar atkf:y tfr:w start:" + FETLAR, ["tfr:w"]),
    "Tablut 15x15": ("dim:15 name:Tablut esc:e atkf:y ks:c nj:n cor: cens: cenh: start:/5ttttt5/6ttt6/7t7/7t7/7T7/"
                     "t5TTT5t/tt3T1T1T3tt/ttttTTTKTTTtttt/tt3T1T1T3tt/t5TTT5t/7T7/7t7/7t7/6ttt6/5ttttt5/", ["cens:"]),
    "Sea Battle (Parlett) 13x13": ("dim:13 name:Sea_Battle_(Parlett) esc:e atkf:y ka:n nj:n cj:n cor: cen: "
                                   "start:/4ttttt4/5t1t5/6t6/6T6/t3T3T3t/tt3TTT3tt/t1tT1TKT1Tt1t/tt3TTT3tt/t3T3T3t/"
                                   "6T6/6t6/5t1t5/4ttttt4/", ["cen:"]),
    "Alea Evangelii 19x19": ("dim:19 name:Alea_Evangelii atkf:y tfr:w cor:a1,a2,b1,b2,a18,b18,a19,b19,r1,r2,s1,s2,"
                             "r18,r19,s18,s19, cenp:tcnkTCNK cens: cenh: cenhe:tcnkTCNK start:"
                             + make_rules("legacy_alea_evangelii").layout,
                             ["tfr:w", "cens:", "cor:a1,a2,b1,b2,a18,b18,a19,b19,r1,r2,s1,s2,r18,r19,s18,s19,"]),
}


@pytest.mark.parametrize("name", sorted(OPENTAFL_VARIANTS))
def test_opentafl_variants(name):
    text, refused = OPENTAFL_VARIANTS[name]
    if refused is None:
        rules = parse_rules_string(text)
        assert rules.board_size == int(text.split()[0][4:]) and rules.max_turns is None
        assert parse_rules_string(rules_string(rules)) == rules
        return
    with pytest.raises(UnsupportedRulesError) as err:
        parse_rules_string(text)
    assert err.value.keys == refused


def test_fetlar_is_this_engines_hnefatafl_with_the_opentafl_king():
    fetlar = parse_rules_string(OPENTAFL_VARIANTS["Fetlar 11x11"][0])
    ours = make_rules("legacy_hnefatafl")
    assert fetlar.layout == ours.layout
    differs = {f.name for f in dataclasses.fields(RuleSet) if getattr(fetlar, f.name) != getattr(ours, f.name)}
    assert differs == {"name", "title", "summary", "king_armed", "edge_hostile_to_king", "repetition", "max_turns"}


# --- game records ----------------------------------------------------------------------------------

def _random_game(variant: str, seed: int, plies: int = 120) -> Game:
    rng = random.Random(seed)
    game = Game(variant)
    while not game.is_over() and len(game.moves) < plies:
        game.push(int(rng.choice(list(game.legal_actions()))))
    return game


@pytest.mark.parametrize("variant", ALL)
def test_records_round_trip(variant):
    for seed in range(3):
        game = _random_game(variant, seed)
        text = write_otg(game, tags={"attackers": "random", "defenders": "random"})
        head = text.split("\n\n", 1)[0].splitlines()
        assert all(line.startswith("[") for line in head) and head[-1].startswith("[rules:dim:")
        record = read_otg(text)
        assert record.rules == game.rules.replace(max_turns=None)
        assert record.tags["attackers"] == "random" and record.tags["compiler"] == "tafl-env"
        if game.moves and game.moves[-1].is_pass:
            continue                    # a record never holds a pass: the last one is left open
        assert record.game.position == game.position and record.game.to_move == game.to_move
        if game.reason != "truncated":  # the record's replay has no move cap
            assert (record.game.result, record.game.reason) == (game.result, game.reason)
        assert record.tags["result"] == {"attacker": "1", "defender": "-1", "draw": "0", None: "?"}[game.result]


def test_a_berserk_record_keeps_each_turn_on_one_line():
    start = "/2t8/11/11/11/3Tt6/11/11/1TT8/1tt8/10K/11/"       # RULES.md §5.5's three captures
    game = Game("legacy_berserk", position=start, to_move="attacker")
    for move in ("c1-c5", "c5-c7", "c7-b7", "k10-k11"):
        game.push(move)
    text = write_otg(game, start=start, to_move="attacker")
    assert "1. c1-c5xd5 c5=c7xc8 c7=b7xb8 k10-k11 " in text and "[|||]" in text
    assert read_otg(text).game.position == game.position


def test_a_record_from_a_set_up_position():
    start = Game("historical_tablut")
    start.push("e2-c2")
    game = Game("historical_tablut", position=start.position, to_move="defender")
    game.push("e3-d3")
    text = write_otg(game, start=start.position, to_move="defender")
    assert "atkf:n" in text and f"starti:" in text
    assert read_otg(text).game.position == game.position
    with pytest.raises(ValueError, match="do not lead"):
        write_otg(game)


OPENTAFL_RECORD = """[date:2026.12.06]
[result:-1]
[compiler:OpenTafl]
[rules:dim:9 name:historical_tablut esc:e atkf:y tfr:l ks:c cor: starti:/3ttt3/4t4/4T4/t3T3t/ttTTKTTtt/t3T3t/4T4/4t4/3ttt3/]

1. d1-d3 c5-c3xd3 
[|]

2. e1-c1 d5-d7 
[|]

3. a4-d4 c3-c4xd4 
[|]

4. f1-d1 Ke5-d5 
[|]

5. d1-d2 Kd5-d3 
[|]

6. b5-b3 e3-i3 
[|]

7. e2-e3xe4 Kd3-d4 
[|]

8. e3-e4 i3-e3xe4 
[|]

9. i4-e4 f5-f4xe4 
[|]

10. a5-f5xg5 e6-f6xf5 
[|]

11. a6-e6xe7 Kd4-d6xe6 
[|]

12. b3-b6 Kd6-d5 
[|]

13. b6-b5 Kd5-d6 
[|]

14. b5-b6 Kd6-d5 
[|]

15. b6-b5 Kd5-d3 
[|]

16. b5-b3 e3-e6 
[|]

17. h5-h3 Kd3-d5 
[|]

18. b3-b5 Kd5-g5 
[|]

19. d2-d3 Kg5-g9 
[|]

"""


def test_reading_an_opentafl_record():
    record = read_otg(OPENTAFL_RECORD)
    assert record.tags["compiler"] == "OpenTafl" and record.tags["result"] == "-1"
    assert record.moves[-1] == "Kg5-g9" and len(record.moves) == 38
    assert (record.game.result, record.game.reason) == ("defender", "escaped")
    with pytest.raises(ValueError, match="turn 2"):
        read_otg(OPENTAFL_RECORD.replace("2. e1-c1", "2. e1-e5"))
    with pytest.raises(UnsupportedRulesError):
        read_otg("1. d1-d3\n")


def test_tafl_replay_reads_a_record(tmp_path, capsys):
    from tafl_env.cli import main

    path = tmp_path / "game.otg"
    path.write_text(OPENTAFL_RECORD, encoding="utf-8")
    assert main(["replay", str(path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (summary["result"], summary["reason"], summary["turns"]) == ("defender", "escaped", 38)
    path.write_text(OPENTAFL_RECORD.replace("2. e1-c1", "2. e1-e5"), encoding="utf-8")
    assert main(["replay", str(path)]) == 2
    assert "turn 2" in capsys.readouterr().err


# --- against OpenTafl itself -------------------------------------------------------------------------

def _rules_check(home: Path, cwd: Path) -> subprocess.Popen:
    cp = f"{home}/headless-driver.jar:{home}/opentafl.jar:{home}/lib/*"
    return subprocess.Popen(["java", "-cp", cp, "com.manywords.softworks.tafl.RulesCheck"], cwd=cwd,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


@needs_opentafl
@pytest.mark.parametrize("variant", ["historical_tablut", "legacy_ard_ri"])
def test_opentafl_plays_the_same_rules(variant, tmp_path):
    """Random games, move by move: OpenTafl's position, side to move, legal moves and result are
    this engine's, for at least 300 moves (its RulesCheck driver)."""
    proc = _rules_check(opentafl_home(), tmp_path)
    rng = random.Random(7)
    plies = games = 0
    try:
        while plies < 300:
            game = Game(variant, max_turns=None)
            proc.stdin.write(f"RULES {rules_string(game.rules)}\nNEW\n")
            proc.stdin.flush()
            games += 1
            while True:
                state = proc.stdout.readline().split()
                assert state and state[0] == "STATE", state
                _, _, side, victory, position = state[:5]
                theirs = sorted(state[5].split(",")) if len(state) > 5 else []
                assert position == game.position, (variant, games, plies)
                assert side == game.to_move[0]
                over = {"0": None, "1": "draw", "2": "attacker", "3": "defender"}[victory]
                if game.is_over() or over:
                    assert over == game.result and game.reason in ("escaped", "king_captured", "encircled")
                    break
                ours = sorted(f"{square_name(m.origin, game.n)}-{square_name(m.target, game.n)}"
                              for m in game.legal_moves())
                assert ours == theirs, (variant, games, game.position)
                move = rng.choice(game.legal_moves())
                game.push(move.action)
                plies += 1
                proc.stdin.write(f"MOVE {square_name(move.origin, game.n)}-{square_name(move.target, game.n)}\n")
                proc.stdin.flush()
                if plies >= 400:
                    break
    finally:
        proc.kill()
        proc.wait()
    assert plies >= 300


@needs_opentafl
def test_the_agreement_benchmark_explains_every_difference():
    """The long-run benchmark's comparison on three random games of each variant: each agrees with
    OpenTafl to its end, or parts from it at a difference the benchmark recognises (its CLASSES);
    a state changed on OpenTafl's side is caught."""
    bench = _agreement_benchmark()
    with bench.RulesCheck(opentafl_home()) as checker:
        for variant in VARIANTS:
            for seed in range(3):
                verdict, record = bench.check_game(checker, variant, seed)
                assert verdict.kind in bench.CLASSES and verdict.kind != "unexplained", \
                    bench.describe(record, verdict)
                assert verdict.plies > 0
        record = bench.play_random_game("historical_tablut", 0)
        theirs = checker.replay(rules_string(make_rules("historical_tablut")),
                                [bench._move_names("historical_tablut")[m.action] for m in record.moves])
        assert bench.compare(record, theirs).kind == "agree"
        theirs[5] = dataclasses.replace(theirs[5], moves=theirs[5].moves[1:])
        verdict = bench.compare(record, theirs)
        assert (verdict.kind, verdict.ply, verdict.plies) == ("unexplained", 5, 4)


LOAD_OTG = """package com.manywords.softworks.tafl;
import com.manywords.softworks.tafl.notation.GameSerializer;
import com.manywords.softworks.tafl.engine.replay.ReplayGame;
import com.manywords.softworks.tafl.command.CommandParser;
import com.manywords.softworks.tafl.rules.Coord;
import java.io.File;
public class LoadOtg {
  public static void main(String[] a) throws Exception {
    Log.level = Log.Level.CRITICAL; new File("log").mkdirs(); Log.setupFile(); Coord.initialize();
    GameSerializer.GameContainer c = GameSerializer.loadGameRecordFile(new File(a[0]));
    ReplayGame rg = new ReplayGame(c.game, c.moves, c.variations);
    while (rg.nextState(CommandParser.ReplayNext.CANONICAL_CHILD) == ReplayGame.NavigationResult.SUCCESS) {}
    System.out.println("LOADED " + c.moves.size() + " " + rg.getCurrentState().getOTNPositionString()
        + " " + rg.getCurrentState().checkVictory());
    System.exit(0);
  }
}
"""


@needs_opentafl
@pytest.mark.skipif(shutil.which("javac") is None, reason="javac is not here")
def test_opentafl_reads_our_records(tmp_path):
    home = opentafl_home()
    cp = f"{home}/opentafl.jar:{home}/lib/*"
    (tmp_path / "LoadOtg.java").write_text(LOAD_OTG)
    subprocess.run(["javac", "-d", str(tmp_path / "out"), "-cp", cp, str(tmp_path / "LoadOtg.java")], check=True,
                   capture_output=True)
    for variant, seed in (("historical_tablut", 3), ("legacy_tawlbwrdd", 4)):
        game = _random_game(variant, seed, plies=400)
        (tmp_path / "g.otg").write_text(write_otg(game))
        out = subprocess.run(["java", "-cp", f"{tmp_path / 'out'}:{cp}", "com.manywords.softworks.tafl.LoadOtg",
                              str(tmp_path / "g.otg")], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        loaded = next(line for line in out.stdout.splitlines() if line.startswith("LOADED")).split()
        assert loaded[1:3] == [str(len(game.moves)), game.position]
        if game.reason in ("escaped", "king_captured", "encircled"):
            assert {"0": None, "4": "draw", "2": "attacker", "3": "defender"}[loaded[3]] == game.result
