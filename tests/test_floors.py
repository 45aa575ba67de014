"""The floors of the package (docs: /work/shared/DESIGN.md, issue 29): rbx.core at the bottom,
the families rbx.rlhf and rbx.neural above it, rbx.config, then rbx.experiment and
rbx.report (run directories), and rbx.cli on top. A module imports only modules on its own
floor or below, and no modules import each other in a circle.

Read from the source with `ast` (every import statement, function-level ones included), so
a violation fails here whether or not a test happens to run the line.
"""
import ast
import functools
from pathlib import Path

import pytest

import rbx

PACKAGE = Path(rbx.__file__).parent


@functools.cache
def imports() -> dict[str, list[tuple[str, bool]]]:
  """module -> [(rbx module it imports, whether at module level)] for every module of rbx."""
  files = {}
  for path in sorted(PACKAGE.rglob("*.py")):
    parts = ("rbx", *path.relative_to(PACKAGE).with_suffix("").parts)
    files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
  out = {}
  for name, path in files.items():
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []

    def visit(node, top):
      for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import):
          found.extend((a.name, top) for a in child.names)
        elif isinstance(child, ast.ImportFrom):
          base = child.module or ""
          if child.level:                       # relative: from the module's package
            anchor = package.split(".")[:len(package.split(".")) - child.level + 1]
            base = ".".join(anchor + ([base] if base else []))
          for a in child.names:                 # `from rbx import config` imports rbx.config
            found.append((f"{base}.{a.name}" if f"{base}.{a.name}" in files else base, top))
        visit(child, top and not isinstance(
            child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, True)
    out[name] = [(m, top) for m, top in found if m == "rbx" or m.startswith("rbx.")]
  return out


def _under(module: str, packages) -> bool:
  return any(module == p or module.startswith(p + ".") for p in packages)


def violations(floor: str, above) -> list[str]:
  """"module -> import" for every module of `floor` that imports one of `above`."""
  return [f"{m} -> {target}" for m, found in imports().items() if _under(m, [floor])
          for target, _ in found if _under(target, above)]


def circles(found: dict[str, list[tuple[str, bool]]], function_level: bool = False
            ) -> list[list[str]]:
  """The modules that import each other in a circle (the strongly connected components of
  more than one module), sorted; module-level imports only unless `function_level`."""
  graph = {m: {t for t, top in targets if (top or function_level) and t in found}
           for m, targets in found.items()}
  reach = {}
  for m in graph:
    seen, todo = set(), list(graph[m])
    while todo:
      t = todo.pop()
      if t not in seen:
        seen.add(t)
        todo += graph[t]
    reach[m] = seen
  components = {tuple(sorted({m} | {t for t in reach[m] if m in reach[t]})) for m in graph}
  return sorted(list(c) for c in components if len(c) > 1)


UPPER = ["rbx.config", "rbx.experiment", "rbx.report", "rbx.cli"]
FLOORS = [
    pytest.param("rbx.core", UPPER + ["rbx.rlhf", "rbx.neural", "rbx.data", "rbx.demo"],
                 id="core-below-everything"),
    pytest.param("rbx.rlhf", UPPER + ["rbx.neural", "rbx.data", "rbx.demo"], id="rlhf"),
    pytest.param("rbx.neural", UPPER + ["rbx.rlhf", "rbx.demo"], id="neural"),
    pytest.param("rbx.neural", ["rbx.data"], id="neural-without-data"),
    pytest.param("rbx.config", ["rbx.experiment", "rbx.report", "rbx.cli"], id="config"),
    pytest.param("rbx.experiment", ["rbx.report", "rbx.cli"], id="experiment"),
    pytest.param("rbx.report", ["rbx.cli"], id="report"),
]


@pytest.mark.parametrize("floor, above", FLOORS)
def test_no_module_imports_one_above_it(floor, above):
  assert violations(floor, above) == []


def test_the_checks_see_function_level_and_from_imports():
  # rbx.cli imports rbx.config inside a function, as `from rbx import config as config_lib`
  assert "rbx.cli -> rbx.config" in violations("rbx.cli", ["rbx.config"])
  assert ("rbx.config", False) in imports()["rbx.cli"]
  assert ("rbx.core.registry", True) in imports()["rbx.config"]


def test_the_circle_check_finds_a_circle():
  found = {"rbx.a": [("rbx.b", True)], "rbx.b": [("rbx.c", True)], "rbx.c": [("rbx.a", False)],
           "rbx.d": [("rbx.a", True)]}
  assert circles(found) == []
  assert circles(found, function_level=True) == [["rbx.a", "rbx.b", "rbx.c"]]


@pytest.mark.parametrize("data", [
    pytest.param(False, id="outside-rbx-data"),
    pytest.param(True, id="rbx-data"),
])
def test_no_modules_import_each_other_in_a_circle(data):
  found = [c for c in circles(imports(), function_level=True)
           if all(_under(m, ["rbx.data"]) for m in c) == data]
  assert found == []
