"""The examples of README.md and docs/*.md run as written.

Every fenced block whose info string is ``python`` runs, the blocks of one page in order in one
namespace (a later block may use what an earlier one made), in a fresh working folder. A block
fenced ``python slow`` runs in the slow tier (``pytest -m slow``: a training run, a rating); a
block fenced ``python no-run`` is shown only (an interactive window, a cluster address). A
``bash`` block's lines that start with ``tafl `` are the command line's examples: those of a block
fenced ``bash test`` run through :func:`tafl_env.cli.main` and must exit 0.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```", re.S | re.M)


def blocks(page: Path) -> list[tuple[str, str]]:
    """(info string, code) of every fenced block of ``page``."""
    return [(m.group(1).strip(), m.group(2)) for m in FENCE.finditer(page.read_text(encoding="utf-8"))]


def _page_params(slow: bool):
    out = []
    for page in PAGES:
        infos = [info for info, _ in blocks(page)]
        wanted = "python slow" if slow else "python"
        if wanted in infos or (not slow and "bash test" in infos):
            out.append(pytest.param(page, id=str(page.relative_to(ROOT))))
    return out


def _run_page(page: Path, tmp_path: Path, monkeypatch, kinds: set[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    for n, (info, code) in enumerate(blocks(page)):
        if info in kinds:
            try:
                exec(compile(code, f"{page.name}, block {n}", "exec"), namespace)
            except Exception as exc:  # name the block, not just the line of the exec
                raise AssertionError(f"{page.name} block {n} ({info}) failed: {type(exc).__name__}: {exc}") from exc


@pytest.mark.parametrize("page", _page_params(slow=False))
def test_page_examples_run(page, tmp_path, monkeypatch):
    _run_page(page, tmp_path, monkeypatch, {"python"})
    from tafl_env.cli import main

    for n, (info, code) in enumerate(blocks(page)):
        if info != "bash test":
            continue
        for line in code.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith("tafl "):
                assert main(shlex.split(line)[1:]) == 0, f"{page.name} block {n}: {line}"


@pytest.mark.slow
@pytest.mark.parametrize("page", _page_params(slow=True))
def test_page_slow_examples_run(page, tmp_path, monkeypatch):
    _run_page(page, tmp_path, monkeypatch, {"python", "python slow"})


def test_the_fences_are_known():
    known = {"", "python", "python slow", "python no-run", "bash", "bash test", "text", "console", "yaml", "json", "ini"}
    for page in PAGES:
        for info, _ in blocks(page):
            assert info in known, f"{page.name}: unknown fence {info!r}"
