"""The contextual linear dueling baselines (CoLSTIM, MaxInP, MaxMinLCB) beside the shared-linear
RLHF agents (linear/xpo, linear/algorithm1) and a K-armed one (Double TS, per prompt), on a
random contextual instance and the contextual trap, in the paper's regret (2.6) and the weak
and strong dueling regrets; paired differences against linear/xpo over the same seeds.

    PYTHONPATH=. python -m benchmarks.reproduction.contextual_dueling [--seeds 64] [--steps 500]

Prints a Markdown table per instance: mean R(T) over seeds with its 95% Student-t interval
(`rbx.core.results.ci`), then the paired differences agent − linear/xpo.
"""
from __future__ import annotations

import argparse
import time

import jax
import numpy as np

from rbx import rlhf
from rbx.core import results as results_lib

AGENTS = ("linear/xpo", "linear/algorithm1", "colstim", "maxinp", "maxminlcb", "double_ts")
BASE = "linear/xpo"
ALPHA = 3.0            # the linear agents' bonus weight (the dueling reproduction's α)
REGRETS = {"regret": "(2.6)", "weak_regret": "weak", "strong_regret": "strong"}


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


def _cell(values: np.ndarray) -> str:
  mean, low, high = results_lib.ci(values, axis=-1)
  return f"{mean:.1f} [{low:.1f}, {high:.1f}]"


def _paired(values: np.ndarray) -> str:
  """mean [95% Student-t interval] of a paired difference (not clipped at 0)."""
  from scipy import stats
  n = values.shape[-1]
  mean, sem = values.mean(), values.std(ddof=1) / np.sqrt(n)
  half = stats.t.ppf(0.975, n - 1) * sem
  return f"{mean:+.1f} [{mean - half:+.1f}, {mean + half:+.1f}]"


def main(argv=None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--seeds", type=int, default=64)
  parser.add_argument("--steps", type=int, default=500)
  args = parser.parse_args(argv)
  print(f"{args.seeds} seeds, T = {args.steps}; α = {ALPHA:g} for the linear RLHF agents, the "
        "dueling agents at their defaults.\n")
  for name, (env, title) in instances().items():
    start = time.perf_counter()
    res = rlhf.sweep(lambda agent, env=env: (env, rlhf.get(agent, alpha=ALPHA)),
                     {"agent": list(AGENTS)}, seeds=args.seeds, steps=args.steps,
                     progress=False)
    finals = {m: res.metric(m).final() for m in REGRETS}            # (agent, seed)
    lines = [f"**{title}** ({time.perf_counter() - start:.0f} s)", "",
             "| agent | (2.6) | weak | strong |", "|---|---:|---:|---:|"]
    for i, agent in enumerate(AGENTS):
      lines.append(f"| {agent} | " + " | ".join(_cell(finals[m][i]) for m in REGRETS) + " |")
    lines += ["", f"Paired over seeds, agent − {BASE}:", "",
              "| agent | (2.6) | weak | strong |", "|---|---:|---:|---:|"]
    base = AGENTS.index(BASE)
    for i, agent in enumerate(AGENTS):
      if i != base:
        lines.append(f"| {agent} | " + " | ".join(
            _paired(finals[m][i] - finals[m][base]) for m in REGRETS) + " |")
    print("\n".join(lines) + "\n", flush=True)


if __name__ == "__main__":
  main()
