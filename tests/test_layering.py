"""Layering: the environment package stands alone; the agents package builds on it and adds its
``tafl`` commands through the ``tafl.commands`` entry-point group."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TAFL_ENV = ROOT / "tafl_env"


def _imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in a file, and of every string handed to an import function."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call):
            name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            if name in ("import_module", "__import__") and node.args \
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                found.append((node.lineno, node.args[0].value))
    return found


def test_tafl_env_never_imports_agents():
    files = sorted(TAFL_ENV.rglob("*.py"))
    assert len(files) > 10
    bad = [f"{path.relative_to(ROOT)}:{line} imports {module}"
           for path in files for line, module in _imports_of(path)
           if module == "agents" or module.startswith("agents.")]
    assert bad == []


def test_the_import_scan_sees_every_form(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import agents\nfrom agents.evaluation.play import x\nimport importlib\n"
                     "def f():\n    import agents.cli as c\n    importlib.import_module('agents.cli')\n")
    assert [m for _, m in _imports_of(probe)] == ["agents", "agents.evaluation.play", "importlib", "agents.cli",
                                                  "agents.cli"]


def test_agent_commands_come_from_entry_points():
    from tafl_env.cli import BUILTIN_COMMANDS, add_on_commands

    eps = add_on_commands()
    assert {"eval", "play", "train"} <= set(eps), "reinstall the package (pip install -e .) for its entry points"
    assert all(eps[name].value.startswith("agents.") for name in ("eval", "play", "train"))
    assert not set(eps) & set(BUILTIN_COMMANDS)


def test_rule_commands_load_no_add_on():
    code = ("import sys\nfrom tafl_env.cli import main\n"
            "assert main(['variants', '--json']) == 0\n"
            "assert main(['moves', 'legacy_ard_ri']) == 0\n"
            "assert not [m for m in sys.modules if m == 'agents' or m.startswith('agents.')], 'agents imported'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("argv,words", [
    (["--help"], ["eval", "play", "train", "variants"]),
    (["eval", "--help"], ["--config"]),
    (["play", "--help"], ["--vs"]),
    (["train", "--help"], ["--resume"]),
])
def test_the_real_command_lists_and_runs_the_agent_commands(argv, words):
    proc = subprocess.run([sys.executable, "-m", "tafl_env", *argv], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    for word in words:
        assert word in proc.stdout


def test_import_tafl_env_loads_numpy_and_the_package_only():
    """DESIGN.md: ``import tafl_env`` loads numpy and the package itself; the engine (numba, which
    loads scipy, yaml and LLVM) comes with the first game or environment."""
    code = ("import sys\nbefore = set(sys.modules)\nimport tafl_env\n"
            "new = {m.split('.')[0] for m in set(sys.modules) - before}\n"
            "print(sorted(new - {'tafl_env', 'numpy'} - set(sys.stdlib_module_names)))\n"
            "from tafl_env import Game\nassert Game('legacy_ard_ri').legal_moves()\n"
            "assert 'numba' in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[0] == "[]", proc.stdout
