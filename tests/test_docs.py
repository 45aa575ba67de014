"""The API reference builds with pdoc (the README's command), and every public name has a docstring."""
import importlib
import inspect
import pkgutil
import subprocess
import sys

import pytest

import rbx

# The README's command: pdoc rbx rbx.core rbx.data rbx.runs -o docs/api
# (`rbx` lists only its families in __all__, so the shared layers are named too).
MODULES = ["rbx", "rbx.core", "rbx.data", "rbx.runs"]


def _public(module):
  """(qualified name, object) of the functions, classes, methods and properties a module defines."""
  for name, obj in vars(module).items():
    if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
      continue
    if inspect.isfunction(obj) or inspect.isclass(obj):
      yield f"{module.__name__}.{name}", obj
    if inspect.isclass(obj):
      for attr, member in vars(obj).items():
        member = member.fget if isinstance(member, property) else member
        if not attr.startswith("_") and inspect.isfunction(member):
          yield f"{module.__name__}.{name}.{attr}", member


def test_every_public_name_has_a_docstring():
  modules = [importlib.import_module(m.name) for m in pkgutil.walk_packages(rbx.__path__, "rbx.")]
  missing = [m.__name__ for m in modules if not m.__doc__]
  missing += [name for m in modules for name, obj in _public(m) if not obj.__doc__]
  assert not missing, missing


@pytest.mark.slow
def test_api_reference_builds(tmp_path):
  pytest.importorskip("pdoc", reason="pdoc is in the test and docs extras")
  out = subprocess.run([sys.executable, "-m", "pdoc", *MODULES, "-o", str(tmp_path)],
                       capture_output=True, text=True, timeout=600)
  assert out.returncode == 0, out.stderr[-3000:]
  for page in ("rbx.html", "rbx/rlhf.html", "rbx/neural.html", "rbx/schedules.html",
               "rbx/core/driver.html", "rbx/data.html"):
    assert (tmp_path / page).is_file(), page
  assert "solve_optimistic" in (tmp_path / "rbx" / "rlhf.html").read_text()
