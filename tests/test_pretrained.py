"""The trained policies shipped with the package (agents/pretrained): ``policy:<variant>`` loads
each one, it plays only legal moves of its own variant and refuses any other, and the models are
inside a built wheel (package data), so an installed copy has them too."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from agents import make_agent  # noqa: E402
from agents.base import AgentSpecError  # noqa: E402
from agents.evaluation.play import play_games  # noqa: E402
from agents.pretrained import shipped_policies  # noqa: E402
from tafl_env.engine import Engine  # noqa: E402
from tafl_env.rules import VARIANTS, make_rules  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted(shipped_policies())


@pytest.mark.parametrize("variant", SHIPPED)
def test_shipped_policy_loads_by_variant_and_plays_legal_moves(variant):
    agent = make_agent(f"policy:{variant}", seed=0)
    assert agent.name == f"policy:{variant}"
    rules = make_rules(variant)
    assert agent.check_rules(rules) is None                       # it records its own rules
    other = next(v for v in VARIANTS if v != variant)
    with pytest.raises(AgentSpecError):
        agent.check_rules(make_rules(other))
    eng = Engine(rules)
    state = eng.initial_state(4)
    rng = np.random.default_rng(1)
    for _ in range(30):                                           # legal in many positions
        acts = agent.act(eng, state)
        mask = eng.legal_action_mask(state)
        running = ~state.done
        assert mask[np.flatnonzero(running), acts[running]].all()
        eng.step(state, np.where(running, acts, 0))
        eng.step(state, np.where(state.done, 0, eng.random_actions(state, rng)))
    games = play_games(variant, agent, make_agent("random", seed=2), 4, seed=3)
    assert len(games) == 4


def test_every_variant_has_a_shipped_policy():
    assert SHIPPED == sorted(VARIANTS)


def test_a_variant_without_a_shipped_policy_says_which_have_one(tmp_path, monkeypatch):
    """With every variant shipped, a package folder holding only some models stands in."""
    import agents.pretrained as pretrained

    keep = SHIPPED[0]
    shutil.copy(pretrained.HERE / f"{keep}.zip", tmp_path / f"{keep}.zip")
    monkeypatch.setattr(pretrained, "HERE", tmp_path)
    missing = next(v for v in VARIANTS if v != keep)
    with pytest.raises(AgentSpecError, match="no trained policy is shipped") as err:
        make_agent(f"policy:{missing}")
    assert f"(shipped: {keep})" in str(err.value) and f"configs/train/{missing}.yaml" in str(err.value)


@pytest.mark.slow   # builds a wheel
def test_a_wheel_carries_the_shipped_models(tmp_path):
    """Build a wheel from a copy of the sources and install it elsewhere: ``policy:<variant>``
    finds its model in the installed package."""
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc")
    for name in ("tafl_env", "agents"):
        shutil.copytree(ROOT / name, src / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(wheels), str(src)], check=True, capture_output=True, timeout=300)
    (wheel,) = wheels.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for variant in SHIPPED:
        assert f"agents/pretrained/{variant}.zip" in names
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site),
                    str(wheel)], check=True, capture_output=True, timeout=300)
    probe = ("import agents.pretrained as p, sys; "
             "assert p.__file__.startswith(sys.argv[1]), p.__file__; "
             "print(' '.join(sorted(p.shipped_policies())))")
    out = subprocess.run([sys.executable, "-c", probe, str(site)], cwd=tmp_path, check=True,
                         capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert out.stdout.split() == SHIPPED
