"""Powered, resumable comparisons of exploring agents against a no-exploration control: what
the `linear` and `sequences` sections share.

A section's design is a list of *cells*, tuples (instance, size…, agent, seed block); each
cell is `seeds` seeds × T steps of one agent on one environment, saved as an `.npz` in the
section's directory as soon as it is done, with the settings its numbers depend on (a saved
cell whose settings changed is recomputed), so the section resumes where it stopped.

Comparisons are paired over seeds (seed s sees the same prompt sequence under every agent),
by `rbx.core.stats`: the mean difference of R(T), its 95% Student-t interval, the two-sided
paired t-test's p, Holm's step-down correction over every comparison of the section
(family-wise error 5%), and, for a comparison not separated, the smallest difference the run
could have detected: the difference a paired t-test at the Bonferroni level 0.05/m (m
comparisons; Holm's first, most stringent step) detects with 80% power at the observed spread,
(t_{1−0.025/m} + t_{0.8}) · sd/√n.
"""
from __future__ import annotations

import collections
import json
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import ROOT, revision
from rbx import rlhf
from rbx.core import stats
from rbx.core.results import mean_ci

LEVEL, POWER = 0.05, 0.8
TAIL = 0.1
"""The share of the last steps whose mean per-step regret, against π_ref's at t = 1, says
whether an agent learned (interval below 1), ended no better than not learning (interval at
or above 1: *collapsed*) or cannot be told apart from π_ref on these seeds (*unclear*)."""


class Cells:
  """A section's saved cells in `directory`, a cell's file `pattern.format(*cell)`; each cell
  computed here is stamped with the revision read when this object was made (the code the
  process loaded, not what a later commit holds)."""

  def __init__(self, directory: Path, name: str, pattern: str):
    self.directory, self.name, self.pattern = Path(directory), name, pattern
    self.revision = revision.head()

  def path(self, cell) -> Path:
    return self.directory / self.pattern.format(*cell)

  def shown(self) -> str:
    """The directory as the report names it: relative to the repository where it is inside."""
    d = self.directory.resolve()
    return str(d.relative_to(ROOT) if d.is_relative_to(ROOT) else d)

  def load(self, cell, settings: dict) -> dict | None:
    """The saved cell if it was computed with `settings`, else None."""
    path = self.path(cell)
    if not path.exists():
      return None
    with np.load(path) as f:
      saved = {k: f[k] for k in f.files}
    return saved if json.loads(str(saved["settings"])) == settings else None

  def compute(self, cell, settings: dict, env, agent, seeds: list[int], steps: int,
              last: tuple[str, ...] = ()) -> dict:
    """Runs one cell and saves it: per seed R(T) and the tail's regret over π_ref's
    (`learned`), and the last step's value of each metric named in `last` (`last_<name>`);
    per step the sum and the sum of squares of the regret over the seeds (blocks combine);
    the wall time."""
    start = time.time()
    res = rlhf.sweep(lambda: (env, agent), {}, seeds=seeds, steps=steps, progress=False)
    regret = np.asarray(res.regret, np.float64)
    saved = {"finals": regret.sum(-1), "learned": learned(regret), "sum": regret.sum(0),
             "squares": (regret ** 2).sum(0), "seconds": np.float64(time.time() - start),
             "settings": np.asarray(json.dumps(settings)), "revision": np.asarray(self.revision),
             **{f"last_{m}": np.asarray(res.metric(m).regret)[..., -1] for m in last}}
    self.directory.mkdir(parents=True, exist_ok=True)
    tmp = self.path(cell).with_suffix(".tmp.npz")
    np.savez(tmp, **saved)
    tmp.replace(self.path(cell))
    print(f"[{self.name}] {cell}: R(T) {saved['finals'].mean():.2f} "
          f"({saved['seconds']:.0f} s)", file=sys.stderr, flush=True)
    return saved


def combine(blocks: list[dict]) -> dict:
  """An agent's blocks 0, 1, … as one run: per-seed arrays joined, per-step mean and 95% t
  half-width from the sums, the wall times added."""
  n = sum(len(b["finals"]) for b in blocks)
  total, squares = sum(b["sum"] for b in blocks), sum(b["squares"] for b in blocks)
  mean = total / n
  sd = np.sqrt(np.maximum(squares - n * mean ** 2, 0.0) / max(n - 1, 1))
  lasts = {k: np.concatenate([b[k] for b in blocks]) for k in blocks[0] if k.startswith("last_")}
  return {"finals": np.concatenate([b["finals"] for b in blocks]),
          "learned": np.concatenate([b["learned"] for b in blocks]), "mean": mean, **lasts,
          "half": stats.t_quantile(0.975, max(n - 1, 1)) * sd / np.sqrt(n),
          "seconds": sum(float(b["seconds"]) for b in blocks),
          "revisions": [str(b["revision"]) if "revision" in b else UNRECORDED for b in blocks]}


def fill(cells: list[tuple], load, compute, budget: float | None) -> dict:
  """cell -> its saved numbers (None where missing): `load(cell)`, then `compute(cell)` for
  the missing ones in order while `budget` seconds last (None: all)."""
  saved, start = {c: load(c) for c in cells}, time.time()
  for c in cells:
    if saved[c] is None and (budget is None or time.time() - start < budget):
      saved[c] = compute(c)
  return saved


def evaluate(cells: list[tuple], load, compute, budget: float | None, control):
  """`fill`, then (the cells still missing, `gather`'s runs, `against` their controls)."""
  saved = fill(cells, load, compute, budget)
  done = gather(cells, saved)
  return [c for c in cells if saved[c] is None], done, against(done, control)


def gather(cells: list[tuple], saved: dict) -> dict:
  """(cell without its block) -> `combine` of its consecutive saved blocks from 0."""
  done = {}
  for c in cells:
    blocks = done.setdefault(c[:-1], [])
    if saved[c] is not None and len(blocks) == c[-1]:
      blocks.append(saved[c])
  return {c: combine(v) for c, v in done.items() if v}


def interval(x, axis=0):
  """Mean and the half-width of its 95% Student-t interval along `axis`."""
  mean, _, half = mean_ci(np.asarray(x, np.float64), axis)
  return mean, half


def learned(regret: np.ndarray) -> np.ndarray:
  """Per seed: mean per-step regret over the last `TAIL` of the steps / the regret at t = 1
  (π_ref's, deployed by every agent at t = 1); regret is (seeds, T)."""
  regret = np.asarray(regret, np.float64)
  tail = max(1, int(round(TAIL * regret.shape[-1])))
  return regret[:, -tail:].mean(-1) / regret[:, 0]


def verdict(learned: np.ndarray) -> str:
  """"collapsed", "unclear" or "" (learned) from `learned`'s 95% interval against 1."""
  m, h = interval(learned)
  return "collapsed" if m - h >= 1 else "unclear" if m + h >= 1 else ""


def against(done: dict, control) -> dict:
  """Every agent's comparison with its control, paired over the seeds both ran
  (`rbx.core.stats.paired`), then Holm over all of them (`rbx.core.stats.holm`, at `POWER`);
  `control(key)` is the key of `key`'s control (`key` itself for a control)."""
  comparisons = {}
  for c, v in done.items():
    ctrl = control(c)
    if ctrl != c and ctrl in done:
      n = min(len(v["finals"]), len(done[ctrl]["finals"]))
      comparisons[c] = stats.paired(v["finals"][:n], done[ctrl]["finals"][:n], 1 - LEVEL)
  return stats.holm(comparisons, POWER)


SCHEME_COLOURS = {"algorithm1": "C0", "vpo": "C1", "xpo": "C2", "greedy": "C7", "dpo": "C7"}
"""Colours by scheme (the name's last part), for a section of one family."""


def curves(ax, cells: dict, title: str, by_scheme: bool = False):
  """Mean per-step regret with 95% bands, log-scaled y (per-step regret is > 0); line styles
  by the scheme (the name's last part), colours by the agents' family (its first part) or,
  with `by_scheme`, by the scheme."""
  colours = {"linear": "C0", "practical": "C1", "online": "C1"}
  styles = {"algorithm1": "-", "vpo": "--", "xpo": ":", "greedy": "-.", "dpo": "-."}
  for name, cell in cells.items():
    m, h = cell["mean"], cell["half"]
    t = np.arange(1, m.shape[0] + 1)
    colour = (SCHEME_COLOURS[name.split("_")[-1]] if by_scheme
              else colours.get(name.split("_")[0], "C2"))
    ax.plot(t, m, styles[name.split("_")[-1]], color=colour, label=name, lw=1.2)
    ax.fill_between(t, np.maximum(m - h, 1e-4), m + h, color=colour, alpha=0.12)
  ax.set_yscale("log")
  ax.set_xlabel("step t")
  ax.set_title(title, fontsize=9)


def row(v: dict, comparison: stats.Comparison | None, is_control: bool) -> str:
  """A table row's cells: n | R(T) [CI] | − control [CI] | Holm p | detectable | tail [CI]
  verdict | s."""
  m, h = interval(v["finals"])
  lm, lh = interval(v["learned"])
  if comparison is not None:
    c = comparison
    sep = "**" if c.separated else ""
    detect = "" if c.separated else f"{c.detectable:.2f}"
    vs = (f"{sep}{c.mean:+.2f}{sep} [{c.mean - c.half:+.2f}, {c.mean + c.half:+.2f}] | "
          f"{c.p_holm:.2g} | {detect}")
  else:
    vs = "control | | " if is_control else "— | | "
  return (f"{len(v['finals'])} | {m:.1f} [{m - h:.1f}, {m + h:.1f}] | {vs} | "
          f"{lm:.3f} [{lm - lh:.3f}, {lm + lh:.3f}] {verdict(v['learned'])} | "
          f"{float(v['seconds']):.0f}")


HEADER = ("n | R(T) [95% CI] | − control, paired [95% CI] | Holm p | detectable | "
          "tail / π_ref's [95% CI] | s |")
EXPLAINED = (
    "Each exploring agent is compared with its family's control (no bonus, both answers from "
    "π^(t)): R(T) − the control's, paired over seeds, with its 95% Student-t interval; *Holm "
    "p*: the paired t-test's p adjusted by Holm's step-down procedure over all {m} "
    "comparisons of the section (bold: below 0.05); *detectable*: for a comparison not "
    "separated, the smallest |difference| a paired t-test at the Bonferroni level 0.05/m would "
    f"have detected with {POWER:.0%} power at the observed spread. *tail / π_ref's*: the mean "
    f"per-step regret over the last {TAIL:.0%} of the steps over π_ref's at t = 1 (below 1: "
    "learned; *collapsed*: its interval at or above 1; *unclear*: it contains 1).")


def not_yet_run(missing: list, cells: list, block: int, store: Cells) -> list[str]:
  """The report's paragraph on the cells not yet run (none when every cell is present)."""
  if not missing:
    return []
  return [f"**Not yet run: {len(missing)} of {len(cells)} cells** of {block} seeds; the seeds "
          "each agent ran are in the tables' *n* column, and a comparison uses the seeds both "
          "agents ran. The section's command computes the rest, resuming from the cells saved "
          f"in `{store.shown()}`.", ""]


def as_set(values) -> str:
  """"{100, 1000}": a design's values, written so as not to read as an interval."""
  return "{" + ", ".join(str(v) for v in values) + "}"


UNRECORDED = "a commit not recorded"
"""A cell's revision where it was saved before cells recorded theirs."""


def revisions(done: dict) -> list[str]:
  """The report's line on which code computed its cells (`gather`'s runs): each commit
  (`benchmarks.revision.head` when the cell was computed) with its count of cells."""
  counts = collections.Counter(r for run in done.values() for r in run["revisions"])
  if not counts:
    return []
  return ["Cells computed at " + "; ".join(f"{r} ({n})" for r, n in counts.most_common())
          + ".", ""]


def part(label: str, mine: dict, name, control: str) -> str:
  """One group's clause of a finding: the comparisons `mine` separated ahead of and behind
  `control` (each as `name(key)` with its difference), and the range of the smallest
  detectable differences of the others."""
  ahead = [f"{name(c)} ({v.mean:+.1f})" for c, v in mine.items() if v.separated and v.mean < 0]
  behind = [f"{name(c)} ({v.mean:+.1f})" for c, v in mine.items() if v.separated and v.mean > 0]
  rest = [v.detectable for v in mine.values() if not v.separated]
  return (f"{label}: ahead of {control} {', '.join(ahead) or 'none'}; behind it "
          f"{', '.join(behind) or 'none'}"
          + (f"; {len(rest)} not separated (smallest detectable differences "
             f"{min(rest):.1f}–{max(rest):.1f})" if rest else ""))


def finding(what: str, comparisons: dict, parts: list[str], steps: int, seeds: int,
            missing: list) -> str:
  """A section's one-sentence finding: its `parts`, with the horizon, the seeds the
  comparisons had against the design's, and the cells not yet run."""
  n = sorted({c.n for c in comparisons.values()}) or [0]
  span = f"{n[0]}" if n[0] == n[-1] else f"{n[0]}–{n[-1]}"
  return (f"{what} (T = {steps}, {span} of the design's {seeds} seeds per comparison, Holm "
          f"over {len(comparisons)} comparisons): " + "; ".join(parts)
          + (f" ({len(missing)} cells not yet run)" if missing else "") + ".")
