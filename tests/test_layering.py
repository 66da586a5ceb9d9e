"""Layering: the environment package stands alone; the agents package builds on it and adds its
``tafl`` commands through the ``tafl.commands`` entry-point group. Inside ``agents``, no module
imports itself back through others at import time, and the learning stacks (``ppo``, ``rllib``,
``az``) build on shared modules below them, never the other way round."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TAFL_ENV = ROOT / "tafl_env"
AGENTS = ROOT / "agents"


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


# --- inside agents: no import cycle, stacks over shared modules ---------------------------------------

def _modules(package: Path) -> dict[str, Path]:
    """Dotted name -> file of every module and package under ``package`` (its root's parent is the
    import root)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _import_edges(package: Path) -> list[tuple[str, str, int, bool]]:
    """``(importer, imported, line, top_level)`` for every import of one module of ``package`` by
    another. ``from P import x`` imports module ``P.x`` where that is a module, else ``P`` (a name
    of its ``__init__``); the packages above an imported module are imported too, except those
    that hold the importer (already being imported when it runs). ``top_level``: the import runs
    when the module is imported (not inside a function or class body)."""
    mods = _modules(package)
    edges = []
    for mod, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        here = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        top = {id(n) for n in tree.body}
        top |= {id(n) for stmt in tree.body if isinstance(stmt, (ast.If, ast.Try)) for n in ast.walk(stmt)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module else [])) \
                    if node.level else (node.module or "")
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            for target in targets:
                if target not in mods:
                    continue
                parts = target.split(".")
                for i in range(1, len(parts) + 1):
                    dep = ".".join(parts[:i])
                    if dep != mod and (dep == target or not mod.startswith(dep + ".")):
                        edges.append((mod, dep, node.lineno, id(node) in top))
    return edges


def _cycles(edges) -> list[list[str]]:
    """The import cycles (strongly connected sets of more than one module) of ``edges``."""
    graph: dict[str, set[str]] = {}
    for a, b, *_ in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):                                   # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_agents_have_no_import_cycle():
    """No module of ``agents`` imports, at import time, a module that imports it back (through any
    others): each one can be imported first, on its own."""
    edges = [e for e in _import_edges(AGENTS) if e[3]]
    assert len(edges) > 100
    assert _cycles(edges) == []


def test_the_cycle_scan_sees_a_cycle(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .a import x\n")
    (pkg / "sub" / "a.py").write_text("from ..b import y\nx = 1\n")
    (pkg / "b.py").write_text("import pkg.c\ny = 2\ndef f():\n    from .sub import a\n")
    (pkg / "c.py").write_text("from pkg.sub import a\n")
    edges = _import_edges(pkg)
    assert ("pkg.b", "pkg.sub.a", 4, False) in edges and ("pkg.c", "pkg.sub", 1, True) in edges
    assert _cycles([e for e in edges if e[3]]) == [["pkg.b", "pkg.c", "pkg.sub", "pkg.sub.a"]]


STACKS = {"agents.ppo": (), "agents.rllib": ("agents.ppo",), "agents.az": ()}
"""Each learning stack and the other stacks it may import (RLlib's trainer trains the PPO stack's
network and reuses its warm start and run checks)."""

SHARED = ("agents.base", "agents.spec", "agents.checks", "agents.errors", "agents.schema",
          "agents.train_fields", "agents.model_rules", "agents.weights", "agents.nn", "agents.progress",
          "agents.ray_session", "agents.evaluation.learning_curve")
"""Modules below the stacks, which several of them use."""


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_stacks_build_on_shared_modules_only():
    """Counting the imports inside functions too: a stack imports no other stack (but those it
    may), and no shared module imports a stack."""
    bad = []
    for importer, imported, line, _ in _import_edges(AGENTS):
        target = next((s for s in STACKS if _in(imported, s)), None)
        if target is None:
            continue
        source = next((s for s in STACKS if _in(importer, s)), None)
        if source is not None and target != source and target not in STACKS[source]:
            bad.append(f"{importer}:{line} imports {imported} (stack {source} -> stack {target})")
        if importer in SHARED:
            bad.append(f"{importer}:{line} imports {imported} (a shared module imports a stack)")
    assert bad == []
    assert all(path in _modules(AGENTS) for path in SHARED)
