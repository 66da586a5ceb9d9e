"""``tafl train`` and bad inputs: safe loading of the snapshot pool, and every user mistake
(a checkpoint that is garbage, a directory, another variant's, a crafted pool file; an output path
that is a file; an evaluation opponent that cannot be built) stopped before any work with one line
on stderr and exit status 2, through the real command in a subprocess, with nothing written.
Also: what a run leaves behind (no stale final evaluation, progress.csv continued on resume) and
the progress it shows."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow   # every test shares a training run: the slow tier

torch = pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")
yaml = pytest.importorskip("yaml")

from agents.ppo.config import validate_train_config  # noqa: E402
from agents.ppo.run import format_summary, train  # noqa: E402
from agents.ppo.checkpoints import TrainSetupError, check_resume, load_pool  # noqa: E402
from agents.schema import ConfigError  # noqa: E402
from tafl_env import make_rules  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

SMALL = {"variant": "legacy_ard_ri", "total_timesteps": 256, "seed": 5, "selfplay_games": 1,
         "snapshot_games": 1, "greedy_games": 1, "random_games": 1, "n_steps": 32, "batch_size": 64,
         "n_epochs": 1, "channels": 4, "blocks": 1, "value_hidden": 8, "torch_threads": 1,
         "snapshot_every": 64, "eval_every": 128, "eval_games": 1, "final_eval_games": 2,
         "checkpoint_every": 128, "max_turns": 30, "imitation_games": 4, "imitation_epochs": 2,
         "progress_bar": False}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A genuine small run (with the warm start, progress bars on): its directory, checkpoints, stderr."""
    base = tmp_path_factory.mktemp("train_inputs")
    out = base / "run"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        summary = train(validate_train_config({**SMALL, "output_dir": str(out)}), progress=True, command="test")
    ckpts = sorted((out / "checkpoints").glob("step_*.zip"), key=lambda p: int(p.stem.split("_")[1]))
    return {"base": base, "out": out, "ckpts": ckpts, "stderr": err.getvalue(), "summary": summary}


def _config(path: Path, **change) -> Path:
    path.write_text(yaml.safe_dump({**SMALL, **change}))
    return path


def _tafl(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "tafl_env", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def _snapshot(folder: Path) -> dict:
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def _one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("tafl train: error: ")
    assert proc.stdout == ""
    return lines[0]


def _edit_zip_data(src: Path, dst: Path, edit) -> Path:
    """A copy of an SB3 zip whose ``data`` JSON is changed by ``edit(dict)``."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            raw = zin.read(item.filename)
            if item.filename == "data":
                data = json.loads(raw)
                edit(data)
                raw = json.dumps(data).encode()
            zout.writestr(item, raw)
    return dst


class _Payload:
    """Unpickling this runs ``os.system`` (a crafted pool file)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


# --- safe loading ------------------------------------------------------------------------------------

def test_genuine_pool_file_loads_with_weights_only(run):
    for ck in run["ckpts"]:
        saved = torch.load(ck.with_suffix(".pool.pt"), weights_only=True)
        assert saved["pool"] and all(isinstance(v, torch.Tensor) for sd in saved["pool"] for v in sd.values())
        assert saved["trainer"]["rules"]["variant"] == "legacy_ard_ri"
        assert saved["trainer"]["timesteps"] == int(ck.stem.split("_")[1])
    info = check_resume(run["ckpts"][0], make_rules("legacy_ard_ri", max_turns=30))
    assert info["pool"] and info["trainer"]["next_ckpt"] > 0


def test_crafted_pool_file_is_refused_and_its_payload_does_not_run(run, tmp_path):
    marker = tmp_path / "PAYLOAD_RAN"
    ck = tmp_path / "checkpoints" / "step_128.zip"
    ck.parent.mkdir()
    ck.write_bytes(run["ckpts"][0].read_bytes())
    torch.save({"pool": [_Payload(marker)], "trainer": {}}, ck.with_suffix(".pool.pt"))
    with pytest.raises(TrainSetupError, match="refused to load .*nothing in it was run"):
        load_pool(ck.with_suffix(".pool.pt"))
    assert not marker.exists()
    # through the command: one line, exit 2, the payload never runs and nothing is written
    cfg = _config(tmp_path / "c.yaml", output_dir=str(tmp_path / "out"))
    before = _snapshot(tmp_path)
    line = _one_line_error(_tafl("train", "--config", str(cfg), "--resume", str(ck), cwd=tmp_path))
    assert "refused to load" in line and "pool.pt" in line
    assert not marker.exists()
    assert _snapshot(tmp_path) == before


def test_a_pool_file_of_another_shape_is_refused(run, tmp_path):
    bad = tmp_path / "x.pool.pt"
    torch.save({"pool": [{"w": "not a tensor"}], "trainer": {}}, bad)
    with pytest.raises(TrainSetupError, match="not a snapshot pool"):
        load_pool(bad)


# --- mistakes, through the real command ------------------------------------------------------------

def _other_variant(run, tmp_path):
    # same board, same action layout (Brandubh is 7x7 too): only the record tells them apart
    return _edit_zip_data(run["ckpts"][0], tmp_path / "brandubh.zip",
                          lambda d: d["tafl_rules"].update(variant="legacy_brandubh"))


def _older_zip_other_board(run, tmp_path):
    # a zip without the record (older runs) whose spaces are those of a 9x9 variant
    def edit(d):
        d.pop("tafl_rules")
        d["observation_space"]["_shape"] = [9, 9, 14]
        d["action_space"]["n"] = str(9 * 9 * 4 * 8 + 1)
    return _edit_zip_data(run["ckpts"][0], tmp_path / "old9.zip", edit)


def _a_file(run, tmp_path):
    (tmp_path / "afile").write_text("x")
    return tmp_path / "afile"


def _below_a_file(run, tmp_path):
    return _a_file(run, tmp_path) / "sub"


def _garbage(run, tmp_path):
    p = tmp_path / "garbage.zip"
    p.write_bytes(b"this is not a zip file\n" * 10)
    return p


def _not_sb3(run, tmp_path):
    p = tmp_path / "other.zip"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("readme.txt", "hello")
    return p


@pytest.mark.parametrize("make, args, expect", [
    (_garbage, ["--resume", "{x}"], "not a model checkpoint (not a zip file)"),
    (_not_sb3, ["--resume", "{x}"], "not an SB3 model checkpoint"),
    (lambda run, t: run["out"], ["--resume", "{x}"], "is a directory; give a model zip"),
    (lambda run, t: t / "nonexistent.zip", ["--resume", "{x}"], "no such file"),
    (_other_variant, ["--resume", "{x}"], "was trained on legacy_brandubh; this game is legacy_ard_ri"),
    (_older_zip_other_board, ["--resume", "{x}"], "a model for another board"),
    (lambda run, t: run["ckpts"][0], ["--resume", "{x}", "--config-variant", "historical_tablut"],
     "was trained on legacy_ard_ri; this game is historical_tablut"),
    (lambda run, t: run["ckpts"][0], ["--resume", "{x}", "--config-options", "king_armed=false"],
     "legacy_ard_ri with king_armed=True; this game has king_armed=False"),
    (_a_file, ["--out", "{x}"], "is an existing file"),
    (_below_a_file, ["--out", "{x}"], "afile is a file"),
    (lambda run, t: "policy:/missing.zip", ["--opponent", "{x}"], "'policy:/missing.zip': no such file"),
    (lambda run, t: "policy:" + str(run["out"]), ["--opponent", "{x}"], "is a directory"),
    (lambda run, t: "mcts:x", ["--opponent", "{x}"], "field 'eval_opponents': 'mcts:x': mcts simulations must be"),
    (lambda run, t: "policy:" + str(_other_variant(run, t)), ["--opponent", "{x}"],
     "was trained on legacy_brandubh"),
], ids=["garbage-zip", "zip-not-sb3", "directory", "missing", "other-variant-same-board", "older-zip-other-board",
        "config-of-another-variant", "other-rule-options", "out-is-a-file", "out-below-a-file",
        "opponent-missing-model", "opponent-directory", "opponent-bad-spec", "opponent-other-variant"])
def test_train_mistakes_stop_before_any_work(run, tmp_path, make, args, expect):
    x = str(make(run, tmp_path))
    change = {"output_dir": str(tmp_path / "out")}
    cli = []
    it = iter(args)
    for a in it:
        v = next(it).format(x=x)
        if a == "--config-variant":
            change["variant"] = v
            change["max_turns"] = SMALL["max_turns"]
        elif a == "--config-options":
            key, _, val = v.partition("=")
            change["options"] = {key: yaml.safe_load(val)}
        elif a == "--opponent":
            change["eval_opponents"] = ["random", v]
        else:
            cli += [a, v]
    cfg = _config(tmp_path / "c.yaml", **change)
    before, before_run = _snapshot(tmp_path), _snapshot(run["out"])
    line = _one_line_error(_tafl("train", "--config", str(cfg), *cli, cwd=tmp_path))
    assert expect in line
    assert _snapshot(tmp_path) == before            # no command.txt, config.yaml, tb/ ...
    assert _snapshot(run["out"]) == before_run
    assert not (tmp_path / "out").exists()


def test_train_function_raises_config_errors_before_writing(run, tmp_path):
    """The same checks from Python: :class:`TrainSetupError` is a ConfigError naming the input."""
    cfg = validate_train_config({**SMALL, "output_dir": str(tmp_path / "out")})
    with pytest.raises(ConfigError) as err:
        train(cfg, resume=tmp_path / "nonexistent.zip")
    assert err.value.field == "resume"
    with pytest.raises(ConfigError) as err:
        train({**cfg, "eval_opponents": ["policy:/missing.zip"]})
    assert err.value.field == "eval_opponents"
    assert not (tmp_path / "out").exists()


# --- what a run leaves, and what it shows -------------------------------------------------------------

def test_progress_is_shown_for_every_stage(run):
    err = run["stderr"]
    for stage in ("warm start: greedy games", "warm start: fitting", "train legacy_ard_ri", "evaluation at step",
                  "final evaluation"):
        assert stage in err, stage


def test_resume_continues_progress_csv_and_leaves_no_stale_final_eval(run, tmp_path):
    import csv
    import shutil

    out = tmp_path / "run"
    shutil.copytree(run["out"], out)
    assert (out / "final_eval.json").exists()
    first = list(csv.DictReader(open(out / "tb" / "progress.csv")))
    assert [r["imitation/epoch"] for r in first[:2]] == ["1", "2"]
    ck = out / "checkpoints" / run["ckpts"][0].name
    step = int(ck.stem.split("_")[1])
    summary = train(validate_train_config({**SMALL, "output_dir": str(out), "total_timesteps": 384}), resume=ck,
                    final_eval=False, command="resume")
    assert not (out / "final_eval.json").exists()      # the first run's would be stale
    assert "final_eval" not in summary and "no final evaluation" in format_summary(summary)
    rows = list(csv.DictReader(open(out / "tb" / "progress.csv")))

    def step_of(r):
        vals = [float(r[k]) for k in ("time/total_timesteps", "eval/timesteps") if r.get(k)]
        return max(vals) if vals else None

    n = next(i for i, r in enumerate(first) if step_of(r) is not None and step_of(r) > step)
    assert [{k: r[k] for k in first[0]} for r in rows[:n]] == first[:n]     # kept up to the checkpoint
    assert rows[n:] and all(step_of(r) > step for r in rows[n:])             # then continued
    assert step_of(rows[-1]) >= 384
    assert (out / "command.txt").read_text().splitlines() == ["test", "resume"]


def test_fresh_run_into_an_old_directory_removes_its_results(run, tmp_path):
    import shutil

    out = tmp_path / "run"
    shutil.copytree(run["out"], out)
    train(validate_train_config({**SMALL, "output_dir": str(out), "total_timesteps": 64, "imitation_games": 0,
                                 "eval_every": 0, "checkpoint_every": 0}), final_eval=False, command="again")
    for name in ("final_eval.json", "eval.json", "eval.csv", "learning_curve.png"):
        assert not (out / name).exists(), name
    assert len(list((out / "tb").glob("events.out.tfevents.*"))) == 1
