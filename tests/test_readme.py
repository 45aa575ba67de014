"""Every command of the README runs, and the docs pages' Python examples run as written.

README bash lines: `pip install X` must name extras that pyproject declares (installing is
what `.ci/run` does), `rbx demo` runs in process, `pytest` is this suite and `pdoc` is
`test_docs.test_api_reference_builds`; the figure's `python docs/figure.py` runs at a small
scale.
"""
import os
import re
import shlex
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
import xla_env


ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "datasets"
README = (ROOT / "README.md").read_text()
PAGES = sorted((ROOT / "docs").glob("*.md"))
# Pages whose examples are run-bound (many steps of solver or optimiser rounds): they run at
# LLVM's level 1 (`xla_env.level_1`), not the suite's cheapest code generation (conftest.py),
# which compiles faster but runs these 1.2-1.3x slower overall (at the defaults: linear_rlhf.md
# 137 s against 178 s, practical_rlhf.md 128 s against 158 s, on a loaded 2-core machine).
RUN_BOUND = {"algorithms.md", "linear_rlhf.md", "practical_rlhf.md"}


def _blocks(text: str, lang: str) -> list[str]:
  """The `lang` code blocks of `text`, those indented in a list item dedented."""
  return [textwrap.dedent(b) for b in re.findall(rf"```{lang}\n(.*?)```", text, re.S)]


def _commands(text: str) -> list[list[str]]:
  """Every command of the bash blocks, `a && b` split, comments dropped."""
  out = []
  for block in _blocks(text, "bash"):
    for line in block.splitlines():
      line = line.split(" #")[0].strip()
      for part in filter(None, (p.strip() for p in line.split("&&"))):
        out.append(shlex.split(part))
  return out


def test_readme_names_the_quickstart_and_every_command_is_known():
  extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
  commands = _commands(README)
  assert ["pip", "install", "."] in commands and ["rbx", "demo"] in commands
  assert ["python", "-m", "pytest", "-q"] in commands
  ci = (ROOT / ".ci" / "run").read_text()
  command = "pip install '.[test,duelpy]' && python -m pytest -q"   # README's = CI's
  assert command in ci and command in README
  for cmd in commands:
    if cmd[:2] == ["pip", "install"]:
      for target in (a for a in cmd[2:] if a.startswith(".")):
        names = re.findall(r"\[(.*)\]", target)
        for extra in (names[0].split(",") if names else []):
          assert extra in extras, f"README installs the extra {extra!r}, pyproject lacks it"
    else:
      assert cmd[0] in {"pip", "rbx", "python", "pdoc"}, cmd


def test_readme_hello_world_runs(capsys):
  (code,) = _blocks(README, "python")
  exec(compile(code, "README.md", "exec"), {})
  lines = capsys.readouterr().out.splitlines()
  assert [line.split(":")[0].strip() for line in lines] == ["algorithm1", "xpo"]
  assert all("95% CI" in line for line in lines)


def test_readme_figure_command_runs(tmp_path):
  assert "`python docs/figure.py`" in README
  out = subprocess.run([sys.executable, str(ROOT / "docs" / "figure.py"), "--seeds", "4",
                        "--steps", "20", "--out", str(tmp_path / "fig.png")],
                       capture_output=True, text=True, timeout=600)
  assert out.returncode == 0, out.stderr[-2000:]
  assert (tmp_path / "fig.png").stat().st_size > 10_000
  assert (ROOT / "docs" / "images" / "example2.png").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_docs_python_examples_run(page, tmp_path):
  code = "\n".join(_blocks(page.read_text(), "python"))
  if not code:
    pytest.skip("no Python example")
  if "data.load(" in code and not SHARED_DATA.is_dir():
    pytest.skip("the shared data sets are not here")
  env = {**os.environ, "RBX_DATA_DIR": str(SHARED_DATA)}
  if page.name in RUN_BOUND:
    env["XLA_FLAGS"] = xla_env.level_1(env.get("XLA_FLAGS", ""))
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=900, env=env, cwd=tmp_path)
  assert out.returncode == 0, out.stderr[-3000:]
