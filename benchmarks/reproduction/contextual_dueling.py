"""The contextual linear dueling baselines (CoLSTIM, MaxInP, MaxMinLCB) beside the shared-linear
RLHF agents (linear/xpo, linear/algorithm1), their no-exploration control (linear/greedy) and a
K-armed dueling agent (Double TS, per prompt), on a random contextual instance and the
contextual trap, in the paper's regret (2.6) and the weak and strong dueling regrets.

A section of REPRODUCTION.md:

    PYTHONPATH=. python -m benchmarks.reproduction.reproduce --only contextual_dueling

Each instance's table gives mean R(T) over seeds with its 95% Student-t interval
(`rbx.core.results.ci`); then every agent's paired difference against the control and against
linear/xpo over the same seeds (`rbx.core.stats.paired`), Holm-corrected over the section's
family of comparisons (`rbx.core.stats.holm`: every instance, agent and regret).
"""
from __future__ import annotations

import sys

import jax
import numpy as np

from benchmarks.reproduction.common import Context
from benchmarks.reproduction.dueling import FULL, QUICK, REGRETS, Sizes, cell, floor
from rbx import rlhf
from rbx.core import stats

CONTROL = "linear/greedy"    # the linear agents' no-exploration control (`rlhf.control`)
BASE = "linear/xpo"
AGENTS = (BASE, "linear/algorithm1", CONTROL, "colstim", "maxinp", "maxminlcb", "double_ts")
ALPHA = 3.0            # the linear agents' bonus weight (the dueling section's α)


def instances() -> dict:
  """name -> (environment, one line)."""
  return {
      "random": (rlhf.random_contextual(jax.random.key(0), 20, 5, 4, beta=0.5, r_max=4.0),
                 "random_contextual(key 0): |X| = 20, A = 5, d = 4, β = 0.5, r_max = 4, "
                 "π_ref uniform"),
      "trap": (rlhf.random_contextual(jax.random.key(0), 10, 5, 4, beta=0.5, r_max=4.0,
                                      kappa=50.0),
               "contextual trap: |X| = 10, A = 5, d = 4, κ = 50, β = 0.5, r_max = 4"),
  }


def _agent(name: str):
  """The agent: the linear RLHF schemes with α = ALPHA, the control and the dueling agents at
  their defaults."""
  return rlhf.get(name, alpha=ALPHA) if name in (BASE, "linear/algorithm1") else rlhf.get(name)


def measure(scale: Sizes) -> dict:
  """name -> {regret: R(T) per (agent, seed)}, AGENTS' order, and the sweep's seconds."""
  out = {}
  for name, (env, _) in instances().items():
    res = rlhf.sweep(lambda agent, env=env: (env, _agent(agent)), {"agent": list(AGENTS)},
                     seeds=scale.seeds, steps=scale.steps, progress=False, record="summary")
    out[name] = {m: np.asarray(res.metric(m).final()) for m in REGRETS}
  return out


def _paired(c: stats.Comparison) -> str:
  """A paired difference's cell: mean [95% interval], Holm's p, bold where separated."""
  text = f"{c.mean:+.1f} [{c.low:+.1f}, {c.high:+.1f}] p_H {c.p_holm:.2g}"
  return f"**{text}**" if c.separated else text


def compare(data: dict) -> dict:
  """(instance, reference, agent, regret) -> Holm-corrected paired `Comparison` of agent −
  reference, reference ∈ {CONTROL, BASE}, for every other agent: one family."""
  out = {}
  for name, finals in data.items():
    for ref in (CONTROL, BASE):
      r = AGENTS.index(ref)
      for i, agent in enumerate(AGENTS):
        if agent != ref:
          for m in REGRETS:
            out[name, ref, agent, m] = stats.paired(finals[m][i], finals[m][r])
  return stats.holm(out)


def run(ctx: Context) -> tuple[str, str]:
  """Every agent's R(T) in the three regrets; paired differences against the control and
  linear/xpo, Holm-corrected."""
  scale = FULL if ctx.full else QUICK
  data = measure(scale)
  comparisons = compare(data)
  lines = ["## The contextual dueling baselines beside the shared-linear agents", "",
           f"{scale.seeds} seeds, T = {scale.steps}; α = {ALPHA:g} for linear/xpo and "
           f"linear/algorithm1; their no-exploration control {CONTROL} (both answers from "
           "π_{θ̂ᵀφ}, no bonus); CoLSTIM, MaxInP and MaxMinLCB "
           "(`rbx.rlhf.learners.contextual_dueling`: one shared θ̂, deploying argmax θ̂ᵀφ) and "
           "Double TS (per prompt, without the features) at their defaults. Each cell: mean "
           "R(T) over seeds and its 95% interval, in the paper's regret (2.6) and the weak and "
           "strong dueling regrets against each prompt's Condorcet winner. Then each agent "
           f"minus {CONTROL}, and minus {BASE}, paired over the seeds (mean, 95% Student-t "
           f"interval, `rbx.core.stats.paired`) with Holm's adjusted p over the section's "
           f"{len(comparisons)} comparisons (`rbx.core.stats.holm`); bold: p_H < 0.05.", ""]
  for name, (_, title) in instances().items():
    finals = data[name]
    lines += [f"**{title}**", "", "| agent | (2.6) | weak | strong |", "|---|---:|---:|---:|"]
    for i, agent in enumerate(AGENTS):
      lines.append(f"| {agent} | " + " | ".join(cell(finals[m][i]) for m in REGRETS) + " |")
    for ref in (CONTROL, BASE):
      lines += ["", f"Paired over seeds, agent − {ref}:", "",
                "| agent | (2.6) | weak | strong |", "|---|---:|---:|---:|"]
      for agent in AGENTS:
        if agent != ref:
          lines.append(f"| {agent} | " + " | ".join(
              _paired(comparisons[name, ref, agent, m]) for m in REGRETS) + " |")
    lines.append("")
  finding = _finding(data, comparisons)
  lines += [finding, ""]
  return "\n".join(lines), finding


def _finding(data: dict, comparisons: dict) -> str:
  """One sentence: where the contextual dueling agents stand against the control and
  linear/xpo (Holm-separated, per regret), and their (2.6) floor."""
  dueling = [a for a in AGENTS if a in ("colstim", "maxinp", "maxminlcb")]
  parts = []
  for name in instances():
    cells = []
    for m, label in REGRETS.items():
      below = sum(comparisons[name, BASE, a, m].separated and comparisons[name, BASE, a, m].high
                  < 0 for a in dueling)
      above = sum(comparisons[name, BASE, a, m].separated and comparisons[name, BASE, a, m].low
                  > 0 for a in dueling)
      cells.append(f"{label} {below} below, {above} above")
    parts.append(f"{name}: " + ", ".join(cells))
  floors = {name: floor(env.base) for name, (env, _) in instances().items()}
  return ("CoLSTIM, MaxInP and MaxMinLCB against linear/xpo (of 3 each, Holm-separated "
          "paired differences): " + "; ".join(parts) + ". A point mass on each prompt's a* "
          "costs Σ_x ρ(x)(−β ln π*(a*(x) | x)) a step in (2.6): "
          + ", ".join(f"{n} {v:.3g}" for n, v in floors.items()) + ".")


def main() -> None:
  """`python -m benchmarks.reproduction.reproduce --only contextual_dueling` (its options
  too): runs the section, saves it with the line saying how it was measured, and reassembles
  the report."""
  from benchmarks.reproduction import reproduce
  reproduce.main(["--only", "contextual_dueling", *sys.argv[1:]])


if __name__ == "__main__":
  main()
