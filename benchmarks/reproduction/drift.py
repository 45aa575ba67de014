"""Preferences that drift: does Algorithm 1's optimism help or hurt when the truth moves?

On one random contextual instance (|X| = 20, A = 5, d = 4, β = 0.5, r_max = 4, π_ref uniform)
the truth θ*_t stays (the stationary reference), switches at T/2 + 1, or rotates from θ*₀ to
θ*₁ ~ N(0, I) over rounds T/4 + 1 .. 3T/4 + 1 (`rbx.rlhf.drift`; the regret is the dynamic
one, against π*_t). Algorithm 1 and its no-bonus control (greedy: both answers from π^(t), no
bonus) run in the linear exact class and the DPO-form class (log-linear policy), each with the
likelihood of (2.2) (γ = 1, w = ∞: the control), discounted (γ = 0.9) and windowed (w = 33) —
the peer's (wsolow/online-ns-dpo, `synthetic/configs/exp1_tv`) NS-DPO γ and SW-DPO window,
taken as they are, not tuned here. Every agent at its registered defaults (α = 1).

Each table: mean dynamic R(T) over seeds with its 95% interval; Algorithm 1 − greedy at the
same likelihood, and each forgetting likelihood − the control for the same agent, paired over
seeds (`rbx.core.stats.paired`), with Holm's adjusted p over all the comparisons printed
(`rbx.core.stats.holm`).

    PYTHONPATH=. python -m benchmarks.reproduction.drift [--seeds 32] [--steps 400]
"""
from __future__ import annotations

import argparse
import datetime
import platform
import time

import jax
import numpy as np

from benchmarks import revision
from benchmarks.reproduction.dueling import cell
from rbx import rlhf
from rbx.core import stats

CLASSES = {"linear": {}, "practical": {"policy": "loglinear"}}
SCHEMES = ("algorithm1", "greedy")
GAMMA, WINDOW = 0.9, 33          # the peer's exp1_tv NS-DPO γ (one of 0.3, 0.7, 0.9) and window
LIKELIHOODS = ("γ = 1, w = ∞", f"γ = {GAMMA:g}", f"w = {WINDOW}")


def schedules(steps: int) -> dict:
  """name -> the `contextual` environment's drift keys."""
  return {"stationary": {},
          "switch": dict(drift="switch", drift_start=steps // 2 + 1),
          "rotation": dict(drift="rotation", drift_start=steps // 4 + 1,
                           drift_end=3 * steps // 4 + 1)}


def environment(drift: dict):
  """The instance (module docstring) with the drift keys `drift` (`schedules`)."""
  return rlhf.FAMILY.load_env("contextual", dict(num_prompts=20, num_actions=5, dim=4, beta=0.5,
                                                 r_max=4.0, seed=0, **drift))


def measure(seeds: int, steps: int) -> dict:
  """(schedule, class) -> R(T) per (likelihood, scheme, seed), (3, 2, seeds)."""
  out = {}
  for name, drift in schedules(steps).items():
    env = environment(drift)
    for cls, kw in CLASSES.items():
      agents = [f"{cls}/{s}" for s in SCHEMES]
      discounted = rlhf.sweep(
          lambda agent, discount: (env, rlhf.get(agent, discount=discount, **kw)),
          {"discount": [1.0, GAMMA], "agent": agents}, seeds, steps, progress=False,
          record="summary")
      windowed = rlhf.sweep(lambda agent: (env, rlhf.get(agent, window=WINDOW, **kw)),
                            {"agent": agents}, seeds, steps, progress=False, record="summary")
      out[name, cls] = np.concatenate([np.asarray(discounted.final()),
                                       np.asarray(windowed.final())[None]])
  return out


def compare(data: dict) -> dict:
  """Holm-corrected paired comparisons: (schedule, class, "optimism", likelihood) Algorithm 1
  − greedy; (schedule, class, scheme, likelihood) forgetting − the control."""
  family = {}
  for (name, cls), r in data.items():
    for i, lik in enumerate(LIKELIHOODS):
      family[name, cls, "optimism", lik] = stats.paired(r[i, 0], r[i, 1])
      if i > 0:
        for j, scheme in enumerate(SCHEMES):
          family[name, cls, scheme, lik] = stats.paired(r[i, j], r[0, j])
  return stats.holm(family)


def _paired(c: stats.Comparison) -> str:
  """A paired difference's cell: mean [interval] and Holm's p, bold where separated."""
  text = f"{c.mean:+.1f} [{c.low:+.1f}, {c.high:+.1f}] p_H={c.p_holm:.2g}"
  return f"**{text}**" if c.separated else text


def report(data: dict, family: dict, seeds: int, steps: int) -> str:
  """A Markdown table per class: R(T) of each agent, truth and likelihood, and the comparisons."""
  lines = []
  for cls in CLASSES:
    lines += [f"### {cls}/algorithm1 and {cls}/greedy{' (policy loglinear)' if CLASSES[cls] else ''}",
              "", "| truth | likelihood | algorithm1 | greedy | algorithm1 − greedy | "
              "algorithm1: − control | greedy: − control |", "|---|---|---:|---:|---:|---:|---:|"]
    for name in schedules(steps):
      r = data[name, cls]
      for i, lik in enumerate(LIKELIHOODS):
        vs = ["—", "—"] if i == 0 else [_paired(family[name, cls, s, lik]) for s in SCHEMES]
        lines.append(f"| {name} | {lik} | {cell(r[i, 0])} | {cell(r[i, 1])} | "
                     f"{_paired(family[name, cls, 'optimism', lik])} | {vs[0]} | {vs[1]} |")
    lines.append("")
  return "\n".join(lines)


def main() -> None:
  """Measures, prints the tables and the line saying how they were measured."""
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--seeds", type=int, default=32)
  parser.add_argument("--steps", type=int, default=400)
  args = parser.parse_args()
  commit, start = revision.head(), time.time()      # the code this process imported
  data = measure(args.seeds, args.steps)
  family = compare(data)
  print(f"{args.seeds} seeds, T = {args.steps}: mean dynamic R(T) [95% interval]; paired "
        f"differences [95% Student-t interval] with Holm's p over {len(family)} comparisons "
        f"(bold: p_H < 0.05).\n")
  print(report(data, family, args.seeds, args.steps))
  print(f"{datetime.date.today()}, {platform.node()} ({jax.devices()[0].platform}, "
        f"{jax.device_count()} device(s)), commit {commit}, {time.time() - start:.0f} s: "
        f"PYTHONPATH=. python -m benchmarks.reproduction.drift --seeds {args.seeds} "
        f"--steps {args.steps}")


if __name__ == "__main__":
  main()
