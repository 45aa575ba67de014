"""Claims from cells: every result the evidence pages state names the cell it comes from, and
every cell named exists in the results (docs/reproducibility.md#claims-name-their-cells).

A reference is a code span of one of two forms:
- `cell SECTION:NAME` — a saved cell of a powered section,
  benchmarks/results/reproduction/SECTION_cells/NAME_<block>.npz (a `*` in NAME names a row of
  cells: it must match at least one);
- `row PATH › KEY › KEY …` — the one row of a markdown table in PATH (relative to the
  repository: a results file, or a docs table with its provenance line) that holds every KEY as
  one of its cells or as a heading above its table (the whole heading, or within it for a KEY
  of several words).
"""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "reproduction"
PAGES = ["docs/linear_rlhf.md", "docs/practical_rlhf.md", "docs/sequences.md"]
REFERENCE = re.compile(r"`(cell|row) ([^`]+)`")


def references(text: str) -> list[tuple[str, str]]:
  """(kind, what) of each reference in `text`, its whitespace as markdown renders it (a span
  may break across lines)."""
  return [(kind, " ".join(what.split())) for kind, what in REFERENCE.findall(text)]


def _cell_exists(what: str) -> bool:
  section, _, name = what.partition(":")
  return bool(name) and any((RESULTS / f"{section}_cells").glob(f"{name}_*.npz"))


def _plain(cell: str) -> str:
  return re.sub(r"[*`]", "", cell).strip()


def _rows_under_headings(text: str):
  """(headings above, cells) of every table row of a markdown text, the separator rows apart."""
  headings: list[tuple[int, str]] = []
  for line in text.splitlines():
    heading = re.match(r"(#+)\s+(.*)", line)
    if heading:
      level = len(heading.group(1))
      headings = [h for h in headings if h[0] < level] + [(level, _plain(heading.group(2)))]
    elif line.startswith("|") and not re.fullmatch(r"[|\s:-]+", line):
      cells = [_plain(c) for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
      yield [h for _, h in headings], cells


def _holds(key: str, headings: list[str], cells: list[str]) -> bool:
  """Whether a row holds `key`: as one of its cells, or as a heading above its table (the whole
  heading, or within it for a key of several words)."""
  return key in cells or any(key == h or (" " in key and key in h) for h in headings)


def _rows(what: str) -> int:
  """How many table rows the reference `what` of a `row` names (0 where PATH is missing)."""
  path, *keys = [part.strip() for part in what.split("›")]
  file = ROOT / path
  if not keys or not file.is_file():
    return 0
  return sum(all(_holds(key, headings, cells) for key in keys)
             for headings, cells in _rows_under_headings(file.read_text()))


def exists(kind: str, what: str) -> bool:
  """Whether the reference names a cell, or exactly one table row, that is there."""
  return _cell_exists(what) if kind == "cell" else _rows(what) == 1


@pytest.mark.parametrize("page", PAGES)
def test_every_cell_a_page_names_exists(page):
  found = references((ROOT / page).read_text())
  assert len(found) >= 5, f"{page} names {len(found)} cells"
  missing = [f"{kind} {what}" for kind, what in found if not exists(kind, what)]
  assert not missing, missing


def test_a_reference_to_what_is_not_there_fails():
  table = "docs/sequences.md › Regret against length"
  assert exists("row", f"{table} › tabular › 8") and not exists("row", f"{table} › tabular › 17")
  assert not exists("row", f"{table} › 16")         # the summary's row and the split tables' rows
  assert not exists("row", "benchmarks/results/reproduction/sequences.md › sequence_xpo")  # many
  assert not exists("row", "docs/nowhere.md › 16")
  assert exists("cell", "length:loglinear_eps0.02_L16_sequence_dpo_alpha-")
  assert not exists("cell", "length:loglinear_eps0.02_L17_sequence_dpo_alpha-")
  assert not exists("cell", "length")
