"""The ``tafl`` command line (DESIGN.md "Command line"), run in-process through ``main([...])``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import tafl_env
from tafl_env.cli import main, parse_option_value, read_move_source

from conftest import CASES_DIR
from conftest import diagram_position as board  # ASCII board, rank N on top → position string

GAMES = CASES_DIR / "games.jsonl"
PERFT = CASES_DIR / "perft.json"

TABLUT_START = "/3ttt3/4t4/4T4/t3T3t/ttTTKTTtt/t3T3t/4T4/4t4/3ttt3/"
SUMMARY_KEYS = {"position", "to_move", "result", "reason", "turns", "chain"}
FORBIDDEN = ("torch", "gymnasium", "pettingzoo", "stable_baselines3")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def last_json(out: str) -> dict:
    lines = out.strip().splitlines()
    assert lines, "no output"
    obj = json.loads(lines[-1])
    assert isinstance(obj, dict)
    return obj


def load_games() -> list[dict]:
    return [json.loads(line) for line in GAMES.read_text().splitlines() if line.strip()]


def test_board_helper():
    assert board("""
        . . . t t t . . .
        . . . . t . . . .
        . . . . T . . . .
        t . . . T . . . t
        t t T T K T T t t
        t . . . T . . . t
        . . . . T . . . .
        . . . . t . . . .
        . . . t t t . . .
    """) == TABLUT_START


# --- top level ------------------------------------------------------------------------------------

def test_help_lists_the_commands(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for command in ("variants", "moves", "perft", "replay", "bench"):
        assert command in out


def test_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert tafl_env.__version__ in out


def test_no_command_is_a_usage_error(capsys):
    code, _, err = run(capsys)
    assert code == 2
    assert "variants" in err


def test_option_values_are_typed():
    assert parse_option_value("50") == 50
    assert parse_option_value("None") is None
    assert parse_option_value("true") is True and parse_option_value("False") is False
    assert parse_option_value("draw") == "draw"


# --- variants -------------------------------------------------------------------------------------

def test_variants_plain(capsys):
    code, out, _ = run(capsys, "variants")
    assert code == 0
    for vid in tafl_env.VARIANTS + tafl_env.EXTRA_VARIANTS:
        assert vid in out
    assert "19x19" in out and "7x7" in out


def test_variants_json(capsys):
    code, out, _ = run(capsys, "variants", "--json")
    assert code == 0
    rows = last_json(out)["variants"]
    assert [r["id"] for r in rows if not r["extra"]] == tafl_env.VARIANTS
    assert [r["id"] for r in rows if r["extra"]] == tafl_env.EXTRA_VARIANTS
    by_id = {r["id"]: r for r in rows}
    assert set(by_id["historical_tablut"]) == {"id", "title", "board_size", "first_to_move", "summary",
                                               "extra"}
    sizes = {v: by_id[v]["board_size"] for v in tafl_env.VARIANTS}
    assert sizes == {"legacy_alea_evangelii": 19, "legacy_tawlbwrdd": 11, "historical_tablut": 9,
                     "legacy_ard_ri": 7, "legacy_berserk": 11}
    assert by_id["legacy_ard_ri"]["first_to_move"] == "defender"
    assert by_id["historical_tablut"]["first_to_move"] == "attacker"
    assert all(r["summary"] and r["title"] for r in rows)


# --- moves ----------------------------------------------------------------------------------------

def test_moves_tablut_start(capsys):
    code, out, _ = run(capsys, "moves", "historical_tablut")
    assert code == 0
    moves = out.split()
    assert len(moves) == 80 == len(set(moves))
    assert "e2-c2" in moves and "d1-d4" in moves
    assert "e2-e3" not in moves  # blocked by the defender on e3
    assert "pass" not in moves


def test_moves_json(capsys):
    code, out, _ = run(capsys, "moves", "historical_tablut", "--json")
    assert code == 0
    obj = last_json(out)
    assert set(obj) == {"variant", "position", "to_move", "chain", "moves", "count"}
    assert obj["variant"] == "historical_tablut"
    assert obj["position"] == TABLUT_START
    assert obj["to_move"] == "attacker" and obj["chain"] is None
    assert obj["count"] == len(obj["moves"]) == 80


def test_moves_default_first_mover_and_other_side(capsys):
    _, out, _ = run(capsys, "moves", "legacy_ard_ri", "--json")
    obj = last_json(out)
    assert obj["to_move"] == "defender" and obj["count"] == 8
    _, out, _ = run(capsys, "moves", "historical_tablut", "--position", TABLUT_START, "--to-move", "defender",
                    "--json")
    obj = last_json(out)
    assert obj["to_move"] == "defender" and obj["count"] == 56


def test_moves_after_moves_lists_captures(capsys):
    # c1-c2 sandwiches the defender on b2 against the attacker on a2.
    pos = board("""
        . . . . . . . . .
        . . . . . . . . .
        . . . . . . . . .
        . . . . . . . . .
        . . . . K . . . .
        . . . . . . . . .
        . . . . . . . . .
        t T . . . . . . .
        . . t . . . . . .
    """)
    code, out, _ = run(capsys, "moves", "historical_tablut", "--position", pos, "--to-move", "attacker")
    assert code == 0
    moves = out.split()
    assert "c1-c2xb2" in moves  # the writer lists captures
    assert "c1-d1" in moves


def test_moves_after_played_moves(capsys):
    code, out, _ = run(capsys, "moves", "historical_tablut", "--moves", "e2-c2", "--json")
    assert code == 0
    obj = last_json(out)
    assert obj["to_move"] == "defender"
    assert obj["position"] == "/3ttt3/2t6/4T4/t3T3t/ttTTKTTtt/t3T3t/4T4/4t4/3ttt3/"


def test_moves_inside_a_berserk_chain_lists_pass(capsys):
    case = next(c for c in json.loads(PERFT.read_text())["cases"] if c["pending"])
    code, out, _ = run(capsys, "moves", case["variant"], "--moves", *case["moves"], "--json")
    assert code == 0
    obj = last_json(out)
    assert obj["chain"] == case["pending"]
    assert obj["position"] == case["position"] and obj["to_move"] == case["to_move"]
    assert "pass" in obj["moves"]
    assert obj["count"] == case["perft"]["1"]


def test_moves_bad_move_exits_2(capsys):
    code, out, err = run(capsys, "moves", "historical_tablut", "--moves", "e2-c2", "e5-e6")
    assert code == 2
    assert "move 2" in err and "e5-e6" in err
    assert out == ""


def test_rule_option_changes_the_rules(capsys):
    # One-square moves only: from the Tablut start far fewer moves exist.
    _, out, _ = run(capsys, "moves", "historical_tablut", "--option", "move_range=1", "--json")
    assert last_json(out)["count"] < 80
    code, _, err = run(capsys, "moves", "historical_tablut", "--option", "no_such_option=1")
    assert code == 2 and "no_such_option" in err
    code, _, err = run(capsys, "moves", "historical_tablut", "--option", "repetition=sometimes")
    assert code == 2 and "repetition" in err
    code, _, err = run(capsys, "moves", "historical_tablut", "--option", "repetition")
    assert code == 2 and "NAME=VALUE" in err


# --- perft ----------------------------------------------------------------------------------------

def test_perft_tablut_depth_2(capsys):
    code, out, _ = run(capsys, "perft", "historical_tablut", "2")
    assert code == 0
    assert out.strip().splitlines()[-1] == "4400"


def test_perft_ard_ri_depth_3_json(capsys):
    code, out, _ = run(capsys, "perft", "legacy_ard_ri", "3", "--json")
    assert code == 0
    obj = last_json(out)
    assert set(obj) == {"variant", "depth", "nodes", "seconds"}
    assert obj["variant"] == "legacy_ard_ri" and obj["depth"] == 3 and obj["nodes"] == 1736
    assert obj["seconds"] >= 0


def test_perft_other_side_and_depth_0(capsys):
    _, out, _ = run(capsys, "perft", "historical_tablut", "2", "--position", TABLUT_START,
                    "--to-move", "defender")
    assert out.split()[-1] == "4408"
    _, out, _ = run(capsys, "perft", "historical_tablut", "0")
    assert out.split()[-1] == "1"


def test_perft_inside_a_berserk_chain(capsys):
    case = next(c for c in json.loads(PERFT.read_text())["cases"] if c["pending"])
    _, out, _ = run(capsys, "perft", case["variant"], "2", "--moves", *case["moves"])
    assert int(out.split()[-1]) == case["perft"]["2"]


def test_perft_of_a_finished_game_is_zero(capsys):
    # A loaded position whose side to move has no move is finished at once (RULES §6.6): no actions.
    pos = board("""
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . . . K . . .
        . . . . . . .
        . . . . . . .
        . . . . . . .
    """)
    _, out, _ = run(capsys, "perft", "legacy_ard_ri", "1", "--position", pos, "--to-move", "attacker")
    assert out.split()[-1] == "0"


def test_perft_bad_input_exits_2(capsys):
    code, _, err = run(capsys, "perft", "historical_tablut", "-1")
    assert code == 2
    code, _, err = run(capsys, "perft", "no_such_variant", "1")
    assert code == 2 and "no_such_variant" in err and "Traceback" not in err
    code, _, err = run(capsys, "perft", "historical_tablut", "1", "--position", "/9/9/")
    assert code == 2 and "/9/9/" in err and "Traceback" not in err
    code, _, err = run(capsys, "perft", "historical_tablut", "1", "--to-move", "white")
    assert code == 2


# --- replay ---------------------------------------------------------------------------------------

def test_replay_json_shape(capsys):
    code, out, _ = run(capsys, "replay", "historical_tablut", "e2-c2", "--json")
    assert code == 0
    obj = last_json(out)
    assert set(obj) == SUMMARY_KEYS
    assert obj == {"position": "/3ttt3/2t6/4T4/t3T3t/ttTTKTTtt/t3T3t/4T4/4t4/3ttt3/", "to_move": "defender",
                   "result": None, "reason": None, "turns": 1, "chain": None}


def test_replay_moves_interleaved_with_options(capsys):
    code, out, _ = run(capsys, "replay", "historical_tablut", "--position", TABLUT_START, "--to-move",
                       "attacker", "e2-c2", "--json", "e3-d3")
    assert code == 0
    obj = last_json(out)
    assert obj["turns"] == 2 and obj["to_move"] == "attacker"


def test_replay_plain_prints_board_and_summary(capsys):
    code, out, _ = run(capsys, "replay", "historical_tablut", "e2-c2")
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0].split()[0] == "9" and lines[-2].split() == list("abcdefghi")
    assert "1 turn" in lines[-1] and "defender" in lines[-1]


@pytest.mark.parametrize("seed_index", [0, 1])
def test_replay_public_games(capsys, seed_index):
    games = load_games()
    # One game with a result and a berserk game (passes and implied passes) from the public records.
    game = [next(g for g in games if g["result"] is not None and g["variant"] == "historical_tablut"),
            next(g for g in games if g["variant"] == "legacy_berserk" and g["result"] is not None
                 and len(g["moves"]) != g["turns"])][seed_index]
    code, out, err = run(capsys, "replay", game["variant"], *game["moves"], "--json")
    assert code == 0, err
    obj = last_json(out)
    for key in ("position", "to_move", "result", "reason", "turns"):
        assert obj[key] == game[key], key


def test_replay_uncapped_by_default(capsys):
    games = load_games()
    game = next(g for g in games if g["variant"] == "historical_tablut" and g["turns"] == 400)
    _, out, _ = run(capsys, "replay", game["variant"], *game["moves"], "--json")
    obj = last_json(out)
    assert (obj["turns"], obj["result"], obj["reason"]) == (400, None, None)
    assert obj["position"] == game["position"]
    # With --max-turns the same game is truncated there, and a further move is refused.
    _, out, err = run(capsys, "replay", game["variant"], *game["moves"][:50], "--max-turns", "50", "--json")
    obj = last_json(out)
    assert (obj["turns"], obj["reason"]) == (50, "truncated")
    code, _, err = run(capsys, "replay", game["variant"], *game["moves"][:51], "--max-turns", "50")
    assert code == 2 and "move 51" in err


def test_replay_illegal_move_exits_2_naming_it(capsys):
    code, out, err = run(capsys, "replay", "historical_tablut", "e2-c2", "e4-e3", "--json")
    assert code == 2
    assert "move 2" in err and "'e4-e3'" in err
    assert "illegal" in err
    assert "Traceback" not in err
    assert out.strip() == ""


def test_replay_malformed_move_exits_2_naming_it(capsys):
    code, _, err = run(capsys, "replay", "historical_tablut", "e2-c2", "e3-d3", "zz9")
    assert code == 2
    assert "move 3" in err and "'zz9'" in err and "malformed" in err


def test_replay_wrong_capture_suffix_exits_2(capsys):
    code, _, err = run(capsys, "replay", "historical_tablut", "e2-c2xc3")
    assert code == 2 and "move 1" in err and "c3" in err


def test_replay_bad_position_and_variant_exit_2(capsys):
    code, _, err = run(capsys, "replay", "historical_tablut", "--position", "/3ttt3/", "e2-c2")
    assert code == 2 and "/3ttt3/" in err and "Traceback" not in err
    code, _, err = run(capsys, "replay", "tablut_deluxe", "e2-c2")
    assert code == 2 and "tablut_deluxe" in err


def test_replay_file_plain_text(tmp_path, capsys):
    path = tmp_path / "game.txt"
    path.write_text("# a short Tablut opening\n"
                    "1. e2-c2 d5-d7   # the defender steps aside\n"
                    "2. e8-d8\n"
                    "# nothing more\n")
    code, out, err = run(capsys, "replay", "historical_tablut", "--file", str(path), "--json")
    assert code == 0, err
    obj = last_json(out)
    assert obj["turns"] == 3 and obj["to_move"] == "defender"
    assert obj["position"] == "/3ttt3/2t6/4T4/t3T3t/ttT1KTTtt/t3T3t/3TT4/3t5/3ttt3/"
    assert read_move_source(path.read_text())["moves"] == ["e2-c2", "d5-d7", "e8-d8"]


def test_replay_file_json_with_position(tmp_path, capsys):
    pos = board("""
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . . . K . . .
        . . . . . . .
        . . . . . . .
        . t . . . t .
    """)
    path = tmp_path / "game.json"
    path.write_text(json.dumps({"position": pos, "to_move": "defender", "moves": ["d4-c4", "b1-b2"]}))
    code, out, err = run(capsys, "replay", "legacy_ard_ri", "--file", str(path), "--json")
    assert code == 0, err
    obj = last_json(out)
    assert obj["turns"] == 2 and obj["to_move"] == "defender"
    assert obj["position"] == "/5t1/1t5/7/2K4/7/7/7/"


def test_replay_file_game_record_jsonl(tmp_path, capsys):
    games = load_games()
    game = next(g for g in games if g["variant"] == "legacy_ard_ri" and g["result"] is not None)
    path = tmp_path / "games.jsonl"
    path.write_text("\n".join(json.dumps(g) for g in [game] + games[:2]) + "\n")
    code, out, err = run(capsys, "replay", game["variant"], "--file", str(path), "--json")
    assert code == 0, err
    obj = last_json(out)
    for key in ("position", "to_move", "result", "reason", "turns"):
        assert obj[key] == game[key], key
    assert "warning" not in err


def test_replay_file_stdin(monkeypatch, capsys):
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO("e2-c2\n"))
    code, out, _ = run(capsys, "replay", "historical_tablut", "--file", "-", "--json")
    assert code == 0 and last_json(out)["turns"] == 1


def test_replay_file_errors(tmp_path, capsys):
    code, _, err = run(capsys, "replay", "historical_tablut", "--file", str(tmp_path / "missing.txt"))
    assert code == 2 and "missing.txt" in err
    path = tmp_path / "bad.json"
    path.write_text('{"moves": "e2-c2"}')
    code, _, err = run(capsys, "replay", "historical_tablut", "--file", str(path))
    assert code == 2 and "moves" in err
    path = tmp_path / "bad.txt"
    path.write_text("e2-c2 e4-e3\n")
    code, _, err = run(capsys, "replay", "historical_tablut", "--file", str(path))
    assert code == 2 and "move 2" in err and "e4-e3" in err
    code, _, err = run(capsys, "replay", "historical_tablut", "e2-c2", "--file", str(path))
    assert code == 2


# --- bench ----------------------------------------------------------------------------------------

def test_bench_json(capsys):
    code, out, _ = run(capsys, "bench", "legacy_ard_ri", "historical_tablut", "--batch", "1", "8",
                       "--seconds", "0.01", "--json")
    assert code == 0
    results = last_json(out)["results"]
    assert [(r["variant"], r["batch"]) for r in results] == [
        ("legacy_ard_ri", 1), ("legacy_ard_ri", 8), ("historical_tablut", 1), ("historical_tablut", 8)]
    for r in results:
        assert set(r) == {"variant", "batch", "threads", "steps_per_s", "peak_mem_mb"}
        assert r["steps_per_s"] > 0 and r["peak_mem_mb"] > 0 and r["threads"] == 1   # B < 64


def test_bench_threads_rows(capsys):
    from tafl_env.engine._jit import PARALLEL_MIN_BATCH

    big = PARALLEL_MIN_BATCH
    code, out, _ = run(capsys, "bench", "historical_tablut", "--batch", "8", str(big), "--threads", "1", "2",
                       "--seconds", "0.01", "--json")
    assert code == 0
    rows = [(r["batch"], r["threads"]) for r in last_json(out)["results"]]
    assert rows == [(8, 1), (big, 1), (big, 2)]


def test_bench_plain_table_and_bad_variant(capsys):
    code, out, _ = run(capsys, "bench", "legacy_ard_ri", "--batch", "2", "--seconds", "0")
    assert code == 0
    assert "legacy_ard_ri" in out and "steps/s" in out
    code, _, err = run(capsys, "bench", "no_such_variant", "--seconds", "0")
    assert code == 2 and "no_such_variant" in err


def test_bench_engine_counts_steps_per_game():
    from tafl_env.bench import bench_engine

    r = bench_engine("legacy_brandubh", 16, 0.05, seed=1)
    assert r["variant"] == "legacy_brandubh" and r["batch"] == 16
    assert r["steps"] > 0 and r["steps"] % 16 == 0
    assert r["steps_per_s"] == pytest.approx(r["steps"] / r["seconds"])


def test_bench_restarts_finished_games():
    from tafl_env.bench import bench_engine

    # A move cap of 3 turns ends every game quickly; the run goes on with restarted games.
    r = bench_engine("legacy_ard_ri", 4, 0.05, seed=0, max_turns=3)
    assert r["games_finished"] > 0
    assert r["steps"] > 4 * 3


# --- entry point and imports ------------------------------------------------------------------------

def test_module_entry_point_and_no_training_imports():
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import tafl_env.cli as cli\n"
        "assert cli.main(['perft', 'legacy_ard_ri', '1']) == 0\n"
        "assert cli.main(['replay', 'historical_tablut', 'e2-c2', '--json']) == 0\n"
        "assert cli.main(['moves', 'legacy_berserk', '--json']) == 0\n"
        "new = sorted({m.split('.')[0] for m in set(sys.modules) - before})\n"
        "print(__import__('json').dumps(new))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    new = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not [m for m in new if m in FORBIDDEN]
    third_party = [m for m in new if m not in sys.stdlib_module_names
                   # numba (a core dependency) brings llvmlite and reads its config with yaml if present;
                   # it also imports scipy when installed (ray[rllib] in the dev extra brings it), and
                   # numpy.f2py, which numba loads, charset_normalizer when installed
                   and m not in ("numpy", "numba", "llvmlite", "yaml", "tafl_env", "cython_runtime",
                                 "scipy", "_cyutility", "charset_normalizer")
                   and not m.startswith(("_cython", "_sysconfigdata"))]
    assert third_party == []

    proc = subprocess.run([sys.executable, "-m", "tafl_env", "variants", "--json"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    ids = [r["id"] for r in json.loads(proc.stdout.strip().splitlines()[-1])["variants"]]
    assert ids[:5] == tafl_env.VARIANTS


@pytest.mark.slow
def test_replay_every_public_game(capsys):
    for game in load_games():
        code, out, err = run(capsys, "replay", game["variant"], *game["moves"], "--json")
        assert code == 0, (game["variant"], game["seed"], err)
        obj = last_json(out)
        expected = {key: game[key] for key in ("position", "to_move", "result", "reason", "turns")}
        assert {key: obj[key] for key in expected} == expected, (game["variant"], game["seed"])
