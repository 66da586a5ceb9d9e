"""The quickstart notebook runs top to bottom (nbclient, the python3 kernel of this interpreter), and is
committed with the outputs of a full run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow   # the notebook runs a kernel and trains: the slow tier

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("sb3_contrib")

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "quickstart.ipynb"


def test_quickstart_notebook_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("TAFL_QUICK", "1")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    # the kernel must be this interpreter (the venv), whatever kernelspecs are installed
    from ipykernel.kernelspec import write_kernel_spec

    spec_dir = write_kernel_spec(str(tmp_path / "kernels" / "python3"))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path) + os.pathsep + os.environ.get("JUPYTER_PATH", ""))
    assert Path(spec_dir, "kernel.json").read_text().count(sys.executable) == 1
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=240,
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "legacy_ard_ri" in text and "greedy" in text
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 3          # the board, the final position, the learning curve


def test_committed_notebook_shows_its_outputs():
    """The notebook is committed executed: the repository page shows its text and plots."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert all(cell.get("execution_count") for cell in code), "every code cell executed"
    assert [cell["execution_count"] for cell in code] == list(range(1, len(code) + 1)), "top to bottom, once"
    outputs = [o for cell in code for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert not [o for o in outputs if o.get("name") == "stderr"], "no warnings in the committed outputs"
    assert len([o for o in outputs if "image/png" in o.get("data", {})]) >= 3
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "vs greedy: win rate" in text and "95% interval" in text    # the full run's summary and table
