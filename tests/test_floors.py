"""The floors of the package (docs: /work/shared/DESIGN.md, issues 29 and "a house with one room
per idea"): the base modules at the bottom, rbx.core above them, the families rbx.rlhf,
rbx.neural and rbx.data beside each other above it, then the run layer rbx.runs (run files,
configs, experiment, report) and the command line rbx.cli with the package's front door,
rbx/__init__.py, on top. A module imports only modules on its own floor or below, no modules
import each other in a circle, every module has a floor (a new one fails here until it is
given one), no module imports the package itself (`import rbx`: everything), and the benchmarks
use public names only.

Read from the source with `ast` (every import statement, function-level ones included), so
a violation fails here whether or not a test happens to run the line.
"""
import ast
import functools
from pathlib import Path

import pytest

import rbx

PACKAGE = Path(rbx.__file__).parent
BENCHMARKS = PACKAGE.parent / "benchmarks"

# Bottom up. "pkg.*" is the package and every module in it; any other entry is one module.
FLOORS = [
    ("base", ["rbx._checks", "rbx._io", "rbx._version", "rbx.schedules"]),
    ("core", ["rbx.core.*"]),
    ("families", ["rbx.rlhf.*", "rbx.neural.*", "rbx.data.*"]),
    ("run-files", ["rbx.runs", "rbx.runs.rundir", "rbx.runs.checkpoint", "rbx.runs.store"]),
    ("configs", ["rbx.runs.config", "rbx.runs.config_keys", "rbx.runs.demo"]),
    ("experiment", ["rbx.runs.experiment"]),
    ("report", ["rbx.runs.report", "rbx.runs.trace"]),
    ("submit", ["rbx.runs.submit"]),
    ("top", ["rbx", "rbx.cli"]),
]
APART = ["rbx.rlhf", "rbx.neural", "rbx.data"]      # one floor, and none imports another


@functools.cache
def modules() -> dict[str, Path]:
  """Every module of rbx (packages by their name) -> its file."""
  files = {}
  for path in sorted(PACKAGE.rglob("*.py")):
    parts = ("rbx", *path.relative_to(PACKAGE).with_suffix("").parts)
    files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
  return files


def imports_of(source: str, name: str, is_package: bool = False) -> list[tuple[str, bool]]:
  """[(rbx module it imports, whether at module level)] of the module `name` with `source`;
  `from rbx import x` imports rbx.x when that is a module, else rbx itself."""
  package = name if is_package else name.rpartition(".")[0]
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
        for a in child.names:
          found.append((f"{base}.{a.name}" if f"{base}.{a.name}" in modules() else base, top))
      visit(child, top and not isinstance(
          child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

  visit(ast.parse(source), True)
  return [(m, top) for m, top in found if m == "rbx" or m.startswith("rbx.")]


@functools.cache
def imports() -> dict[str, list[tuple[str, bool]]]:
  """module -> [(rbx module it imports, whether at module level)] for every module of rbx."""
  return {name: imports_of(path.read_text(), name, path.name == "__init__.py")
          for name, path in modules().items()}


def floor(module: str) -> int | None:
  """The index in `FLOORS` of `module`'s floor, or None for a module without one."""
  for i, (_, entries) in enumerate(FLOORS):
    for entry in entries:
      if module == entry.removesuffix(".*") or (
          entry.endswith(".*") and module.startswith(entry[:-1])):
        return i
  return None


def _under(module: str, packages) -> bool:
  return any(module == p or module.startswith(p + ".") for p in packages)


def violations(name: str) -> list[str]:
  """"module -> import" for every module on the floor `name` that imports one above it."""
  index = [n for n, _ in FLOORS].index(name)
  return [f"{m} -> {target}" for m, found in imports().items() if floor(m) == index
          for target, _ in found if (floor(target) or 0) > index]


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


def private_names(source: str) -> list[str]:
  """"line: name" for every private name of rbx (`_x`, a module or a name in one; dunders
  aside) that `source` imports or reads as an attribute of an imported rbx module."""
  private = lambda dotted: any(p.startswith("_") and not p.startswith("__")
                               for p in dotted.split("."))
  tree = ast.parse(source)
  bound, found = {}, set()                    # name -> the rbx module it is bound to
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for a in node.names:
        if _under(a.name, ["rbx"]):
          if private(a.name):
            found.add(f"{node.lineno}: {a.name}")
          bound[a.asname] = a.name if a.asname else bound.setdefault("rbx", "rbx")
    elif isinstance(node, ast.ImportFrom) and not node.level and _under(node.module or "", ["rbx"]):
      for a in node.names:
        dotted = f"{node.module}.{a.name}"
        if private(dotted):
          found.add(f"{node.lineno}: {dotted}")
        if dotted in modules():
          bound[a.asname or a.name] = dotted
  for node in ast.walk(tree):
    chain = []
    while isinstance(node, ast.Attribute):
      chain.insert(0, node.attr)
      node = node.value
    if isinstance(node, ast.Name) and node.id in bound and chain:
      module = bound[node.id]
      while len(chain) > 1 and f"{module}.{chain[0]}" in modules():
        module = f"{module}.{chain.pop(0)}"
      if private(chain[0]):
        found.add(f"{node.lineno}: {module}.{chain[0]}")
  return sorted(found)


def test_every_module_has_a_floor():
  assert [m for m in modules() if floor(m) is None] == []
  assert floor("rbx.runs.new") is None and floor("rbx.new") is None     # a new one fails
  assert floor("rbx.core.new") == floor("rbx.core")


@pytest.mark.parametrize("name", [n for n, _ in FLOORS])
def test_no_module_imports_one_above_it(name):
  assert violations(name) == []


def test_the_families_do_not_import_each_other():
  assert [f"{m} -> {t}" for m, found in imports().items() for t, _ in found
          for a in APART for b in APART if a != b and _under(m, [a]) and _under(t, [b])] == []


def test_the_checks_see_function_level_and_from_imports():
  # rbx.cli imports rbx.runs.config inside a function, as `from rbx.runs import config as ...`
  assert ("rbx.runs.config", False) in imports()["rbx.cli"]
  assert ("rbx.core.registry", True) in imports()["rbx.runs.config"]
  assert imports_of("def f():\n  from rbx.runs import report\n", "rbx.core.x") == [
      ("rbx.runs.report", False)]


def test_no_module_imports_the_package_itself():
  assert imports_of("import rbx\nfrom rbx import __version__\n", "rbx.core.x") == [
      ("rbx", True), ("rbx", True)]
  assert [m for m, found in imports().items() if m != "rbx" and any(t == "rbx" for t, _ in found)
          ] == []


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


def test_the_private_name_check_finds_private_names():
  source = ("import rbx\nimport rbx._io\nfrom rbx.core import driver as d, _x\n"
            "from rbx.rlhf import solver\nfrom rbx.rlhf.linear import LINEAR_SOLVER\n"
            "solver._Problem(1).ratios\nd._functions\nrbx.rlhf.solver._ascent_step\n"
            "LINEAR_SOLVER._replace()\nsolver.SolverConfig()._replace()\nrbx.__version__\n")
  assert private_names(source) == [
      "2: rbx._io", "3: rbx.core._x", "6: rbx.rlhf.solver._Problem",
      "7: rbx.core.driver._functions", "8: rbx.rlhf.solver._ascent_step"]


def test_the_benchmarks_use_public_names_only():
  found = {str(path.relative_to(BENCHMARKS)): private_names(path.read_text())
           for path in sorted(BENCHMARKS.rglob("*.py"))}
  assert {path: names for path, names in found.items() if names} == {}


def test_the_benchmark_groups_import_each_other_in_no_circle_nor_the_command_line():
  """benchmarks/: no two groups (throughput, reproduction, ...; a top-level module is a group of
  its own) import each other in a circle, function-level imports included, and no benchmark
  imports `rbx.cli` (one may run `python -m rbx.cli` in a child process, as a user does)."""
  groups, cli = {}, []
  for path in sorted(BENCHMARKS.rglob("*.py")):
    parts = path.relative_to(BENCHMARKS).with_suffix("").parts
    targets = groups.setdefault(parts[0], [])
    for node in ast.walk(ast.parse(path.read_text())):
      if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
      elif isinstance(node, ast.ImportFrom) and node.module:
        names = [f"{node.module}.{a.name}" for a in node.names]
      else:
        continue
      targets += [(n.split(".")[1], True) for n in names
                  if n.startswith("benchmarks.") and n.split(".")[1] != parts[0]]
      cli += [f"{path.relative_to(BENCHMARKS)}: {n}" for n in names
              if n == "rbx.cli" or n.startswith("rbx.cli.")]
  assert circles(groups) == [] and cli == []
