"""Every import made inside a function resolves: the module exists and defines the names taken.

Commands import their heavy or optional pieces (torch, Ray, SB3) when they run, so a renamed
module breaks only the command that reaches it, at run time; this reads every such import from
the source (nothing optional is imported) and checks it against the tree.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("tafl_env", "agents")


def _module_file(dotted: str) -> Path | None:
    base = ROOT.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _top_level_names(path: Path) -> set[str]:
    """Names a module defines or imports at its top level (and its subpackages' modules)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    if path.name == "__init__.py":
        names.update(p.stem for p in path.parent.glob("*.py"))
        names.update(p.name for p in path.parent.iterdir() if (p / "__init__.py").is_file())
    return names


def _lazy_imports():
    """(file, line, module, names) of every project import inside a function body."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            here = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            package_of = here if path.name == "__init__.py" else here.rpartition(".")[0]
            for func in ast.walk(tree):
                if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for node in ast.walk(func):
                    if isinstance(node, ast.ImportFrom):
                        if node.level:
                            parts = package_of.split(".")
                            base = ".".join(parts[:len(parts) - node.level + 1])
                            module = f"{base}.{node.module}" if node.module else base
                        else:
                            module = node.module or ""
                        if module.split(".")[0] in PACKAGES:
                            found.append((path, node.lineno, module, [a.name for a in node.names]))
                    elif isinstance(node, ast.Import):
                        for a in node.names:
                            if a.name.split(".")[0] in PACKAGES:
                                found.append((path, node.lineno, a.name, []))
    return found


LAZY = _lazy_imports()


def test_there_are_lazy_imports_to_check():
    assert len(LAZY) > 50


@pytest.mark.parametrize("path, line, module, names", LAZY,
                         ids=[f"{p.relative_to(ROOT)}:{n}" for p, n, _, _ in LAZY])
def test_a_lazy_import_resolves(path, line, module, names):
    where = f"{path.relative_to(ROOT)}:{line}"
    file = _module_file(module)
    assert file is not None, f"{where} imports {module}, which does not exist"
    defined = _top_level_names(file)
    missing = [n for n in names if n != "*" and n not in defined]
    assert not missing, f"{where} imports {missing} from {module}, which does not define them"
