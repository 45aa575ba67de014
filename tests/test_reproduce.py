"""benchmarks/reproduction/reproduce.py: sections saved one by one, the report assembled from them."""
import sys

import pytest

reproduce = pytest.importorskip("benchmarks.reproduction.reproduce")
from benchmarks.reproduction.common import Context, Figures  # noqa: E402


def test_the_report_keeps_every_saved_section_in_order_with_its_finding_and_stamp(tmp_path):
  figdir = Figures(tmp_path, "fig")
  ctx = Context(full=False, figdir=figdir)
  # two sections saved by earlier runs, out of order; one never run
  (tmp_path / "timing.md").write_text("<!-- finding: timing's finding -->\n## Table 3\n\nt.\n")
  (tmp_path / "propositions.md").write_text("<!-- finding: one -->\n## Props\n\np.\n")
  reproduce.run_section(reproduce.CLOSING, ctx)        # no computation, no stamp, no finding
  out = tmp_path / "R.md"
  missing = reproduce.assemble(figdir, out)
  text = out.read_text()
  assert set(missing) == set(reproduce.SECTIONS) - {"timing", "propositions"}
  assert text.index("* one") < text.index("* timing's finding") < text.index("## Props")
  assert text.index("## Props") < text.index("## Table 3") < text.index("## Where this run")
  assert "<!--" not in text and "Measured by" not in text.split("## Where this run")[1]


def test_a_section_is_saved_with_the_command_that_reruns_it(tmp_path, monkeypatch):
  import types
  fake = types.ModuleType("benchmarks.reproduction.fake")
  fake.run = lambda ctx: ("## Fake section\n\nbody", "a finding")
  monkeypatch.setitem(sys.modules, "benchmarks.reproduction.fake", fake)
  path = reproduce.run_section("fake", Context(full=False, figdir=Figures(tmp_path, "fig")))
  lines = path.read_text().split("\n")
  assert lines[0] == "<!-- finding: a finding -->" and lines[1] == "## Fake section"
  assert "`python -m benchmarks.reproduction.reproduce --only fake`" in lines[3] and lines[5] == "body"


def test_the_saved_sections_assemble_into_every_section_of_the_report(tmp_path):
  """Regenerating REPRODUCTION.md from the saved sections (`--assemble`) keeps every section
  it holds, in its order: each is listed in SECTIONS with its module and a saved file."""
  import importlib.util
  from benchmarks import ROOT
  saved = ROOT / "benchmarks" / "results" / "reproduction"
  assert all(importlib.util.find_spec(f"benchmarks.reproduction.{name}")
             for name in reproduce.SECTIONS + [reproduce.CLOSING])
  assert reproduce.assemble(Figures(saved, "fig"), tmp_path / "R.md") == []
  headings = lambda text: [line for line in text.splitlines() if line.startswith("## ")]
  assert headings((tmp_path / "R.md").read_text()) == headings(
      (ROOT / "REPRODUCTION.md").read_text())
