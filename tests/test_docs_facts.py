"""The facts the documentation states are the code's: README.md's variant table (board, pieces,
action count, observation shape, move cap) and DESIGN.md's layout (every module of ``tafl_env``,
``tafl_env.engine`` and ``agents``, every subpackage and top-level folder, and nothing else)."""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

import tafl_env
from tafl_env import Game, make_rules

ROOT = Path(__file__).resolve().parents[1]


def _variant_rows() -> dict[str, list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## The variants\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and re.fullmatch(r"`\w+`", cells[0]):
            rows[cells[0].strip("`")] = cells
    return rows


def _pieces(variant: str) -> str:
    """The README's spelling of a start layout's pieces: ``king + 11 + knight : 20 + 4 commanders``."""
    count = Counter(c for c in Game(variant).position if c.isalpha())
    defenders = ["king"] * (count["K"] == 1) + [str(count["T"])] + ["knight"] * (count["N"] == 1)
    attackers = [str(count["t"])] + [f"{count['c']} commanders"] * (count["c"] > 0)
    return f"{' + '.join(defenders)} : {' + '.join(attackers)}"


def test_the_readme_lists_every_variant_once():
    assert list(_variant_rows()) == list(tafl_env.VARIANTS)


@pytest.mark.parametrize("variant", tafl_env.VARIANTS)
def test_the_readme_variant_table_is_the_code(variant):
    _, board, pieces, actions, observation, cap, _special = _variant_rows()[variant]
    rules = make_rules(variant)
    env = tafl_env.env(variant)
    n = rules.board_size
    assert board == f"{n}×{n}"
    assert pieces == _pieces(variant)
    assert int(actions.replace(",", "")) == env.action_space("attacker").n == n * n * 4 * (n - 1) + 1
    assert observation == str(env.observation_space("attacker")["observation"].shape)
    assert observation == str(env.observation_space("defender")["observation"].shape)
    assert int(cap) == rules.max_turns


def _layout_entries() -> list[str]:
    """The paths the layout block of DESIGN.md names, folders with a trailing ``/``."""
    text = (ROOT / "DESIGN.md").read_text(encoding="utf-8")
    block = text.split("\n## Layout\n", 1)[1].split("```\n", 2)[1]
    paths, prefix = [], {0: ""}
    for line in block.splitlines()[1:]:           # the first line lists the top-level files
        indent = len(line) - len(line.lstrip())
        if not line.strip() or indent >= 12:       # a description carried over to the next line
            continue
        name = line.split()[0]
        path = prefix[indent // 2] + name
        paths.append(path)
        if name.endswith("/"):
            prefix[indent // 2 + 1] = path
    return paths


def _tree() -> set[str]:
    """Every tracked top-level folder, and every module and subpackage of the three packages."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    found = {line.split("/", 1)[0] + "/" for line in tracked.stdout.splitlines() if "/" in line}
    found = {f for f in found if not f.startswith(".")}
    for package in ("tafl_env", "tafl_env/engine", "agents"):
        for p in (ROOT / package).iterdir():
            if p.suffix == ".py" and p.name != "__init__.py":
                found.add(f"{package}/{p.name}")
            elif p.is_dir() and (p / "__init__.py").exists():
                found.add(f"{package}/{p.name}/")
    return found


def test_the_design_layout_is_the_tree():
    listed = set(_layout_entries())
    tree = _tree()
    assert sorted(tree - listed) == [], "in the tree, missing from DESIGN.md's layout"
    assert sorted(listed - tree) == [], "in DESIGN.md's layout, missing from the tree"
