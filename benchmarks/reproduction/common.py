"""What every section of the reproduction report shares: where figures go, intervals, links,
the outcomes of a run beside the propositions' event.

A section is a module of this package with a `TITLE`, and `run(ctx) -> (markdown, finding)`:
the markdown starts with "## TITLE", the finding is one sentence for the report's list.
`benchmarks/reproduction/reproduce.py` runs sections and assembles REPRODUCTION.md from their outputs.
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
from matplotlib.figure import Figure

from rbx.core import results as results_lib

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
  """What a section's `run` gets: the scale, where figures go, the data directory, and how
  long a section that saves its cells may compute new ones (None: until it is complete)."""
  full: bool                 # the papers' scale (an accelerator) rather than the CPU-sized one
  figdir: Figures
  data_dir: str | None = None
  budget: float | None = None


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


OUTCOME_COLUMNS = ("stuck through T", "R(T)", "last 10% of steps below the threshold",
                   "t from which it stays below: median")
OUTCOMES_TEXT = (
    "Beside the propositions' event (*stuck*: regret ≥ the threshold at every 1 < t ≤ T, which "
    "a one-step dip below ends), the outcomes a practitioner reads: R(T); the fraction of the "
    "last 10% of steps at which the deployed policy's regret is below the threshold (mean over "
    "seeds); and the step from which it stays below the threshold to T (1 + the last t with "
    "regret ≥ the threshold; \"> T\" for a seed above it at T; median over seeds). Intervals: "
    "95% — Wilson for the stuck fraction, Student t for the means, a percentile bootstrap over "
    "seeds for the median.")


class Outcomes(NamedTuple):
  """A run's outcomes over its seeds, each (estimate, 95% low, 95% high).

  Attributes:
    stuck: the fraction of seeds with regret ≥ the threshold at every 1 < t ≤ T (Wilson).
    final: mean R(T) (Student t).
    tail_below: the mean fraction of the last ⌈T/10⌉ steps with regret < the threshold (t).
    settle: the median step from which regret stays < the threshold through T, T + 1 for a seed
      still above it at T (percentile bootstrap over seeds).
  """
  stuck: tuple[float, float, float]
  final: tuple[float, float, float]
  tail_below: tuple[float, float, float]
  settle: tuple[float, float, float]


def outcomes(regret: np.ndarray, threshold: float, boots: int = 1000) -> Outcomes:
  """`Outcomes` of per-step regret of shape (seeds, T) at `threshold`."""
  regret = np.asarray(regret, np.float64)
  n, T = regret.shape
  above = regret >= threshold
  stuck = above[:, 1:].all(axis=-1).mean()
  tail = (~above[:, T - max(1, -(-T // 10)):]).mean(axis=-1)
  settle = np.where(above.any(axis=-1), T + 1 - np.argmax(above[:, ::-1], axis=-1), 1)
  counts = np.random.default_rng(0).multinomial(n, np.full(n, 1.0 / n), size=boots)
  medians = [np.median(np.repeat(settle, c)) for c in counts]
  return Outcomes((stuck, *wilson(stuck, n)), _t_interval(regret.sum(axis=-1)),
                  _t_interval(tail),
                  (float(np.median(settle)), *np.percentile(medians, [2.5, 97.5])))


def _t_interval(values: np.ndarray) -> tuple[float, float, float]:
  mean, _, half = results_lib.mean_ci(values, axis=0)
  return float(mean), float(mean - half), float(mean + half)


def outcome_cells(o: Outcomes, horizon: int) -> list[str]:
  """The table cells of `OUTCOME_COLUMNS` for `o`."""
  step = lambda v: f"> {horizon}" if v > horizon else f"{v:.0f}"
  return [f"**{o.stuck[0]:.3f}** [{o.stuck[1]:.3f}, {o.stuck[2]:.3f}]",
          f"{o.final[0]:.1f} [{o.final[1]:.1f}, {o.final[2]:.1f}]",
          f"{o.tail_below[0]:.2f} [{o.tail_below[1]:.2f}, {o.tail_below[2]:.2f}]",
          f"{step(o.settle[0])} [{step(o.settle[1])}, {step(o.settle[2])}]"]
