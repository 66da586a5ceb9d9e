"""User mistakes and missing extras, through the real ``tafl`` command in a subprocess:
each stops before any work with exit status 2 and exactly one line on stderr, no traceback, and
writes nothing."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow   # the real tafl in a subprocess, torch imported in many: the slow tier

from agents.model_rules import MODEL_INFO
from agents.ppo.policy import stamp_model
from tafl_env.rules import make_rules

ROOT = Path(__file__).resolve().parents[1]
TAFL = Path(sys.executable).with_name("tafl")
ARD_RI_MODEL = ROOT / "agents" / "pretrained" / "legacy_ard_ri.zip"
TABLUT_MODEL = ROOT / "agents" / "pretrained" / "historical_tablut.zip"
ARD_RI_CONFIG = ROOT / "configs" / "tournaments" / "legacy_ard_ri.yaml"
TRAIN_CONFIG = ROOT / "configs" / "train" / "legacy_ard_ri.yaml"
TRAINING_STACK = ("torch", "stable_baselines3", "sb3_contrib", "tensorboard")

BLOCKER = """\
import os, sys
for _name in filter(None, os.environ.get("TAFL_TEST_BLOCK", "").split(",")):
    sys.modules[_name] = None   # 'import _name' now fails as if the package were not installed
"""


def tafl(*argv, cwd: Path, block=(), input: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the installed ``tafl`` script; ``block`` names modules to make unimportable."""
    env = dict(os.environ)
    if block:
        site = cwd.parent / f"{cwd.name}_site"
        site.mkdir(exist_ok=True)
        (site / "sitecustomize.py").write_text(BLOCKER)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
        env["TAFL_TEST_BLOCK"] = ",".join(block)
    return subprocess.run([str(TAFL), *map(str, argv)], cwd=cwd, env=env, input=input or "",
                          capture_output=True, text=True, timeout=timeout)


def tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def one_line_error(proc: subprocess.CompletedProcess, *words: str) -> str:
    """Assert exit status 2 and exactly one stderr line without a traceback; return that line."""
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


@pytest.fixture
def work(tmp_path) -> Path:
    """An empty working directory (the command's cwd), to see that nothing is written."""
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def small_config(folder: Path, agents: dict[str, str], **extra) -> Path:
    body = {"variant": "legacy_ard_ri", "agents": agents, "games_per_pair": 2, "max_turns": 30,
            "bootstrap": 10, **extra}
    path = folder.parent / "small.yaml"
    path.write_text(json.dumps(body))   # JSON is YAML
    return path


def test_the_tafl_script_is_installed():
    assert TAFL.exists(), f"no {TAFL}: install the package (pip install -e .)"


# --- extras (item 1) ----------------------------------------------------------------------------------

@pytest.mark.parametrize("module", ["yaml", "tqdm", "matplotlib"])
def test_eval_without_the_eval_extra(work, module):
    proc = tafl("eval", "--config", ARD_RI_CONFIG, cwd=work, block=[module])
    one_line_error(proc, "tafl eval", "tafl-env[eval]")
    assert tree(work) == []


def test_train_without_the_train_extra(work):
    for module in ("yaml", "torch", "sb3_contrib"):
        proc = tafl("train", "--config", TRAIN_CONFIG, "--out", work / "run", cwd=work, block=[module])
        one_line_error(proc, "tafl train", "tafl-env[train]")
        assert tree(work) == []


def test_policy_agent_without_the_train_extra(work):
    proc = tafl("play", "legacy_ard_ri", "--vs", f"policy:{ARD_RI_MODEL}", cwd=work, block=["sb3_contrib"])
    one_line_error(proc, "policy", "tafl-env[train]")
    cfg = small_config(work, {"random": "random", "ppo": f"policy:{ARD_RI_MODEL}"})
    proc = tafl("eval", "--config", cfg, "--no-progress", cwd=work, block=["torch"])
    one_line_error(proc, "tafl-env[train]")
    assert tree(work) == []


def test_a_tournament_of_search_agents_needs_no_torch(work):
    cfg = small_config(work, {"random": "random", "greedy": "greedy", "mcts": "mcts:4"})
    proc = tafl("eval", "--config", cfg, "--no-progress", "--json", "--out", work / "out", cwd=work,
                block=TRAINING_STACK)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["games"] == 6 and (work / "out" / "results.json").is_file()


def test_human_render_mode_without_pygame(work):
    code = ("import tafl_env\n"
            "from tafl_env.extras import MissingExtraError\n"
            "env = tafl_env.env('legacy_ard_ri', render_mode='human')\n"
            "try:\n    env.reset()\nexcept MissingExtraError as exc:\n    print('MISSING', exc)\n")
    env = dict(os.environ, PYTHONPATH=str(work), TAFL_TEST_BLOCK="pygame")
    (work / "sitecustomize.py").write_text(BLOCKER)
    proc = subprocess.run([sys.executable, "-c", code], cwd=work, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("MISSING")]
    assert "pygame" in line and "tafl-env[render]" in line


# --- tafl play (item 3) -------------------------------------------------------------------------------

def _interrupt(argv, wait_for: str, cwd: Path, delay: float = 0.0) -> subprocess.CompletedProcess:
    # The child gets Ctrl-C's default handling back: a test run started in the background of a
    # non-interactive shell (`cmd &`) inherits SIGINT ignored, and Python then never raises
    # KeyboardInterrupt (the play would end at end of input instead).
    proc = subprocess.Popen([str(TAFL), *argv], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen = ""
    deadline = time.monotonic() + 60
    while wait_for not in seen and time.monotonic() < deadline:
        chunk = proc.stdout.read1(4096) if hasattr(proc.stdout, "read1") else proc.stdout.read(1)
        if not chunk:
            break
        seen += chunk
    assert wait_for in seen, seen
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, seen + out, err)


def test_play_ctrl_c_at_the_prompt(work):
    # Ard Ri: the defenders move first, so the person (defenders) is asked at once
    proc = _interrupt(["play", "legacy_ard_ri", "--vs", "random", "--side", "defender"], "your move", work)
    one_line_error(proc, "tafl play", "interrupted")


def test_play_ctrl_c_while_the_agent_thinks(work):
    # Tablut: the attackers (the agent) move first and think for a long time
    proc = _interrupt(["play", "historical_tablut", "--vs", "mcts:100000", "--side", "defender"],
                      "Type 'help'", work, delay=1.0)
    one_line_error(proc, "tafl play", "interrupted")
    assert "plays" not in proc.stdout


def test_play_policy_path_mistakes(work, tmp_path):
    line = one_line_error(tafl("play", "legacy_ard_ri", "--vs", "policy:/nonexistent.zip", cwd=work),
                          "/nonexistent.zip", "no such file")
    assert ".zip.zip" not in line
    one_line_error(tafl("play", "legacy_ard_ri", "--vs", f"policy:{ARD_RI_MODEL.parent}", cwd=work),
                   "is a directory", "legacy_ard_ri.zip")
    garbage = tmp_path / "garbage.zip"
    garbage.write_bytes(b"not a zip at all")
    one_line_error(tafl("play", "legacy_ard_ri", "--vs", f"policy:{garbage}", cwd=work), "not a model zip")
    one_line_error(tafl("play", "legacy_ard_ri", "--vs", "random:5", cwd=work), "takes no argument")
    one_line_error(tafl("play", "legacy_ard_ri", "--vs", "greedy:x", cwd=work), "takes no argument")
    assert tree(work) == []


def _without_rules_record(model: Path, out: Path) -> None:
    """A copy of ``model`` as models were saved before they recorded their rules."""
    with zipfile.ZipFile(model) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "data":
                fields = json.loads(data)
                fields.pop(MODEL_INFO)
                data = json.dumps(fields).encode()
            dst.writestr(item, data)


def test_play_refuses_a_policy_of_another_variant(work, tmp_path):
    # the shipped Tablut model records historical_tablut
    line = one_line_error(tafl("play", "legacy_tablut", "--vs", f"policy:{TABLUT_MODEL}", cwd=work),
                          "historical_tablut", "legacy_tablut")
    assert "king_armed" in line
    one_line_error(tafl("play", "legacy_ard_ri", "--vs", f"policy:{TABLUT_MODEL}", cwd=work), "9x9", "7x7")
    # a model stamped at save time carries its variant and rule options inside the zip
    stamped = tmp_path / "stamped" / "model.zip"
    stamped.parent.mkdir()
    shutil.copy(TABLUT_MODEL, stamped)
    stamp_model(stamped, make_rules("historical_tablut", repetition="draw"))
    one_line_error(tafl("play", "historical_tablut", "--vs", f"policy:{stamped}", cwd=work),
                   "repetition='draw'", MODEL_INFO)
    proc = tafl("play", "historical_tablut", "--vs", f"policy:{stamped}", "-o", "repetition=draw",
                cwd=work, input="quit\n")
    assert proc.returncode == 0 and "you left the game" in proc.stdout, proc.stderr
    # an older model with nothing beside it: the board size is checked, and the player is told so
    bare = tmp_path / "bare.zip"
    _without_rules_record(TABLUT_MODEL, bare)
    proc = tafl("play", "legacy_tablut", "--vs", f"policy:{bare}", cwd=work, input="quit\n")
    assert proc.returncode == 0, proc.stderr
    assert "records no variant" in proc.stdout and "only its board size" in proc.stdout
    assert tree(work) == []


# --- non-UTF-8 input (item 3) ------------------------------------------------------------------------

def test_replay_of_non_utf8_input(work, tmp_path):
    bad = tmp_path / "moves.txt"
    bad.write_bytes(b"e2-c2\n\xff\xfe e8-c8\n")
    one_line_error(tafl("replay", "historical_tablut", "--file", bad, cwd=work), "not UTF-8", "moves.txt")
    proc = subprocess.run([str(TAFL), "replay", "historical_tablut", "--file", "-"], cwd=work,
                          input=bad.read_bytes(), capture_output=True, timeout=60)
    proc = subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())
    one_line_error(proc, "not UTF-8", "<stdin>")


def test_eval_of_a_non_utf8_config(work, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(ARD_RI_CONFIG.read_bytes() + b"# \xff\n")
    one_line_error(tafl("eval", "--config", bad, cwd=work), "not UTF-8", "bad.yaml")
    assert tree(work) == []


# --- tafl eval output and overrides (items 3 and 5) ------------------------------------------------------

def test_eval_output_mistakes_stop_before_playing(work, tmp_path):
    cfg = small_config(work, {"a": "random", "b": "random"})
    afile = tmp_path / "afile"
    afile.write_text("keep me")
    one_line_error(tafl("eval", "--config", cfg, "--out", afile, cwd=work), "existing file")
    one_line_error(tafl("eval", "--config", cfg, "--out", afile / "sub", cwd=work), "is a file")
    one_line_error(tafl("eval", "--config", cfg, "--out", "", cwd=work), "--out", "empty")
    one_line_error(tafl("eval", "--config", cfg, "--seed", "-1", cwd=work), "--seed", "from 0", "-1")
    one_line_error(tafl("eval", "--config", cfg, "--games", "3", cwd=work), "--games", "even")
    one_line_error(tafl("eval", "--config", cfg, "--agents", "a", "zed", cwd=work), "--agents", "zed")
    assert afile.read_text() == "keep me"
    assert tree(work) == []


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes anywhere")
def test_eval_to_an_unwritable_folder(work, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        cfg = small_config(work, {"a": "random", "b": "random"})
        one_line_error(tafl("eval", "--config", cfg, "--out", locked / "out", cwd=work), "cannot")
    finally:
        locked.chmod(0o700)


def test_eval_leaves_the_recorded_results_alone(work):
    # the shipped config names results/tournaments/legacy_ard_ri, relative to the working directory
    recorded = work / "results" / "tournaments" / "legacy_ard_ri"
    recorded.mkdir(parents=True)
    shutil.copy(ROOT / "results" / "tournaments" / "legacy_ard_ri" / "results.json", recorded)
    before = (recorded / "results.json").read_bytes()
    proc = tafl("eval", "--config", ARD_RI_CONFIG, "--games", "2", "--agents", "random", "greedy",
                "--no-progress", cwd=work)
    assert proc.returncode == 0, proc.stderr
    runs = list((work / "runs" / "tournaments" / "legacy_ard_ri").iterdir())
    assert len(runs) == 1 and (runs[0] / "results.json").is_file() and (runs[0] / "records").is_dir()
    assert f"results written to {runs[0].relative_to(work)}" in proc.stdout
    assert tree(recorded) == ["results.json"] and (recorded / "results.json").read_bytes() == before
    # --out alone means the config's output_dir: it holds results, so only --overwrite writes there
    one_line_error(tafl("eval", "--config", ARD_RI_CONFIG, "--out", "--games", "2", "--agents", "random",
                        "greedy", "--no-progress", cwd=work), "already holds results", "--overwrite")
    assert (recorded / "results.json").read_bytes() == before
    proc = tafl("eval", "--config", ARD_RI_CONFIG, "--out", "--overwrite", "--games", "2", "--agents",
                "random", "greedy", "--no-progress", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert (recorded / "results.json").read_bytes() != before
    assert f"results written to {recorded.relative_to(work)}" in proc.stdout


def test_save_policy_records_the_rules_like_a_training_run(tmp_path):
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from agents.base import AgentSpecError
    from agents.ppo.policy import PolicyAgent, read_model_info, save_policy

    model = MaskablePPO.load(str(TABLUT_MODEL), device="cpu")
    path = save_policy(model, tmp_path / "saved", make_rules("historical_tablut"))
    assert path == tmp_path / "saved.zip" and path.is_file()
    info, source = read_model_info(path)
    assert info["variant"] == "historical_tablut" and MODEL_INFO in source
    agent = PolicyAgent(path)
    assert agent.check_rules(make_rules("historical_tablut", max_turns=50)) is None   # the cap is free
    with pytest.raises(AgentSpecError, match="repetition"):
        agent.check_rules(make_rules("historical_tablut", repetition="draw"))
    assert MaskablePPO.load(str(path), device="cpu").tafl_rules == info           # SB3 restores it
