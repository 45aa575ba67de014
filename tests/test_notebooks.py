"""The notebooks run top to bottom at their smallest scale, and are stored without outputs."""
import json
import os
from pathlib import Path

import pytest
import xla_env

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
# Notebooks whose cells are run-bound (neural training rounds): their kernels run at LLVM's
# level 1 (`xla_env.level_1`), as tests/test_readme.py runs such docs pages, not the suite's
# cheapest code generation (conftest.py), which compiles faster but runs these slower.
RUN_BOUND = {"02_neural_bandits"}


def test_there_are_five_notebooks():
  assert [p.name for p in NOTEBOOKS] == ["01_rlhf_exploration.ipynb", "02_neural_bandits.ipynb",
                                         "03_sweeps_at_scale.ipynb", "04_practical_rlhf.ipynb",
                                         "05_sequences.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_clean(path):
  cells = json.loads(path.read_text())["cells"]
  code = [c for c in cells if c["cell_type"] == "code"]
  assert code and all(c["outputs"] == [] and c["execution_count"] is None for c in code)


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_runs_top_to_bottom(path, monkeypatch):
  nbformat = pytest.importorskip("nbformat", reason="the test extra has nbformat")
  nbclient = pytest.importorskip("nbclient", reason="the test extra has nbclient")
  # The smallest scale: every cell still runs (each size has a floor in the notebook; the
  # propositions' horizons too shorten below SCALE = 1); what is tested is that the notebook
  # runs, not its numbers, which the rlhf and neural tests check. (Notebook 01: 200 s at SCALE = 1, 163 s at 0.1, side by
  # side on a loaded 2-core machine; compiling, not running, is most of it.)
  monkeypatch.setenv("RBX_NOTEBOOK_SCALE", "0.1")
  if path.stem in RUN_BOUND:           # the kernel inherits this process's environment
    monkeypatch.setenv("XLA_FLAGS", xla_env.level_1(os.environ.get("XLA_FLAGS", "")))
  shared = Path(__file__).resolve().parents[2] / "shared" / "datasets"
  if shared.is_dir() and "RBX_DATA_DIR" not in os.environ:   # the real data sets, where present
    monkeypatch.setenv("RBX_DATA_DIR", str(shared))
  nb = nbformat.read(path, as_version=4)
  client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                   resources={"metadata": {"path": str(path.parent)}})
  client.execute()                 # raises CellExecutionError, with the cell and traceback
  errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
  assert not errors
