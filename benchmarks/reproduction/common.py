"""What every section of the reproduction report shares: where figures go, intervals, links.

A section is a module of this package with a `TITLE`, and `run(ctx) -> (markdown, finding)`:
the markdown starts with "## TITLE", the finding is one sentence for the report's list.
`benchmarks/reproduce.py` runs sections and assembles REPRODUCTION.md from their outputs.
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
from matplotlib.figure import Figure

PROP1_BOUND = 4 / (9 * np.e)
PROP2_BOUND = 1 / 64
AGENTS = ("algorithm1", "vpo", "xpo")


class Figures(NamedTuple):
  """Where figures go (`path`) and how the report links to them (`prefix`, relative to it)."""
  path: Path
  prefix: str

  def __truediv__(self, name: str) -> Path:
    return self.path / name

  def link(self, path: Path) -> str:
    return f"{self.prefix}/{Path(path).name}"


class Context(NamedTuple):
  """What a section's `run` gets: the scale, where figures go, the data directory."""
  full: bool                 # the papers' scale (an accelerator) rather than the CPU-sized one
  figdir: Figures
  data_dir: str | None = None


def wilson(p: float, n: int, z: float = 1.96) -> tuple[float, float]:
  """The 95% Wilson score interval of a binomial proportion p out of n."""
  centre = (p + z * z / (2 * n)) / (1 + z * z / n)
  half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
  return centre - half, centre + half


def escape_time(t: int, horizon: int) -> str:
  """An escape time, or "> T" for a seed that did not escape within the horizon T."""
  return f"> {horizon}" if t > horizon else str(int(t))


def png(paths: list[Path]) -> Path:
  """The PNG of a `rbx.core.plots` figure; its other formats are removed (the report shows PNGs)."""
  for p in paths[1:]:
    p.unlink()
  return paths[0]


def save(fig: Figure, figdir: Figures, name: str) -> str:
  """Saves `fig` as figdir/name; returns the report's link to it."""
  fig.savefig(figdir / name, dpi=110, bbox_inches="tight")
  return figdir.link(figdir / name)
