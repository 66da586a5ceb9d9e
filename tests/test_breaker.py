"""What a breaker found (issue 28): unchecked numbers, work without a bound, half-applied steps.

Each bad input stops before any work, with one line naming the value (exit status 2 from the
command line) and nothing written or changed; each guarded job is bounded as a whole and stops on
Ctrl-C within a second. Most command-line checks call :func:`tafl_env.cli.main` in-process (the
same code the ``tafl`` script runs); a few run the real script in a subprocess.
"""

from __future__ import annotations

import _thread
import threading
import time

import numpy as np
import pytest

from tafl_env import Game
from tafl_env.cli import main
from tafl_env.engine import Engine
from tafl_env.engine import search
from tafl_env.errors import InvalidOptionError
from tafl_env.rules import MAX_TURNS_CAP, make_rules

from test_cli_errors import one_line_error, tafl


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line(capsys, *argv, words=()) -> str:
    """Run ``tafl argv`` in-process; assert exit status 2 and one stderr line naming ``words``."""
    code, out, err = run_cli(capsys, *argv)
    assert code == 2, (code, out, err)
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


# --- D1: perft is bounded over its real tree and stops on Ctrl-C ----------------------------------

SPARSE_TABLUT = ("historical_tablut", "--position", "/tT7/9/T8/9/4K4/9/9/9/9/", "--to-move", "attacker")


def test_perft_refuses_a_deep_tree_that_starts_narrow(capsys):
    # One or two legal actions at the root (the first-ply guess: 2**12), but the king runs free.
    line = one_line(capsys, "perft", SPARSE_TABLUT[0], "12", *SPARSE_TABLUT[1:], words=["depth 12"])
    assert "would count about" in line


def test_perft_estimate_follows_the_real_tree():
    eng = Engine(make_rules("legacy_ard_ri", max_turns=None))
    st = eng.initial_state(1)
    for depth in (2, 3, 4):
        exact = eng.perft(st, depth)
        assert 0.7 * exact < search.estimate_perft(eng, st, depth) < 1.3 * exact


def test_perft_in_slices_counts_what_one_pass_counts(monkeypatch):
    eng = Engine(make_rules("historical_tablut", max_turns=None))
    st = eng.initial_state(1)
    whole = eng.perft(st, 3)
    monkeypatch.setattr(search, "PERFT_SLICE", 7)    # resumed about a thousand times
    assert eng.perft(st, 3) == whole > 0


def test_perft_stops_when_its_running_count_passes_the_bound(monkeypatch):
    eng = Engine(make_rules("historical_tablut", max_turns=None))
    st = eng.initial_state(1)
    monkeypatch.setattr(search, "PERFT_SLICE", 100)
    monkeypatch.setattr(search, "MAX_PERFT_COUNT", 30_000)    # the estimate passes, the count not
    monkeypatch.setattr(search, "estimate_perft", lambda *a, **k: 1.0)
    with pytest.raises(InvalidOptionError, match="stopped after counting"):
        eng.perft(st, 4)


def interrupt_after(seconds: float) -> threading.Timer:
    """Ctrl-C for the main thread after ``seconds`` (what the terminal's SIGINT does)."""
    timer = threading.Timer(seconds, _thread.interrupt_main)
    timer.start()
    return timer


def test_perft_stops_on_ctrl_c_within_a_second(capsys):
    eng = Engine(make_rules("historical_tablut", max_turns=None))
    eng.perft(eng.initial_state(1), 2)     # compiled before the clock starts
    interrupt_after(0.5)
    t0 = time.monotonic()
    code, _, err = run_cli(capsys, "perft", "historical_tablut", "6")
    assert code == 2 and err.strip() == "tafl perft: interrupted"
    assert time.monotonic() - t0 < 1.5


# --- D6: numbers beyond the engine's integers ------------------------------------------------------

def test_move_cap_beyond_the_engines_turn_counter(capsys):
    with pytest.raises(InvalidOptionError, match="max_turns"):
        Game("historical_tablut", max_turns=2**70)
    assert make_rules("historical_tablut", max_turns=MAX_TURNS_CAP).max_turns == MAX_TURNS_CAP
    one_line(capsys, "moves", "historical_tablut", "--option", "max_turns=99999999999999999999999",
             words=["max_turns=99999999999999999999999"])


def test_play_random_with_too_many_steps():
    eng = Engine(make_rules("legacy_ard_ri"))
    st = eng.initial_state(2)
    before = st.copy().buffer
    with pytest.raises(ValueError, match="max_steps"):
        eng.play_random(st, np.random.default_rng(0), max_steps=2**70)
    assert (st.buffer == before).all()


# --- D10: TAFL_THREADS ----------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["abc", "", "0", "-1", "1.5"])
def test_bad_tafl_threads(capsys, monkeypatch, value):
    monkeypatch.setenv("TAFL_THREADS", value)
    one_line(capsys, "perft", "legacy_ard_ri", "1", words=["TAFL_THREADS", repr(value)])


def test_bad_tafl_threads_through_the_script(tmp_path, monkeypatch):
    monkeypatch.setenv("TAFL_THREADS", "abc")
    one_line_error(tafl("moves", "legacy_ard_ri", cwd=tmp_path), "TAFL_THREADS", "'abc'")
