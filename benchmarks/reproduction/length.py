"""Regret against the answer length L on Example 2 over sequences: is exploration exponentially
hard in L, and does optimism at the α the theory sets change that?

The instance is `hard_sequences` at |X| = 1, V = 2: r*(x, y) = (r_max/L)·#{l : y_l = y*_l},
π_ref gives each of y*'s tokens mass ε, so π_ref(y*|x) = ε^L (Example 2's 1/κ); r_max = 2L
(a token's share of the reward fixed), d = 8, β = 0.25, `key(0)`, answers as token arrays
(`rbx.rlhf.tokens`, exact regret by recursion). Online DPO (no bonus: the control) and XPO,
VPO and Algorithm 1 at three α's: 1 (constant); Theorem 1's floor A log T (A = V^L, constant);
and Proposition 3's α_t with the instance's own Assumption-1 κ = ((1 − ε)/ε)^L (τ = 1, V = 2:
π_ref's odds of the worst answer against y*; `rbx.rlhf.assumptions.kappa` gives the same where
the answer pairs enumerate, a test). The bonus is each agent's default estimate (the round's
a2, or one draw from π_cal); at the floor's α and the lengths `Design.exact`, the same agents
with the bonus exact (`cal_samples = None`: E_{π_cal} by the forward pass over π_cal's
marginals) are the control for the estimate's noise (α kind `floor_exact`); and on the
log-linear series at ε = `Design.epsilon`, XPO and Algorithm 1 at α = 0 (kind `0`: their own
draws of a1 and a2, no bonus) split each scheme's difference to online DPO into its sampling
effect (α = 0 − online DPO) and its bonus effect (α − α = 0); VPO's draws are online DPO's, so
its sampling effect is 0 by the scheme table. The log-linear
policy (θ ∈ R^d shared by every position) at every L, the prefix-table policy (one logit per
prefix, nothing shared) where V^L ≤ 256.
T = 1,000; seeds in blocks of 64, every block a saved cell (`CELLS`: the job resumes).

    python -m benchmarks.reproduction.length --estimate          # hours of this machine, measured
    python -m benchmarks.reproduction.length --blocks 0          # block 0's missing cells
    python -m benchmarks.reproduction.length --blocks 0 --lengths 8 --policies tabular
    python -m benchmarks.reproduction.length --report OUT.md     # tables from the cells present
    python -m benchmarks.reproduction.length --split 1           # sampling + bonus effects

The report: per (policy, ε, L) and agent, R(T) (mean, median [10%, 90%]), the fraction of seeds
that have not found y* (π^(T)(y*|x) < 1/2, the `p_best` metric at T), and R(T) − online DPO's
paired over common seeds with 95% t intervals and Holm's correction over every comparison.
"""
from __future__ import annotations

import argparse
import dataclasses
import math

import jax
import numpy as np

from benchmarks import ROOT, timing
from benchmarks.reproduction import powered
from rbx import rlhf, schedules
from rbx.core import stats
from rbx.rlhf import schemes, sequences

DIM, BETA, REWARD_PER_TOKEN, VOCAB, PROMPTS = 8, 0.25, 2.0, 2, 1
AGENTS = ("sequence_dpo", "sequence_xpo", "sequence_vpo", "sequence_algorithm1")
CONTROL = "sequence_dpo"
ALPHAS = ("1", "floor", "proposition3", "floor_exact", "0")
"""α = 1; Theorem 1's floor A log T; Proposition 3's α_t with the instance's κ; the floor with
the bonus exact (`cal_samples = None`), at the log-linear policy's `Design.exact` lengths; 0,
the sampling-matched control (module docstring)."""
ZERO = "0"
EXACT = "_exact"
CELLS = powered.Cells(ROOT / "benchmarks" / "results" / "reproduction" / "length_cells",
                      "length", "{}_eps{}_L{}_{}_alpha{}_{}.npz")
"""(policy, ε, L, agent, α, seed block) -> its saved cell."""


@dataclasses.dataclass(frozen=True)
class Design:
  """The experiment's sizes."""
  lengths: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)    # at ε = `epsilon`
  epsilon: float = 0.02
  epsilons: tuple[float, ...] = (0.1, 0.3)                # beside it, at L = `at_length`
  at_length: int = 8
  tabular: int = 256                  # the prefix table where V^L ≤ this many answers
  exact: tuple[int, ...] = (4, 8, 16)  # the log-linear policy's lengths with `floor_exact`
  steps: int = 1000
  block: int = 64
  blocks: int = 4                     # 256 seeds


DESIGN = Design()


def env(epsilon: float, L: int, policy: str = "loglinear"):
  """The hard instance at ε and L (module docstring): answers as token arrays for the
  log-linear policy, enumerated for the prefix table."""
  return sequences.hard_sequences(jax.random.key(0), PROMPTS, VOCAB, L, DIM, BETA,
                                  REWARD_PER_TOKEN * L, epsilon,
                                  enumerate=policy == "tabular")


def kappa(epsilon: float, L: int) -> float:
  """Assumption 1's κ of the instance at τ = 1, V = 2: ((1 − ε)/ε)^L (float64)."""
  return ((1.0 - epsilon) / epsilon) ** L


def alpha(kind: str, epsilon: float, L: int, steps: int):
  """The schedule of α kind `kind` (`ALPHAS`) on the instance at ε, L and horizon `steps`."""
  kind = kind.removesuffix(EXACT)
  A = VOCAB ** L
  if kind in ("1", ZERO):
    return schedules.constant(float(kind))
  if kind == "floor":
    return schedules.constant(A * math.log(steps))
  return schedules.proposition3(A, steps, BETA, REWARD_PER_TOKEN * L, kappa(epsilon, L))


def agent(name: str, policy: str, kind: str, epsilon: float, L: int, steps: int):
  """The agent at its defaults (20 Adam steps of rate 0.1 a round, λ = 1, the buffer); an
  α kind ending in `EXACT` takes the bonus exactly (`cal_samples = None`)."""
  if name == CONTROL:
    return rlhf.get(name, policy=policy)
  exact = {"cal_samples": None} if kind.endswith(EXACT) else {}
  return rlhf.get(name, policy=policy, alpha=alpha(kind, epsilon, L, steps), **exact)


def own_draws(name: str) -> bool:
  """Whether agent `name` draws a1 and a2 otherwise than online DPO (the scheme table's
  sources), so that its α = 0 run is a control of its own: XPO's and Algorithm 1's, not VPO's."""
  row, control = (schemes.SCHEMES[rlhf.FAMILY.agents.resolve(n).partition("/")[2]]
                  for n in (name, CONTROL))
  return (row.first, row.second) != (control.first, control.second)


def cells(design: Design = DESIGN) -> list[tuple]:
  """(policy, ε, L, agent, α, block) in the order computed: block by block, the cheapest
  first (short answers, the log-linear policy before the prefix table)."""
  points = ([(design.epsilon, L) for L in design.lengths]
            + [(e, design.at_length) for e in design.epsilons])
  out = []
  for b in range(design.blocks):
    for policy in ("loglinear", "tabular"):
      for e, L in sorted(points, key=lambda p: (p[1], p[0])):
        if policy == "tabular" and VOCAB ** L > design.tabular:
          continue
        series = policy == "loglinear" and e == design.epsilon
        kinds = lambda name: [k for k in ALPHAS if (
            not k.endswith(EXACT) or (series and L in design.exact)) and (
            k != ZERO or (series and own_draws(name)))]
        out += [(policy, e, L, name, kind, b) for name in AGENTS
                for kind in (("-",) if name == CONTROL else kinds(name))]
  return out


def _settings(design: Design, cell) -> dict:
  policy, e, L, name, kind, b = cell
  return {"policy": policy, "epsilon": e, "L": L, "V": VOCAB, "X": PROMPTS, "d": DIM,
          "beta": BETA, "r_max": REWARD_PER_TOKEN * L, "T": design.steps, "agent": name,
          "alpha": kind, "seeds": [b * design.block, (b + 1) * design.block - 1]}


def compute(design: Design, cell) -> dict:
  policy, e, L, name, kind, b = cell
  return CELLS.compute(cell, _settings(design, cell), env(e, L, policy),
                       agent(name, policy, kind, e, L, design.steps),
                       list(range(b * design.block, (b + 1) * design.block)), design.steps,
                       last=("p_best",))


def estimate(design: Design = DESIGN, budget: float = 10.0) -> list[str]:
  """The design's wall-clock hours on this machine (a sweep on every core, as the cells run):
  each (policy, L) timed for `budget` seconds of running (Algorithm 1 at α = 1, one block's
  seeds), times its cells; printed lines."""
  rates = {}
  for policy, e, L, *_ in cells(dataclasses.replace(design, blocks=1)):
    if (policy, L) not in rates:
      instance = env(e, L, policy)
      ag = agent("sequence_algorithm1", policy, "1", e, L, design.steps)
      rates[policy, L] = timing.sweep(lambda: (instance, ag), {}, design.block, design.steps,
                                      budget, chunk=50)["seed_steps_per_second"]
  seconds = sum(design.block * design.steps / rates[c[0], c[2]] for c in cells(design))
  lines = ["| policy | L | seed-steps/s |", "|---|---:|---:|"]
  lines += [f"| {p} | {L} | {r:,.0f} |" for (p, L), r in sorted(rates.items())]
  per_block = seconds / design.blocks
  lines += ["", f"{len(cells(design))} cells ({design.blocks} blocks of {design.block} seeds, "
            f"T = {design.steps}): {seconds / 3600:.1f} hours of this machine; one block "
            f"{per_block / 3600:.1f} h"]
  return lines


def present(design: Design = DESIGN) -> tuple[list, dict]:
  """(the design's cells not saved, (cell without its block) -> its saved blocks combined)."""
  every = cells(design)
  saved = {c: CELLS.load(c, _settings(design, c)) for c in every}
  return [c for c in every if saved[c] is None], powered.gather(every, saved)


def figure(path, design: Design = DESIGN) -> None:
  """R(T)/L against L at ε = `design.epsilon` (mean and 95% t interval over seeds, log scale), a
  panel a policy with cells, a line per agent and α; and the fraction of seeds that have not
  found y*."""
  from matplotlib.figure import Figure
  _, done = present(design)
  drawn = [p for p in ("loglinear", "tabular") if any(c[0] == p for c in done)]
  fig = Figure(figsize=(5 * len(drawn), 6.4))
  axes = fig.subplots(2, len(drawn), sharex=True, squeeze=False)
  styles = {"-": "-.", "1": "-", "floor": "--", "proposition3": ":",
            "floor_exact": (0, (1, 3)), ZERO: (0, (5, 1))}
  for col, policy in enumerate(drawn):
    for name in AGENTS:
      for kind in styles:
        pts = sorted((c[2], v) for c, v in done.items()
                     if c[:2] == (policy, design.epsilon) and c[3:] == (name, kind))
        if not pts:
          continue
        L = np.array([p[0] for p in pts])
        m, h = np.array([powered.interval(p[1]["finals"]) for p in pts]).T
        colour = powered.SCHEME_COLOURS[name.split("_")[-1]]
        label = name.removeprefix("sequence_") + ("" if kind == "-" else f", α {kind}")
        axes[0, col].errorbar(L, m / L, yerr=h / L, fmt="o", linestyle=styles[kind],
                              color=colour, ms=3, capsize=2, label=label)
        axes[1, col].plot(L, [np.mean(p[1]["last_p_best"] < 0.5) for p in pts], marker="o",
                          linestyle=styles[kind], color=colour, ms=3)
    axes[0, col].set_title(f"{policy}, ε = {design.epsilon:g}, |X| = {PROMPTS}, V = {VOCAB}",
                           fontsize=9)
    axes[1, col].set_xlabel("length L (π_ref(y*) = ε^L)")
    axes[1, col].set_xscale("log", base=2)
    axes[0, col].set_yscale("log")
  axes[0, 0].set_ylabel("R(T) / L")
  axes[1, 0].set_ylabel("seeds not finding y* at T")
  handles, labels = axes[0, 0].get_legend_handles_labels()
  fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.02), ncol=4, fontsize=7)
  fig.savefig(path, dpi=100, bbox_inches="tight")


def _control(cell) -> tuple:
  """The (policy, ε, L) cell's online DPO."""
  return cell[:3] + (CONTROL, "-")


def _paired(a: dict, b: dict):
  n = min(len(a["finals"]), len(b["finals"]))
  return stats.paired(a["finals"][:n], b["finals"][:n])


def compared(done: dict) -> dict:
  """Every scheme's R(T) − online DPO's at its (policy, ε, L), keyed by its cell, and its bonus
  effect, R(T) − the same scheme's at α = 0, keyed (cell, "bonus"); paired over the seeds both
  ran, Holm over all of them (`rbx.core.stats`)."""
  family = {}
  for c, v in done.items():
    if c[3] != CONTROL and _control(c) in done:
      family[c] = _paired(v, done[_control(c)])
    zero = c[:4] + (ZERO,)
    if c[4] not in ("-", ZERO) and zero in done:
      family[c, "bonus"] = _paired(v, done[zero])
  return stats.holm(family)


def _difference(m: stats.Comparison) -> str:
  """A paired difference as the tables print it: mean [95% t], bold where Holm separates it."""
  bold = "**" if m.separated else ""
  return f"{bold}{m.mean:+.0f}{bold} [{m.low:+.0f}, {m.high:+.0f}]"


def split(design: Design = DESIGN, kind: str = "1") -> list[str]:
  """One row per length of the log-linear series at ε = `design.epsilon`: each scheme's R(T) −
  online DPO's at α kind `kind` (total) = its sampling effect (at α = 0 − online DPO) + its
  bonus effect (at `kind` − at α = 0), paired intervals, bold: Holm's p < 0.05 over every
  comparison of `compared`."""
  _, done = present(design)
  family = compared(done)
  names = [n for n in AGENTS[1:] if own_draws(n)]
  head = " | ".join(f"{n.removeprefix('sequence_')}: {part}" for n in names
                    for part in (f"total (α {kind})", "sampling (α 0)", "bonus"))
  lines = [f"| L | online DPO: R(T) | {head} |", "|---:|---:|" + "---:|" * 3 * len(names)]
  for L in sorted({c[2] for c in done if c[:2] == ("loglinear", design.epsilon)}):
    key = ("loglinear", design.epsilon, L)
    if key + (CONTROL, "-") not in done:
      continue
    cols = [_difference(family[k]) if k in family else "" for n in names
            for k in (key + (n, kind), key + (n, ZERO), (key + (n, kind), "bonus"))]
    lines.append(f"| {L} | {done[key + (CONTROL, '-')]['finals'].mean():.0f} | "
                 + " | ".join(cols) + " |")
  return lines


def summary(design: Design = DESIGN, kinds: tuple[str, ...] = ALPHAS) -> list[str]:
  """One row per (policy, ε, L): online DPO's R(T) and its seeds not finding y*, then each
  scheme's R(T) − online DPO's at the α kinds `kinds` (bold: Holm's p < 0.05 over every
  comparison of the cells present), with its seeds not finding y*."""
  _, done = present(design)
  family = compared(done)
  columns = [(name, kind) for name in AGENTS[1:] for kind in kinds]
  head = " | ".join(f"{n.removeprefix('sequence_')}, α {k}" for n, k in columns)
  lines = [f"| policy | ε | L | π_ref(y*) | online DPO: R(T) (not found) | {head} |",
           "|---|---:|---:|---:|---:|" + "---:|" * len(columns)]
  found = lambda v: f"{np.mean(v['last_p_best'] < 0.5):.0%}"
  for key in sorted({c[:3] for c in done if c[3] == CONTROL}):
    dpo = done[key + (CONTROL, "-")]
    cols = []
    for name, kind in columns:
      c = key + (name, kind)
      cols.append(f"{_difference(family[c])} ({found(done[c])})" if c in family else "")
    lines.append(f"| {key[0]} | {key[1]:g} | {key[2]} | {key[1] ** key[2]:.0e} | "
                 f"{dpo['finals'].mean():.0f} ({found(dpo)}) | " + " | ".join(cols) + " |")
  return lines


def report(design: Design = DESIGN) -> list[str]:
  """The tables from the cells present (markdown lines)."""
  missing, done = present(design)
  family = compared(done)
  every = len(cells(design))
  lines = [f"{every - len(missing)} of {every} cells present "
           f"({design.block} seeds a cell, T = {design.steps}); Holm over {len(family)} "
           "comparisons.", "",
           "| policy | ε | L | π_ref(y*) | agent | α | n | R(T) | median [10%, 90%] | "
           "not found y* | − online DPO [95% t] | Holm p |",
           "|---|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|"]
  for c in sorted(done, key=lambda c: (c[0], c[1], c[2], AGENTS.index(c[3]), c[4])):
    v = done[c]
    q10, med, q90 = np.quantile(v["finals"], (0.1, 0.5, 0.9))
    stuck = float(np.mean(v["last_p_best"] < 0.5))
    comp = family.get(c)
    vs = ("control | " if c[3] == CONTROL else "— | ") if comp is None else (
        f"{'**' if comp.separated else ''}{comp.mean:+.1f}{'**' if comp.separated else ''} "
        f"[{comp.low:+.1f}, {comp.high:+.1f}] | {comp.p_holm:.2g}")
    lines.append(f"| {c[0]} | {c[1]:g} | {c[2]} | {c[1] ** c[2]:.1e} | "
                 f"{c[3].removeprefix('sequence_')} | {c[4]} | {len(v['finals'])} | "
                 f"{v['finals'].mean():.1f} | {med:.1f} [{q10:.1f}, {q90:.1f}] | {stuck:.0%} | "
                 f"{vs} |")
  return lines


def main(argv=None) -> list[str]:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--estimate", action="store_true", help="print the design's hours on this machine")
  p.add_argument("--blocks", nargs="*", type=int, help="compute these seed blocks' missing cells")
  p.add_argument("--lengths", nargs="*", type=int, help="only these L")
  p.add_argument("--policies", nargs="*", choices=["loglinear", "tabular"], help="only these")
  p.add_argument("--report", help="write the tables of the cells present to this file")
  p.add_argument("--figure", help="draw R(T)/L against L from the cells present to this file")
  p.add_argument("--summary", nargs="*", choices=ALPHAS, help="print one row per length, the "
                 "schemes' differences to online DPO at these α kinds")
  p.add_argument("--split", choices=[k for k in ALPHAS if k != ZERO], help="print the "
                 "log-linear series' differences to online DPO at this α kind as sampling + "
                 "bonus effects")
  args = p.parse_args(argv)
  lines = []
  if args.estimate:
    lines += estimate()
  if args.blocks is not None:
    for c in cells():
      if (c[-1] in args.blocks and (not args.lengths or c[2] in args.lengths)
          and (not args.policies or c[0] in args.policies)
          and CELLS.load(c, _settings(DESIGN, c)) is None):
        compute(DESIGN, c)
  if args.summary is not None:
    lines += summary(kinds=tuple(args.summary) or ALPHAS)
  if args.split:
    lines += split(kind=args.split)
  if args.figure:
    figure(args.figure)
  if args.report:
    lines += report()
    with open(args.report, "w") as f:
      f.write("\n".join(lines) + "\n")
  print(*lines, sep="\n")
  return lines


if __name__ == "__main__":
  main()
