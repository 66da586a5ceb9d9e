"""Bad numbers and bounds: unchecked numbers, work without a bound, half-applied steps.

Each bad input stops before any work, with one line naming the value (exit status 2 from the
command line) and nothing written or changed; each guarded job is bounded as a whole and stops on
Ctrl-C within a second. Most command-line checks call :func:`tafl_env.cli.main` in-process (the
same code the ``tafl`` script runs); a few run the real script in a subprocess.
"""

from __future__ import annotations

import _thread
import contextlib
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from tafl_env import Game
from tafl_env.cli import main
from tafl_env.engine import Engine
from tafl_env.engine import search
from tafl_env.errors import InvalidOptionError
from tafl_env.rules import MAX_TURNS_CAP, make_rules

from test_bad_input_cli import one_line_error, tafl

ROOT = Path(__file__).resolve().parents[1]


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line(capsys, *argv, words=()) -> str:
    """Run ``tafl argv`` in-process; assert exit status 2, one stderr line naming ``words`` and
    nothing on stdout (the command stopped before any work)."""
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == "", (code, out, err)
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


@contextlib.contextmanager
def terminal_sigint():
    """SIGINT handled as in a terminal for the block: a process started in the background by a
    non-interactive shell (CI, ``nohup ... &``) inherits SIGINT ignored, and then
    ``interrupt_main()`` does nothing."""
    saved = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, saved)


def interrupt_after(seconds: float) -> threading.Timer:
    """Ctrl-C for the main thread after ``seconds`` (what the terminal's SIGINT does)."""
    timer = threading.Timer(seconds, _thread.interrupt_main)
    timer.start()
    return timer


def test_perft_stops_on_ctrl_c_promptly(capsys):
    # the command's own path at a small depth first: whatever it compiles is compiled before the
    # clock starts (a compile cannot be interrupted; on a cold cache it took longer than the limit)
    assert run_cli(capsys, "perft", "historical_tablut", "2")[0] == 0
    # Ctrl-C every half second until the command returns: one interrupt that lands where Python
    # cannot see it (inside a compile on a cold cache) must not leave a depth-6 perft running on
    stop = threading.Event()

    def ctrl_c():
        while not stop.wait(0.5):
            _thread.interrupt_main()

    with terminal_sigint():
        threading.Thread(target=ctrl_c, daemon=True).start()
        t0 = time.monotonic()
        try:
            code, _, err = run_cli(capsys, "perft", "historical_tablut", "6")
        finally:
            stop.set()
    assert code == 2 and err.strip() == "tafl perft: interrupted"
    # the bug was minutes (a depth-6 perft runs on); the bound leaves room for a loaded machine
    assert time.monotonic() - t0 < 5.0


# --- D6: numbers beyond the engine's integers ------------------------------------------------------

def test_move_cap_beyond_the_engines_turn_counter(capsys):
    with pytest.raises(InvalidOptionError, match="max_turns"):
        Game("historical_tablut", max_turns=2**70)
    g = Game("historical_tablut", max_turns=MAX_TURNS_CAP)     # the largest cap plays
    g.push(next(iter(g.legal_moves())))
    assert g.turns == 1 and not g.is_over()
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


# --- D7, D12, D15: flags ---------------------------------------------------------------------------

@pytest.mark.parametrize("argv,words", [
    (["bench", "legacy_ard_ri", "--seed", "-1"], ["--seed", "'-1'"]),
    (["bench", "legacy_ard_ri", "--seconds", "inf"], ["--seconds", "'inf'"]),
    (["bench", "legacy_ard_ri", "--seconds", "nan"], ["--seconds", "'nan'"]),
    (["moves", "historical_tablut", "--to-move", "black"], ["--to-move", "'black'"]),
    (["moves", "historical_tablut", "--max-turns", "0"], ["--max-turns", "'0'"]),
    (["perft", "historical_tablut", "-1"], ["DEPTH", "'-1'"]),
    (["play", "legacy_ard_ri", "--vs", "random", "--seed", "-1"], ["--seed", "'-1'"]),
    (["train", "--config", "TRAIN_CONFIG", "--seed", "99999999999"],
     ["--seed", "'99999999999'"]),
    (["train", "--config", "TRAIN_CONFIG", "--max-minutes", "inf"],
     ["--max-minutes", "'inf'"]),
])
def test_a_bad_flag_is_one_line_naming_it(capsys, argv, words):
    argv = [str(ROOT / "configs/train/legacy_ard_ri.yaml") if a == "TRAIN_CONFIG" else a for a in argv]
    line = one_line(capsys, *argv, words=words)
    assert line.startswith(f"tafl {argv[0]}: error: ")


def test_a_bad_flag_through_the_script(tmp_path):
    one_line_error(tafl("moves", "historical_tablut", "--to-move", "black", cwd=tmp_path),
                   "--to-move", "'black'")


def test_bench_refuses_a_batch_beyond_memory(capsys, monkeypatch):
    import tafl_env.memory

    monkeypatch.setattr(tafl_env.memory, "available_bytes", lambda: 200 * 2**20)   # 200 MiB left
    one_line(capsys, "bench", "legacy_alea_evangelii", "--batch", "1000000", "--seconds", "0",
             "--threads", "1", words=["a batch of 1000000 legacy_alea_evangelii games", "GiB"])


def test_a_batch_within_memory_is_made():
    eng = Engine(make_rules("legacy_ard_ri"))
    assert len(eng.initial_state(5000)) == 5000


# --- D2, D8: MCTS budgets --------------------------------------------------------------------------

@pytest.mark.parametrize("spec,words", [
    ("mcts:infs", ["inf"]), ("mcts:1e400s", ["inf"]), ("mcts:1e9s", ["1000000000"]),
    ("mcts:nans", ["nan"]), ("mcts:100000000", ["100000000"]),
    ("mcts:99999999999999999999", ["99999999999999999999"]),
])
def test_mcts_budgets_beyond_bounds_are_refused(spec, words):
    from agents import make_agent

    with pytest.raises(ValueError) as info:
        make_agent(spec)
    for word in words:
        assert word in str(info.value)


def test_play_refuses_a_huge_mcts_before_the_game(capsys):
    one_line(capsys, "play", "legacy_ard_ri", "--vs", "mcts:99999999999999999999",
             words=["99999999999999999999"])


def test_mcts_tree_beyond_memory_is_refused(monkeypatch):
    import tafl_env.memory
    from agents import make_agent

    monkeypatch.setattr(tafl_env.memory, "available_bytes", lambda: 2**30)
    with pytest.raises(ValueError, match="mcts:500000 .*GiB"):
        make_agent("mcts:500000")


def test_mcts_time_budget_stops_at_the_simulation_bound(monkeypatch):
    from agents.mcts import agent as mcts_module
    from agents import make_agent

    eng = Engine(make_rules("legacy_ard_ri"))
    make_agent("mcts:8", seed=0).act(eng, eng.initial_state(1))      # compiled before the clock
    monkeypatch.setattr(mcts_module, "MAX_SIMULATIONS", 100)
    agent = make_agent("mcts:3600s", seed=0)
    t0 = time.monotonic()
    agent.act(eng, eng.initial_state(1))
    assert agent.last_simulations[0] <= 100 + mcts_module.CHUNK and time.monotonic() - t0 < 60


def test_mcts_search_stops_on_ctrl_c_promptly():
    from agents import make_agent

    eng = Engine(make_rules("historical_tablut"))
    agent = make_agent("mcts:1000000", seed=0)
    make_agent("mcts:8", seed=0).act(eng, eng.initial_state(1))      # compiled before the clock
    with terminal_sigint():
        interrupt_after(1.0)
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            agent.act(eng, eng.initial_state(1))
    assert time.monotonic() - t0 < 6.0     # uninterrupted: minutes


# --- D4, D5, D9: config numbers ---------------------------------------------------------------------

TOURNAMENT = {"variant": "legacy_ard_ri", "agents": {"a": "random", "b": "random"}, "games_per_pair": 2}


@pytest.mark.parametrize("extra,words", [
    ({"max_turns": 40, "options": {"max_turns": 50}}, ["options", "max_turns"]),
    ({"options": {1: 2}}, ["options", "1"]),
    ({"prior_sd": 1.0e-300}, ["prior_sd", "1e-300"]),
    ({"prior_sd": ".inf"}, ["prior_sd", "inf"]),
    ({"fps": ".nan"}, ["fps", "nan"]),
    ({"seed": 2**40}, ["seed", str(2**40)]),
    ({"agents": {"a": "random", "b": "mcts:100000000"}}, ["agent 'b'", "100000000"]),
    ({"agents": {"a": "random", "b": "mcts:infs"}}, ["agent 'b'", "inf"]),
])
def test_eval_config_numbers(capsys, tmp_path, extra, words):
    import yaml

    body = {**TOURNAMENT, **extra}
    text = yaml.safe_dump(body).replace("'.inf'", ".inf").replace("'.nan'", ".nan")
    config = tmp_path / "t.yaml"
    config.write_text(text)
    out = tmp_path / "out"
    one_line(capsys, "eval", "--config", config, "--out", out, words=words)
    assert not out.exists()


@pytest.mark.parametrize("field,value", [("learning_rate", ".inf"), ("ent_coef", ".inf"),
                                         ("learning_rate", "1e300"), ("seed", "99999999999"),
                                         ("clip_range", ".nan")])
def test_train_config_numbers(capsys, tmp_path, field, value):
    text = ((ROOT / "configs/train/legacy_ard_ri.yaml").read_text(encoding="utf-8")
            + f"\n{field}: {value}\n").replace(f"\n{field}:", f"\n# {field}:", 1)
    config = tmp_path / "t.yaml"
    config.write_text(text)
    out = tmp_path / "out"
    one_line(capsys, "train", "--config", config, "--out", out, words=[field])
    assert not out.exists()


def test_rllib_config_numbers(capsys, tmp_path):
    text = (ROOT / "configs/rllib/legacy_ard_ri.yaml").read_text(encoding="utf-8")
    text = text.replace("\nselfplay_weight:", "\n# selfplay_weight:") + "\nselfplay_weight: .inf\n"
    config = tmp_path / "r.yaml"
    config.write_text(text)
    out = tmp_path / "out"
    one_line(capsys, "train", "--config", config, "--out", out, words=["selfplay_weight", "inf"])
    assert not out.exists()


# --- D3, D16: one illegal-action rule --------------------------------------------------------------

def test_vector_env_opponents_illegal_reply_changes_nothing():
    from tafl_env import TaflVectorEnv
    from tafl_env.errors import IllegalMoveError

    def bad_opponent(obs, mask):        # the first game's reply illegal, the others legal
        acts = mask.argmax(axis=1)
        acts[0] = int(np.flatnonzero(mask[0] == 0)[0])
        return acts

    env = TaflVectorEnv("historical_tablut", 3, opponent=bad_opponent, learner_side="attacker")
    obs, infos = env.reset(seed=0)
    core = env._core
    before, mask_before, moves_before = core.state.copy(), core.mask.copy(), core.moves
    learner = [int(np.flatnonzero(m)[0]) for m in env.action_masks()]
    with pytest.raises(IllegalMoveError, match="opponent"):
        env.step(learner)
    assert np.array_equal(core.state.buffer, before.buffer) and core.moves == moves_before
    assert np.array_equal(env.action_masks(), mask_before)
    # the batch goes on: a legal opponent from now on, the same step plays
    env._core.opponent = lambda obs, mask: mask.argmax(axis=1)
    env.step(learner)
    assert (core.state.turn == 2).all()


def test_every_front_end_names_an_illegal_action_the_same():
    from tafl_env import Termination, TaflSingleEnv, env

    single = TaflSingleEnv("legacy_ard_ri", learner_side="defender")
    single.reset(seed=0)
    *_, info = single.step(single.num_actions - 1)
    e = env("legacy_ard_ri")
    e.reset()
    e.step(int(np.flatnonzero(e.last()[0]["action_mask"] == 0)[0]))
    reason = Termination.ILLEGAL_ACTION.reason
    assert info["reason"] == e.last()[4]["reason"] == reason == "illegal_action"
    assert info["winner"] == "attacker" and e.last()[4]["result"] == "attacker"


# --- safe policy loading ----------------------------------------------------------------------------

SHIPPED_ARD_RI = ROOT / "agents" / "pretrained" / "legacy_ard_ri.zip"


class _Payload:
    """Unpickled, it creates the file ``marker`` (what a crafted model would do, harmlessly)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def crafted_zip(tmp_path, *, in_data: bool = False, in_weights: bool = False) -> tuple[Path, Path]:
    """A copy of the shipped Ard Ri model with a payload in its JSON's pickled entries and/or in
    its weights file; returns (zip, the payload's marker file)."""
    import base64
    import io
    import json
    import pickle
    import zipfile

    import torch

    marker = tmp_path / "payload_ran"
    out = tmp_path / "crafted.zip"
    with zipfile.ZipFile(SHIPPED_ARD_RI) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            content = src.read(item.filename)
            if item.filename == "data" and in_data:
                data = json.loads(content)
                blob = base64.b64encode(pickle.dumps(_Payload(marker))).decode()
                for key in ("policy_class", "observation_space", "action_space"):
                    data[key][":serialized:"] = blob
                content = json.dumps(data).encode()
            if item.filename == "policy.pth" and in_weights:
                buf = io.BytesIO()
                weights = torch.load(io.BytesIO(content), weights_only=True)
                weights["extra"] = _Payload(marker)
                torch.save(weights, buf)
                content = buf.getvalue()
            dst.writestr(item, content)
    return out, marker


def test_policy_loads_the_shipped_model_without_unpickling_and_plays_as_sb3_does():
    from sb3_contrib import MaskablePPO

    from agents import make_agent

    agent = make_agent("policy:legacy_ard_ri")
    assert agent.model is None          # no MaskablePPO.load: the network was rebuilt from JSON
    eng = Engine(make_rules("legacy_ard_ri"))
    st = eng.initial_state(8)
    eng.play_random(st, np.random.default_rng(0), max_steps=6)
    st = st.take(np.flatnonzero(~st.done))
    from tafl_env.observation import observe

    sb3 = MaskablePPO.load(str(SHIPPED_ARD_RI), device="cpu")
    want, _ = sb3.predict(observe(eng, st, st.to_move), action_masks=eng.legal_action_mask(st).astype(bool),
                          deterministic=True)
    assert np.array_equal(agent.act(eng, st), want)


def test_policy_runs_no_payload_of_a_crafted_zip(tmp_path):
    from agents import make_agent

    path, marker = crafted_zip(tmp_path, in_data=True)
    make_agent(f"policy:{path}")
    assert not marker.exists()


def test_policy_refuses_weights_that_need_unpickling(tmp_path):
    from agents import make_agent
    from agents.base import AgentSpecError

    path, marker = crafted_zip(tmp_path, in_weights=True)
    with pytest.raises(AgentSpecError, match="refusing to unpickle"):
        make_agent(f"policy:{path}")
    assert not marker.exists()


def test_unpickle_policy_is_the_explicit_opt_in(tmp_path):
    from agents import make_agent

    path, marker = crafted_zip(tmp_path, in_data=True)
    with pytest.raises(ValueError):
        make_agent(f"unpickle-policy:{path}")
    assert marker.exists()               # it did what its name says
    assert make_agent(f"unpickle-policy:{SHIPPED_ARD_RI}").model is not None


def test_bench_refuses_a_batch_beyond_the_engines_limit(capsys):
    one_line(capsys, "bench", "legacy_ard_ri", "--batch", "99999999999", "--seconds", "0",
             words=["--batch 99999999999"])


def test_eval_games_beyond_the_bound(capsys, tmp_path):
    import yaml

    config = tmp_path / "t.yaml"
    config.write_text(yaml.safe_dump(TOURNAMENT))
    one_line(capsys, "eval", "--config", config, "--out", tmp_path / "out", "--games", "1000000000000",
             words=["--games", "1000000000000"])
    assert not (tmp_path / "out").exists()


def test_train_rollout_beyond_memory(capsys, tmp_path, monkeypatch):
    import tafl_env.memory

    monkeypatch.setattr(tafl_env.memory, "available_bytes", lambda: 2**30)
    text = (ROOT / "configs/train/legacy_ard_ri.yaml").read_text(encoding="utf-8")
    config = tmp_path / "t.yaml"
    config.write_text(text.replace("\nn_steps:", "\n# n_steps:") + "\nn_steps: 10000000\n")
    one_line(capsys, "train", "--config", config, "--out", tmp_path / "out", words=["n_steps", "GiB"])
    assert not (tmp_path / "out").exists()


@pytest.mark.slow      # loads Ray
def test_rllib_checkpoint_of_another_board_is_one_line(capfd):
    checkpoint = ROOT / "results/training/legacy_ard_ri_rllib/final"
    code = main(["play", "historical_tablut", "--vs", f"rllib:{checkpoint}"])
    out, err = capfd.readouterr()
    assert code == 2 and len(err.splitlines()) == 1 and "7x7" in err, err
