"""benchmarks/throughput/gpu.py at its tiny size: one Markdown table with every row, numbers that parse."""
import math

import pytest

from benchmarks.throughput import gpu


@pytest.mark.slow
def test_the_tiny_table_has_every_row_and_its_numbers_parse(tmp_path, monkeypatch):
  # the hello world at the demo row's sizes: its two sweeps (Algorithm 1 and XPO on Example 2)
  # are programs of the demo's, compiled once through the suite's cache (tests/conftest.py);
  # a 4 s budget (the tiny default, 60 s, is spent whole): each section measures its first
  # rows, the later ones say "skipped: time budget"
  monkeypatch.setitem(gpu.SIZES["tiny"], "hello", gpu.SIZES["tiny"]["demo"])
  out = tmp_path / "gpu.md"
  text = gpu.main(["--tiny", "--budget", "4", "--out", str(out)])
  assert out.read_text() == text
  rows = [line.split(" | ") for line in text.splitlines() if line.startswith("| ")][1:]
  figures = [r[0].removeprefix("| ") for r in rows]
  expected = [label for label in gpu.SWEEPS["tiny"] for _ in range(2)] + [
      "sequence enumeration, V^L = 8"] + [
      label for label in gpu.SEQUENCE_SWEEPS["tiny"] for _ in range(2)] + [
      "README hello world", "rbx demo"] + [
      "neural round, rbx" + ("" if p is None else
                             ", first_layer={}, matmul_precision={}".format(*p))
      for p in gpu.PRODUCTS] + ["neural round, PyTorch loop"] + [
      f"Table 1 estimate, {ds}, {gpu.table1.label(name)}"
      for ds in gpu.SHAPES for name in gpu.table1.ALGORITHMS]
  assert figures == expected
  number = lambda cell: float(cell.replace(",", ""))
  measured = [r for r in rows if not r[1].startswith(("skipped", "torch not installed"))]
  for r in measured:                    # figure, setting, batch, compile, run, value, unit
    value = r[5]
    assert number(value) > 0 and math.isfinite(number(value)), r
  sections = {f.split(",")[0] for f in figures}
  assert sections == {f.split(",")[0] for f in (r[0].removeprefix("| ") for r in measured)}
  assert "cpu cache rule: seeds × |X| × A² ≤ 2^16" in text
