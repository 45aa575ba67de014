"""Does exploration pay when prompts share features? Powered, on uniform and hard instances.

Every exploring agent of three families — the exact agents over a shared linear reward
(`linear_*`, control `linear_greedy`), the DPO-form agents on the log-linear policy
(`practical_*`, control `online_dpo`) and, at the smallest |X|, the tabular exact agents (every
prompt its own bandit, control `greedy`) — against its family's no-exploration control, on
three instance families of `rlhf.random_contextual`: uniform π_ref (`deviation = 1`), reversed
π_ref (`deviation = 2`) and Example 2's trap at every prompt (`kappa`). Each (instance, |X|,
d, agent) is a *cell* of `seeds` seeds × T steps, saved under `CELLS` as soon as it is done,
so the section resumes where it stopped (a cell whose settings changed is rerun) and
`--budget SECONDS` writes the report from the cells present.

Comparisons are paired over seeds (seed s sees the same prompt sequence under every agent):
the mean difference of R(T), its 95% Student-t interval, the two-sided paired t-test's p,
Holm's step-down correction over every comparison of the section (family-wise error 5%), and,
for a comparison not separated, the smallest difference the run could have detected: the
difference a paired t-test at the Bonferroni level 0.05/m (m comparisons; Holm's first, most
stringent step) detects with 80% power at the observed spread,
(t_{1−0.025/m} + t_{0.8}) · sd/√n.
"""
from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import jax
import numpy as np
from matplotlib.figure import Figure
from scipy import stats

from benchmarks import ROOT
from benchmarks.reproduction.common import Context

from rbx import rlhf
from rbx.rlhf import linear as linear_lib

TITLE = "Exploration over a shared linear reward, with power (contextual RLHF)"
LINEAR = ("linear_algorithm1", "linear_vpo", "linear_xpo", "linear_greedy")
PRACTICAL = ("practical_algorithm1", "practical_vpo", "practical_xpo", "online_dpo")
TABULAR = ("algorithm1", "vpo", "xpo", "greedy")
CONTROLS = {**dict.fromkeys(LINEAR, "linear_greedy"), **dict.fromkeys(PRACTICAL, "online_dpo"),
            **dict.fromkeys(TABULAR, "greedy")}
BETA, R_MAX, ALPHA, ACTIONS, KAPPA = 0.5, 4.0, 1.0, 10, 100.0
INSTANCES = {"uniform": {"deviation": 1.0}, "reversed": {"deviation": 2.0},
             "trap": {"kappa": KAPPA}}
"""The instance families: keyword arguments of `rlhf.random_contextual` beside |X|, A, d."""
CELLS = ROOT / "benchmarks" / "results" / "reproduction" / "linear_cells"
LEVEL, POWER = 0.05, 0.8
TAIL = 0.1
"""The share of the last steps whose mean per-step regret, against π_ref's at t = 1, says
whether an agent learned (interval below 1), ended no better than not learning (interval at
or above 1: *collapsed*) or cannot be told apart from π_ref on these seeds (*unclear*)."""


@dataclasses.dataclass(frozen=True)
class Sizes:
  """This section's sizes at one scale."""
  prompts: tuple[int, ...]     # |X| values, the first also runs the tabular agents
  dims: tuple[int, ...]        # d values
  steps: int                   # T
  seeds: int                   # seeds per (instance, |X|, d, agent), in blocks of `block`
  seeds_tabular: int           # seeds per tabular agent (one block)
  block: int                   # seeds per cell
  instances: tuple[str, ...] = tuple(INSTANCES)


# Sized for this CPU as a resumable background job (cells in `CELLS`). A tabular exact agent
# re-solves all |X| prompts' problems every step: 174 s for 8 seeds × 1,000 steps at |X| = 100
# on this 2-core CPU, about 1.5 hours for 256 seeds, so its cells run on 32 seeds, last.
QUICK = Sizes(prompts=(100, 1000), dims=(4, 16), steps=1000, seeds=256, seeds_tabular=32,
              block=64)
FULL = QUICK


def _agent(name: str):
  """The agent with the section's α (none for the controls); practical agents on the
  log-linear policy over a buffer of their comparisons, their other settings the defaults."""
  kwargs = {} if CONTROLS[name] == name else {"alpha": ALPHA}
  if name in PRACTICAL:
    kwargs.update(policy="loglinear", data="buffer")
  return rlhf.get(name, **kwargs), kwargs


def _cells(scale: Sizes) -> list[tuple[str, int, int, str, int]]:
  """(instance, |X|, d, agent, seed block) in the order they are computed: block by block;
  in a block the smallest |X| first, at each (|X|, d) the trap, then its uniform control,
  then the reversed instance, the linear agents first; the tabular agents (at the smallest
  |X|, one block) after the first block."""
  order = sorted(scale.instances, key=("trap", "uniform", "reversed").index)
  cells = [[(inst, X, d, name, b) for X in scale.prompts for d in scale.dims for inst in order
            for name in LINEAR + PRACTICAL] for b in range(scale.seeds // scale.block)]
  tabular = [(inst, scale.prompts[0], d, name, 0) for d in scale.dims for inst in order
             for name in TABULAR]
  return cells[0] + tabular + [c for block in cells[1:] for c in block]


def _seeds(scale: Sizes, cell) -> list[int]:
  """The cell's seeds: its block's, or the tabular agents' `seeds_tabular`."""
  if cell[3] in TABULAR:
    return list(range(scale.seeds_tabular))
  return list(range(cell[4] * scale.block, (cell[4] + 1) * scale.block))


def _settings(scale: Sizes, cell) -> dict:
  """What a cell's numbers depend on; a saved cell with other settings is recomputed."""
  inst, X, d, name, _ = cell
  _, kwargs = _agent(name)
  seeds = _seeds(scale, cell)
  settings = {"instance": INSTANCES[inst], "X": X, "A": ACTIONS, "d": d, "beta": BETA,
              "r_max": R_MAX, "T": scale.steps, "seeds": [seeds[0], seeds[-1]], "agent": name,
              "kwargs": kwargs}
  if name in LINEAR:
    settings["solver"] = repr(linear_lib.LINEAR_SOLVER)
  return settings


def _path(cell) -> Path:
  inst, X, d, name, block = cell
  return CELLS / f"{inst}_X{X}_d{d}_{name}_{block}.npz"


def load(scale: Sizes, cell) -> dict | None:
  """A saved cell with the current settings, or None."""
  path = _path(cell)
  if not path.exists():
    return None
  with np.load(path) as f:
    saved = {k: f[k] for k in f.files}
  if json.loads(str(saved["settings"])) != _settings(scale, cell):
    return None
  return saved


def compute(scale: Sizes, cell) -> dict:
  """Runs one cell and saves it: per seed R(T) and the tail's regret over π_ref's
  (`_learned`); per step the sum and the sum of squares of the regret over the seeds (blocks
  combine); the wall time."""
  inst, X, d, name, _ = cell
  env = rlhf.random_contextual(jax.random.key(0), X, ACTIONS, d, BETA, R_MAX, **INSTANCES[inst])
  start = time.time()
  res = rlhf.sweep(lambda: (env, _agent(name)[0]), {}, seeds=_seeds(scale, cell),
                   steps=scale.steps, progress=False)
  regret = np.asarray(res.regret, np.float64)
  saved = {"finals": regret.sum(-1), "learned": _learned(regret), "sum": regret.sum(0),
           "squares": (regret ** 2).sum(0), "seconds": np.float64(time.time() - start),
           "settings": np.asarray(json.dumps(_settings(scale, cell)))}
  CELLS.mkdir(parents=True, exist_ok=True)
  tmp = _path(cell).with_suffix(".tmp.npz")
  np.savez(tmp, **saved)
  tmp.replace(_path(cell))
  print(f"[linear] {inst} |X| = {X}, d = {d}, {name}, block {cell[4]}: R(T) "
        f"{saved['finals'].mean():.2f} ({saved['seconds']:.0f} s)", file=sys.stderr, flush=True)
  return saved


def _combine(blocks: list[dict]) -> dict:
  """An agent's blocks 0, 1, … as one run: per-seed arrays joined, per-step mean and 95% t
  half-width from the sums, the wall times added."""
  n = sum(len(b["finals"]) for b in blocks)
  total, squares = sum(b["sum"] for b in blocks), sum(b["squares"] for b in blocks)
  mean = total / n
  sd = np.sqrt(np.maximum(squares - n * mean ** 2, 0.0) / max(n - 1, 1))
  return {"finals": np.concatenate([b["finals"] for b in blocks]),
          "learned": np.concatenate([b["learned"] for b in blocks]), "mean": mean,
          "half": stats.t.ppf(0.975, max(n - 1, 1)) * sd / np.sqrt(n),
          "seconds": sum(float(b["seconds"]) for b in blocks)}


def _interval(x, axis=0):
  """Mean and the half-width of its 95% Student-t interval along `axis`."""
  x = np.asarray(x, np.float64)
  n = x.shape[axis]
  return x.mean(axis), stats.t.ppf(0.975, n - 1) * x.std(axis, ddof=1) / np.sqrt(n)


def _learned(regret: np.ndarray) -> np.ndarray:
  """Per seed: mean per-step regret over the last `TAIL` of the steps / the regret at t = 1
  (π_ref's, deployed by every agent at t = 1); regret is (seeds, T)."""
  regret = np.asarray(regret, np.float64)
  tail = max(1, int(round(TAIL * regret.shape[-1])))
  return regret[:, -tail:].mean(-1) / regret[:, 0]


def _verdict(learned: np.ndarray) -> str:
  """"collapsed", "unclear" or "" (learned) from `_learned`'s 95% interval against 1."""
  m, h = _interval(learned)
  return "collapsed" if m - h >= 1 else "unclear" if m + h >= 1 else ""


@dataclasses.dataclass(frozen=True)
class Comparison:
  """An exploring agent's R(T) minus its control's, paired over n seeds."""
  mean: float
  half: float                  # 95% t half-width
  p: float                     # two-sided paired t-test
  sd: float
  n: int
  p_holm: float = float("nan")
  separated: bool = False
  detectable: float = float("nan")   # the smallest difference detectable (module docstring)


def paired(a: np.ndarray, b: np.ndarray) -> Comparison:
  """a − b over seeds (`Comparison`, before the correction)."""
  diff = np.asarray(a, np.float64) - np.asarray(b, np.float64)
  n, sd = diff.shape[0], float(diff.std(ddof=1))
  mean, half = _interval(diff)
  p = 1.0 if sd == 0 else float(2 * stats.t.sf(abs(mean) / (sd / np.sqrt(n)), n - 1))
  return Comparison(float(mean), float(half), p, sd, n)


def holm(comparisons: dict) -> dict:
  """The comparisons with Holm's adjusted p (step-down over all m of them), `separated` where
  it is below `LEVEL`, and the smallest detectable difference of the unseparated ones."""
  keys = sorted(comparisons, key=lambda k: comparisons[k].p)
  m, running, out = len(keys), 0.0, {}
  for i, k in enumerate(keys):
    c = comparisons[k]
    running = max(running, min(1.0, (m - i) * c.p))
    quantiles = stats.t.ppf(1 - LEVEL / (2 * m), c.n - 1) + stats.t.ppf(POWER, c.n - 1)
    out[k] = dataclasses.replace(c, p_holm=running, separated=running < LEVEL,
                                 detectable=float(quantiles * c.sd / np.sqrt(c.n)))
  return out


def _curves(ax, cells: dict, title: str):
  """Mean per-step regret with 95% bands, log-scaled y (per-step regret is > 0)."""
  colours = {"linear": "C0", "practical": "C1", "online": "C1"}
  styles = {"algorithm1": "-", "vpo": "--", "xpo": ":", "greedy": "-.", "dpo": "-."}
  for name, cell in cells.items():
    m, h = cell["mean"], cell["half"]
    t = np.arange(1, m.shape[0] + 1)
    colour = colours.get(name.split("_")[0], "C2")
    ax.plot(t, m, styles[name.split("_")[-1]], color=colour, label=name, lw=1.2)
    ax.fill_between(t, np.maximum(m - h, 1e-4), m + h, color=colour, alpha=0.12)
  ax.set_yscale("log")
  ax.set_xlabel("step t")
  ax.set_title(title, fontsize=9)


def _cell_text(c: Comparison) -> str:
  sep = "**" if c.separated else ""
  detect = "" if c.separated else f"{c.detectable:.2f}"
  return (f"{sep}{c.mean:+.2f}{sep} [{c.mean - c.half:+.2f}, {c.mean + c.half:+.2f}] | "
          f"{c.p_holm:.2g} | {detect}")


def run(ctx: Context) -> tuple[str, str]:
  """Computes the missing cells (within `ctx.budget` seconds, if set), then the report from
  every cell present."""
  scale = FULL if ctx.full else QUICK
  cells = _cells(scale)
  saved = {c: load(scale, c) for c in cells}
  start = time.time()
  for c in cells:
    if saved[c] is None and (ctx.budget is None or time.time() - start < ctx.budget):
      saved[c] = compute(scale, c)
  missing = [c for c in cells if saved[c] is None]
  done = {}                                    # (instance, |X|, d, agent) -> its first blocks
  for c in cells:
    blocks = done.setdefault(c[:4], [])
    if saved[c] is not None and len(blocks) == c[4]:
      blocks.append(saved[c])
  done = {c: _combine(v) for c, v in done.items() if v}
  comparisons = {}
  for c, v in done.items():
    control = c[:3] + (CONTROLS[c[3]],)
    if control != c and control in done:
      n = min(len(v["finals"]), len(done[control]["finals"]))      # the seeds both ran
      comparisons[c] = paired(v["finals"][:n], done[control]["finals"][:n])
  comparisons = holm(comparisons)
  T, n = scale.steps, scale.seeds
  lines = [f"## {TITLE}", "",
           f"Design: |X| ∈ {list(scale.prompts)}, d ∈ {list(scale.dims)}, A = {ACTIONS}, β = "
           f"{BETA:g}, r_max = {R_MAX:g}, T = {T}, {n} seeds per agent in blocks of {scale.block} "
           f"({scale.seeds_tabular} for the tabular agents, whose step re-solves every prompt); "
           "instances "
           f"`rlhf.random_contextual(key(0), |X|, {ACTIONS}, d, β, r_max, …)` (φ ∼ N(0, I/d), "
           "θ* ∼ N(0, I), r* = θ*ᵀφ scaled into [0, r_max], uniform ρ) with π_ref uniform "
           "(`deviation = 1`), reversed (`deviation = 2`, π_ref ∝ e^{−r*}: the reference "
           f"prefers the worst answers) or Example 2's trap (`kappa = {KAPPA:g}`: π_ref "
           f"{1 - (ACTIONS - 1) / KAPPA:.2f} on each prompt's worst answer and 1/κ on each other; "
           "`rbx.rlhf.contextual`, which says why XPO and online DPO should learn slowly there). "
           f"α = {ALPHA:g} (constant) for every scheme with a bonus; VPO calibrates with π_ref. "
           "`linear_*`: θ ∈ R^d shared by all prompts, the step (3.1a)/(3.2a) over the "
           "reward-range set K by `rbx.rlhf.linear` (`LINEAR_SOLVER`; docs/linear_rlhf.md "
           "states how far from SciPy's multi-start optimum it ends). `practical_*`/`online_dpo`: "
           "the log-linear policy π_θ ∝ π_ref e^{θᵀφ/β}, a DPO term over the comparisons made "
           "(`data = \"buffer\"`), the exact bonus over all prompts, and the ℓ2 term "
           "(λ/2)‖θ‖² with λ = 1 — a Gaussian prior N(0, I) on θ, the distribution θ* is drawn "
           "from (a departure from the paper's box; docs/practical_rlhf.md). Tabular exact agents "
           f"(|X| = {scale.prompts[0]} only): every prompt a separate bandit in the box "
           "[0, r_max]^A; they ignore φ.", "",
           "Each exploring agent is compared with its family's control (`linear_greedy`, "
           "`online_dpo`, `greedy`: no bonus, both answers from π^(t)): R(T) − the control's, "
           "paired over seeds, with its 95% Student-t interval; *Holm p*: the paired t-test's p "
           f"adjusted by Holm's step-down procedure over all {len(comparisons)} comparisons "
           "of the section (bold: below 0.05); *detectable*: for a comparison not separated, "
           "the smallest |difference| a paired t-test at the Bonferroni level 0.05/m would have "
           f"detected with {POWER:.0%} power at the observed spread. The last column: the mean "
           f"per-step regret over the last {TAIL:.0%} of the steps over π_ref's at t = 1 (below "
           "1: learned; *collapsed*: its interval at or above 1; *unclear*: it contains 1).", ""]
  if missing:
    lines += [f"**Not yet run: {len(missing)} of {len(cells)} cells** of {scale.block} "
              "seeds; the seeds each agent ran are in the tables' *n* column, and a comparison "
              "uses the seeds both agents ran. The section's command computes the rest, "
              f"resuming from the cells saved in `{CELLS.relative_to(ROOT)}`.", ""]
  for X in scale.prompts:
    for d in scale.dims:
      present = [i for i in scale.instances if any(c[:3] == (i, X, d) for c in done)]
      if not present:
        continue
      fig = Figure(figsize=(4.2 * len(present), 3.6))
      axes = np.atleast_1d(fig.subplots(1, len(present), sharey=True))
      for ax, inst in zip(axes, present):
        _curves(ax, {c[3]: v for c, v in done.items() if c[:3] == (inst, X, d)},
                f"{inst}: |X| = {X}, d = {d}")
      axes[0].set_ylabel("per-step regret (mean, 95% band)")
      axes[-1].legend(fontsize=6, ncol=1, loc="center left", bbox_to_anchor=(1.01, 0.5))
      path = ctx.figdir / f"linear_X{X}_d{d}.png"
      fig.savefig(path, dpi=110, bbox_inches="tight")
      lines += [f"### |X| = {X}, d = {d}", "", f"![regret curves]({ctx.figdir.link(path)})", "",
                "| instance | agent | n | R(T) [95% CI] | − control, paired [95% CI] | Holm p "
                "| detectable | tail / π_ref's [95% CI] | s |",
                "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
      for c, v in done.items():
        if c[1:3] != (X, d):
          continue
        m, h = _interval(v["finals"])
        lm, lh = _interval(v["learned"])
        vs = (_cell_text(comparisons[c]) if c in comparisons
              else "control | | " if CONTROLS[c[3]] == c[3] else "— | | ")
        lines.append(f"| {c[0]} | {c[3]} | {len(v['finals'])} | {m:.1f} [{m - h:.1f}, "
                     f"{m + h:.1f}] | {vs} | "
                     f"{lm:.3f} [{lm - lh:.3f}, {lm + lh:.3f}] {_verdict(v['learned'])} | "
                     f"{float(v['seconds']):.0f} |")
      lines.append("")
  return "\n".join(lines), _finding(comparisons, scale, missing)


def _finding(comparisons: dict, scale: Sizes, missing: list) -> str:
  """One sentence per instance family: the separated comparisons, and the largest detectable
  difference among the others."""
  parts = []
  for inst in scale.instances:
    mine = {c: v for c, v in comparisons.items() if c[0] == inst}
    if not mine:
      continue
    ahead = [f"{c[3]} at |X| = {c[1]}, d = {c[2]} ({v.mean:+.1f})" for c, v in mine.items()
             if v.separated and v.mean < 0]
    behind = [f"{c[3]} at |X| = {c[1]}, d = {c[2]} ({v.mean:+.1f})" for c, v in mine.items()
              if v.separated and v.mean > 0]
    rest = [v.detectable for v in mine.values() if not v.separated]
    parts.append(f"{inst}: ahead of their control {', '.join(ahead) or 'none'}; behind it "
                 f"{', '.join(behind) or 'none'}" + (
                     f"; {len(rest)} not separated (smallest detectable differences "
                     f"{min(rest):.1f}–{max(rest):.1f})"
                     if rest else ""))
  seeds = sorted({c.n for c in comparisons.values()}) or [0]
  span = f"{seeds[0]}" if seeds[0] == seeds[-1] else f"{seeds[0]}–{seeds[-1]}"
  return (f"Shared-feature exploration (T = {scale.steps}, {span} of the design's {scale.seeds} "
          f"seeds per comparison, Holm over "
          f"{len(comparisons)} comparisons): " + "; ".join(parts)
          + (f" ({len(missing)} cells not yet run)" if missing else "") + ".")


def main(argv=None):
  """Computes missing cells only (a background job): `python -m benchmarks.reproduction.linear
  [--instances ...] [--prompts ...] [--families linear practical tabular]`."""
  import argparse
  p = argparse.ArgumentParser(description=main.__doc__.split("\n")[0])
  p.add_argument("--instances", nargs="+", default=list(INSTANCES), choices=list(INSTANCES))
  p.add_argument("--prompts", nargs="+", type=int, default=list(QUICK.prompts))
  families = {"linear": LINEAR, "practical": PRACTICAL, "tabular": TABULAR}
  p.add_argument("--families", nargs="+", default=list(families), choices=list(families))
  args = p.parse_args(argv)
  names = {n for f in args.families for n in families[f]}
  for c in _cells(QUICK):
    if c[0] in args.instances and c[1] in args.prompts and c[3] in names and load(QUICK, c) is None:
      compute(QUICK, c)


if __name__ == "__main__":
  main()
