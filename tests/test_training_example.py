"""The Python training example of docs/training.md (section "Training from Python") stays quick and
shows progress: its sizes are checked (64 envs x SB3's default n_steps=2048 would run for a quarter
of an hour without a line of output), and its code runs as written at the size of one PPO update.
Its full length runs in the slow tier (tests/test_docs.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")

PAGE = Path(__file__).resolve().parents[1] / "docs" / "training.md"


def _example() -> str:
    text = PAGE.read_text()
    section = text.split("\n## Training from Python", 1)[1].split("\n## ", 1)[0]
    blocks = [b for b in re.findall(r"```python(?: slow)?\n(.*?)```", section, re.S) if "MaskablePPO(" in b]
    assert len(blocks) == 1, "one Python MaskablePPO example in 'Training from Python'"
    return blocks[0]


def _calls(code: str) -> dict[str, ast.Call]:
    out = {}
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call):
            f = node.func
            out[f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")] = node
    return out


def _kw(call: ast.Call, name: str):
    for k in call.keywords:
        if k.arg == name:
            return ast.literal_eval(k.value)
    return None


def test_example_sizes_fit_about_a_minute():
    calls = _calls(_example())
    envs = _kw(calls["TaflSB3VecEnv"], "num_envs")
    ppo = calls["MaskablePPO"]
    n_steps = _kw(ppo, "n_steps")
    total = ast.literal_eval(calls["learn"].args[0]) if calls["learn"].args else _kw(calls["learn"], "total_timesteps")
    assert n_steps is not None, "n_steps must be set: SB3's default 2048 per env is far too long a rollout here"
    assert envs * n_steps <= 2048, "an update (and a line of output) at least every 2,048 steps"
    assert total <= 20_000, "about a minute at ~200 steps/s on a 2-core CPU"
    assert total >= 4 * envs * n_steps, "a few updates, so there is something to see"
    assert _kw(ppo, "verbose") == 1 or _kw(calls["learn"], "progress_bar") is True, "visible progress"
    assert _kw(ppo, "batch_size") <= envs * n_steps


@pytest.mark.slow   # a PPO update: training runs are the slow tier's
def test_example_runs(tmp_path, monkeypatch, capsys):
    """The example as written, trained for one update instead of its full length."""
    code = _example()
    calls = _calls(code)
    one_update = _kw(calls["TaflSB3VecEnv"], "num_envs") * _kw(calls["MaskablePPO"], "n_steps")
    short, n = re.subn(r"model\.learn\(\s*[\d_]+", f"model.learn({one_update}", code)
    assert n == 1
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))    # SB3's default logger makes a folder there
    exec(compile(short, "docs/training.md (Training from Python)", "exec"), {"__name__": "__docs_training__"})
    out = capsys.readouterr().out
    assert "total_timesteps" in out and "fps" in out      # the progress table (verbose=1)
    saved = list(tmp_path.glob("*.zip"))
    assert len(saved) == 1
    from sb3_contrib import MaskablePPO

    assert MaskablePPO.load(saved[0], device="cpu").num_timesteps == one_update
