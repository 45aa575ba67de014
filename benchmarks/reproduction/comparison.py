"""Algorithm 1 against VPO and XPO at equal α: the demo's examples and random instances."""
from __future__ import annotations

import dataclasses
import jax
import jax.numpy as jnp
import numpy as np
from benchmarks.reproduction.common import AGENTS, Context, png

from rbx import rlhf
from rbx.runs import demo
from rbx.core import plots
from rbx.core import results as results_lib


@dataclasses.dataclass(frozen=True)
class Sizes:
  """This section's sizes at one scale."""
  compare_seeds: int   # seeds on the demo's examples
  compare_steps: int   # their horizon
  random_instances: int   # random instances per deviation
  random_seeds: int   # seeds per instance
  random_steps: int   # their horizon


QUICK = Sizes(
    compare_seeds=64, compare_steps=500, random_instances=3, random_seeds=32, random_steps=300)
FULL = Sizes(
    compare_seeds=1024, compare_steps=2000, random_instances=16, random_seeds=256,
    random_steps=2000)


def run(ctx: Context) -> tuple[str, str]:
  """Algorithm 1 vs VPO vs XPO on the demo's Examples 1-2 and on random instances."""
  scale, figdir = (FULL if ctx.full else QUICK), ctx.figdir
  lines = ["## Algorithm 1 against VPO and XPO", "",
           f"Same constant α = {demo.ALPHA:g} for every scheme, {scale.compare_seeds} seeds, "
           f"T = {scale.compare_steps}; the examples' settings are those of `rbx demo` "
           "(Example 1: β = 0.5, r_max = 4, π_cal = 1_{a0}; Example 2: κ = 500, β = 0.1, "
           "r_max = 7). R(T) is the cumulative regret (2.6); \"stuck\" is the fraction of "
           "seeds still at least 1/2 (Example 1) or 0.01 (Example 2) suboptimal at T.", "",
           "| example | agent | R(T) mean ± std | 95% CI | stuck at T |",
           "|---|---|---:|---:|---:|"]
  figures, versus = [], []
  for name, make_env in demo.EXAMPLES.items():
    env = make_env()
    res = rlhf.sweep(lambda agent: (env, rlhf.get(agent, alpha=demo.ALPHA)),
                     {"agent": list(AGENTS)}, seeds=scale.compare_seeds, steps=scale.compare_steps)
    final = res.final()
    mean, std, half = results_lib.mean_ci(final, axis=-1)
    for i, agent in enumerate(AGENTS):
      stuck = np.mean(res.regret[i, :, -1] >= demo.THRESHOLDS[name])
      lines.append(f"| {name} | {agent} | {mean[i]:.1f} ± {std[i]:.1f} | "
                   f"[{mean[i] - half[i]:.1f}, {mean[i] + half[i]:.1f}] | {stuck:.0%} |")
    failing = {"example1": "vpo", "example2": "xpo"}[name]
    versus.append(f"{name}: Algorithm 1 {mean[0]:.1f} vs {failing} "
                  f"{mean[AGENTS.index(failing)]:.1f}")
    figures.append(png(plots.save(plots.cumulative(res), figdir / f"compare_{name}")))
  lines += ["", " ".join(f"![{p.stem}]({figdir.link(p)})" for p in figures), ""]

  beta, r_max, A, deviations = 0.5, 4.0, 4, (0.0, 1.0, 2.0)
  instances = [float(i) for i in range(scale.random_instances)]

  def build(agent, instance, deviation):
    key = jax.random.key(jnp.asarray(instance).astype(jnp.int32))
    env = rlhf.random_instance(key, 1, A, beta, r_max, deviation)
    return env, rlhf.get(agent, alpha=demo.ALPHA)

  res = rlhf.sweep(build, {"agent": list(AGENTS), "instance": instances,
                           "deviation": list(deviations)},
                   seeds=scale.random_seeds, steps=scale.random_steps)
  final = res.final()                                  # (agent, instance, deviation, seed)
  lines += [f"Random instances: one prompt, A = {A}, r* ~ U[0, {r_max:g}]^A, β = {beta:g}, "
            f"π_ref ∝ exp((1 − d) r*) (d = 0: π_ref = π_HF, 1: uniform, 2: reversed); VPO "
            f"calibrates with π_ref. {scale.random_instances} instances per d × "
            f"{scale.random_seeds} seeds, T = {scale.random_steps}, α = {demo.ALPHA:g}. Mean R(T) "
            "over instances and seeds (± the std of the instances' means), and the number of "
            "instances on which Algorithm 1's mean is the lowest of the three.", "",
            "| d | algorithm1 | vpo | xpo | Algorithm 1 best on |", "|---:|---:|---:|---:|---:|"]
  total_wins = 0
  for j, d in enumerate(deviations):
    per_instance = final[:, :, j].mean(axis=-1)        # (agent, instance)
    cells = [f"{per_instance[i].mean():.1f} ± {per_instance[i].std():.1f}"
             for i in range(len(AGENTS))]
    wins = int(np.sum(np.argmin(per_instance, axis=0) == 0))
    total_wins += wins
    lines.append(f"| {d:g} | " + " | ".join(cells) + f" | {wins}/{len(instances)} |")
  lines.append("")
  per_agent = final.mean(axis=(1, 2, 3))
  summary = (f"Mean R(T) at equal α = {demo.ALPHA:g}: {'; '.join(versus)}. Random instances: "
             + ", ".join(f"{a} {m:.1f}" for a, m in zip(AGENTS, per_agent))
             + f"; Algorithm 1 lowest on {total_wins} of {len(instances) * len(deviations)}.")
  return "\n".join(lines), summary
