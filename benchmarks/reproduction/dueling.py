"""The classic dueling baselines beside Algorithm 1, XPO, VPO and online DPO, in both regrets."""
from __future__ import annotations

import dataclasses
import sys

import jax
import numpy as np

from benchmarks.reproduction.common import Context
from rbx import rlhf
from rbx.core import results as results_lib, stats
from rbx.runs import demo

RLHF_AGENTS = ("algorithm1", "xpo", "vpo", "online_dpo")
DUELING = ("rucb", "rmed1", "double_ts", "rcs")
REGRETS = {"regret": "(2.6)", "weak_regret": "weak", "strong_regret": "strong"}


@dataclasses.dataclass(frozen=True)
class Sizes:
  """This section's sizes at one scale."""
  seeds: int           # seeds per agent and instance
  steps: int           # T


QUICK = Sizes(seeds=64, steps=500)
FULL = Sizes(seeds=256, steps=2000)


def instances() -> dict:
  """name -> (environment, one line): the demo's Examples 1–2 and a contextual trap."""
  trap = rlhf.random_contextual(jax.random.key(0), 10, 5, 4, beta=0.5, r_max=4.0, kappa=50.0)
  return {
      "example1": (demo.EXAMPLES["example1"](), "Example 1 (β = 0.5, r_max = 4, π_cal = 1_{a0})"),
      "example2": (demo.EXAMPLES["example2"](), "Example 2 (κ = 500, β = 0.1, r_max = 7)"),
      "trap": (trap, "contextual trap: |X| = 10, A = 5, d = 4, κ = 50, β = 0.5, r_max = 4"),
  }


def measure(scale: Sizes) -> dict:
  """name -> Results of every agent (RLHF_AGENTS, then DUELING) on each instance."""
  out = {}
  for name, (env, _) in instances().items():
    out[name] = rlhf.sweep(lambda agent, env=env: (env, rlhf.get(agent, alpha=demo.ALPHA)),
                           {"agent": [*RLHF_AGENTS, *DUELING]}, seeds=scale.seeds,
                           steps=scale.steps, progress=False)
  return out


def cell(values: np.ndarray) -> str:
  """mean [95% Student-t interval] of R(T) over seeds (`rbx.core.results.ci`)."""
  mean, low, high = results_lib.ci(values, axis=-1)
  return f"{mean:.1f} [{low:.1f}, {high:.1f}]"


def floor(env: rlhf.PreferenceEnv) -> float:
  """What deploying a point mass on each prompt's a* costs a step in (2.6):
  Σ_x ρ(x) (−β ln π*(a*(x) | x))."""
  per = jax.vmap(lambda r, p: -env.beta * rlhf.log_optimal_policy(r, p, env.beta)[
      jax.numpy.argmax(r)])(env.r_star, env.pi_ref)
  return max(0.0, float(np.dot(np.asarray(env.rho), np.asarray(per))))


def run(ctx: Context) -> tuple[str, str]:
  """Every agent's R(T) in the three regrets; paired differences against Algorithm 1."""
  scale = FULL if ctx.full else QUICK
  data = measure(scale)
  agents = [*RLHF_AGENTS, *DUELING]
  lines = ["## The classic dueling baselines in both regrets", "",
           f"{scale.seeds} seeds, T = {scale.steps}, α = {demo.ALPHA:g} for the RLHF schemes "
           "(online DPO: no bonus); the dueling agents with duelpy's defaults "
           "(`rbx.rlhf.learners.dueling`). Each cell: mean R(T) over seeds and its 95% "
           "interval, in the paper's regret (2.6) (the dueling agents deploy their recommended "
           "answer as a point mass) and the classic weak and strong dueling regrets against "
           "the Condorcet winner (`rbx.rlhf.dueling`).", ""]
  paired = {}
  for name, (_, title) in instances().items():
    res = data[name]
    lines += [f"**{title}**", "", "| agent | (2.6) | weak | strong |", "|---|---:|---:|---:|"]
    finals = {m: res.metric(m).final() for m in REGRETS}          # (agent, seed)
    for i, agent in enumerate(agents):
      lines.append(f"| {agent} | " + " | ".join(cell(finals[m][i]) for m in REGRETS) + " |")
    lines += ["", "Paired over seeds, dueling agent − Algorithm 1 (mean [95% interval]):", "",
              "| agent | (2.6) | weak | strong |", "|---|---:|---:|---:|"]
    for agent in DUELING:
      i = agents.index(agent)
      cells = []
      for m in REGRETS:
        c = stats.paired(finals[m][i], finals[m][0])
        paired[name, agent, m] = c
        cells.append(f"{c.mean:.1f} [{c.low:.1f}, {c.high:.1f}]")
      lines.append(f"| {agent} | " + " | ".join(cells) + " |")
    lines.append("")
  def count(instance, regret):
    """(dueling agents above Algorithm 1, below it): paired intervals clear of 0."""
    cells = [paired[instance, agent, regret] for agent in DUELING]
    return sum(c.low > 0 for c in cells), sum(c.high < 0 for c in cells)

  parts = []
  for name in instances():
    (up, down), (w_up, w_down), (s_up, s_down) = (count(name, m) for m in REGRETS)
    parts.append(f"{name}: (2.6) {up} above, {down} below; weak {w_up} above, {w_down} below; "
                 f"strong {s_up} above, {s_down} below")
  pays = [n for n in instances() if count(n, "regret")[0] == len(DUELING)]
  kl = [n for n in instances() if count(n, "strong_regret")[1] == len(DUELING)]
  floors = {n: floor(env) for n, (env, _) in instances().items()
            if isinstance(env, rlhf.PreferenceEnv)}
  finding = ("The four dueling agents against Algorithm 1, paired intervals clear of 0 (of 4 "
             "each): " + "; ".join(parts) + f". All four pay in (2.6) on "
             f"{', '.join(pays) or 'none'}; Algorithm 1 pays in strong dueling regret against "
             f"all four on {', '.join(kl) or 'none'}. A point mass on a* costs −β ln π*(a*) a "
             "step in (2.6): " + ", ".join(f"{n} {v:.3g}" for n, v in floors.items()) + ".")
  lines += [finding, ""]
  return "\n".join(lines), finding


def main() -> None:
  """`python -m benchmarks.reproduction.reproduce --only dueling` (its options too): runs the
  section, saves it with the line saying how it was measured, and reassembles the report."""
  from benchmarks.reproduction import reproduce
  reproduce.main(["--only", "dueling", *sys.argv[1:]])


if __name__ == "__main__":
  main()
