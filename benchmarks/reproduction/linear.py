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

The statistics are `benchmarks.reproduction.powered`'s: paired Student-t intervals against
the family's control, Holm over every comparison, and the smallest detectable difference.
"""
from __future__ import annotations

import dataclasses

import jax
import numpy as np
from matplotlib.figure import Figure

from benchmarks import ROOT
from benchmarks.reproduction import powered
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
CELLS = powered.Cells(ROOT / "benchmarks" / "results" / "reproduction" / "linear_cells", "linear",
                     "{}_X{}_d{}_{}_{}.npz")
"""(instance, |X|, d, agent, seed block) -> its saved cell."""


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


def load(scale: Sizes, cell) -> dict | None:
  """A saved cell with the current settings, or None."""
  return CELLS.load(cell, _settings(scale, cell))


def compute(scale: Sizes, cell) -> dict:
  """Runs one cell and saves it (`powered.Cells.compute`)."""
  inst, X, d, name, _ = cell
  env = rlhf.random_contextual(jax.random.key(0), X, ACTIONS, d, BETA, R_MAX, **INSTANCES[inst])
  return CELLS.compute(cell, _settings(scale, cell), env, _agent(name)[0], _seeds(scale, cell),
                       scale.steps)


def run(ctx: Context) -> tuple[str, str]:
  """Computes the missing cells (within `ctx.budget` seconds, if set), then the report from
  every cell present."""
  scale = FULL if ctx.full else QUICK
  cells = _cells(scale)
  missing, done, comparisons = powered.evaluate(      # done: (instance, |X|, d, agent) -> runs
      cells, lambda c: load(scale, c), lambda c: compute(scale, c), ctx.budget,
      lambda c: c[:3] + (CONTROLS[c[3]],))
  T, n = scale.steps, scale.seeds
  lines = [f"## {TITLE}", "",
           f"Design: |X| ∈ {powered.as_set(scale.prompts)}, d ∈ {powered.as_set(scale.dims)}, A = {ACTIONS}, β = "
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
           "(`data = \"buffer\"`), the bonus at the round's prompt estimated by each scheme's "
           "default `cal_samples` (the round's a2, drawn from π_cal, for algorithm1 and xpo; one "
           "fresh draw from π_cal for vpo), and the ℓ2 term "
           "(λ/2)‖θ‖² with λ = 1 — a Gaussian prior N(0, I) on θ, the distribution θ* is drawn "
           "from (a departure from the paper's box; docs/practical_rlhf.md). Tabular exact agents "
           f"(|X| = {scale.prompts[0]} only): every prompt a separate bandit in the box "
           "[0, r_max]^A; they ignore φ. |X| = 10⁴ is not in this design: no accelerator was "
           "lent to run it, and on this CPU a linear agent runs 46–48 seed-steps/s there at d = 16 "
           "(benchmarks/README.md, `practical_throughput`): about 23 minutes per block of 64 seeds "
           "at T = 1,000: days of CPU for the linear agents' 96 cells of 256 seeds "
           "alone.", "",
           "The controls: `linear_greedy`, `online_dpo`, `greedy`. "
           + powered.EXPLAINED.format(m=len(comparisons)), ""]
  lines += powered.not_yet_run(missing, cells, scale.block, CELLS)
  lines += powered.revisions(done)
  for X in scale.prompts:
    for d in scale.dims:
      present = [i for i in scale.instances if any(c[:3] == (i, X, d) for c in done)]
      if not present:
        continue
      fig = Figure(figsize=(4.2 * len(present), 3.6))
      axes = np.atleast_1d(fig.subplots(1, len(present), sharey=True))
      for ax, inst in zip(axes, present):
        powered.curves(ax, {c[3]: v for c, v in done.items() if c[:3] == (inst, X, d)},
                f"{inst}: |X| = {X}, d = {d}")
      axes[0].set_ylabel("per-step regret (mean, 95% band)")
      axes[-1].legend(fontsize=6, ncol=1, loc="center left", bbox_to_anchor=(1.01, 0.5))
      path = ctx.figdir / f"linear_X{X}_d{d}.png"
      fig.savefig(path, dpi=110, bbox_inches="tight")
      lines += [f"### |X| = {X}, d = {d}", "", f"![regret curves]({ctx.figdir.link(path)})", "",
                "| instance | agent | " + powered.HEADER, "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
      for c, v in done.items():
        if c[1:3] == (X, d):
          lines.append(f"| {c[0]} | {c[3]} | "
                       + powered.row(v, comparisons.get(c), CONTROLS[c[3]] == c[3]) + " |")
      lines.append("")
  return "\n".join(lines), _finding(comparisons, scale, missing)


def _finding(comparisons: dict, scale: Sizes, missing: list) -> str:
  """One clause per instance family (`powered.part`)."""
  name = lambda c: f"{c[3]} at |X| = {c[1]}, d = {c[2]}"
  parts = [powered.part(inst, mine, name, "their control") for inst in scale.instances
           if (mine := {c: v for c, v in comparisons.items() if c[0] == inst})]
  return powered.finding("Shared-feature exploration", comparisons, parts, scale.steps,
                         scale.seeds, missing)


def main(argv=None):
  """Computes missing cells only (a background job): `python -m benchmarks.reproduction.linear
  [--instances ...] [--prompts ...] [--dims ...] [--blocks ...] [--families linear practical
  tabular]`. Compiled programs are kept on disk (every sweep's cache,
  `rbx.core.compile_cache`): an agent's later seed blocks on the same instance load its
  program instead of compiling it."""
  import argparse
  p = argparse.ArgumentParser(description=main.__doc__.split("\n")[0])
  p.add_argument("--instances", nargs="+", default=list(INSTANCES), choices=list(INSTANCES))
  p.add_argument("--prompts", nargs="+", type=int, default=list(QUICK.prompts))
  p.add_argument("--dims", nargs="+", type=int, default=list(QUICK.dims))
  p.add_argument("--blocks", nargs="+", type=int, default=list(range(QUICK.seeds // QUICK.block)),
                 help="seed blocks to compute (block b is seeds 64b … 64b + 63)")
  families = {"linear": LINEAR, "practical": PRACTICAL, "tabular": TABULAR}
  p.add_argument("--families", nargs="+", default=list(families), choices=list(families))
  args = p.parse_args(argv)
  names = {n for f in args.families for n in families[f]}
  for c in _cells(QUICK):
    if (c[0] in args.instances and c[1] in args.prompts and c[2] in args.dims
        and c[3] in names and c[4] in args.blocks and load(QUICK, c) is None):
      compute(QUICK, c)


if __name__ == "__main__":
  main()
