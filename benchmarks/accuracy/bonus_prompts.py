"""The regret cost of the practical agents' bonus at k prompts drawn from ρ (`cal_prompts=k`,
the exact E_{a∼π_cal} at each) against the exact bonus over all prompts (`cal_samples=None`).

Each agent runs both ways on the same seeds (the log-linear policy, the buffer form of the DPO
term, α = 1, the other settings the defaults) on `rlhf.random_contextual(key(7), 50, 8, 6,
β = 0.5, r_max = 4)`; printed: the mean regret over the T rounds under each and the paired
difference (drawn − exact) over seeds with its 95% t-interval.

Usage: python -m benchmarks.accuracy.bonus_prompts [--agents practical_xpo practical_algorithm1]
       [--k 1 8] [--seeds 8] [--steps 100]
"""
from __future__ import annotations

import argparse

import jax
import numpy as np

from rbx import rlhf
from rbx.core import stats


def mean_regret(env, name, seeds, steps, **kw):
  """The mean regret over the `steps` rounds of each seed, (seeds,)."""
  res = rlhf.sweep(lambda: (env, rlhf.get(name, alpha=1.0, policy="loglinear", data="buffer",
                                          cal_samples=None, **kw)), {}, seeds=seeds,
                   steps=steps, progress=False)
  return np.asarray(res.regret).reshape(seeds, steps).mean(axis=1)


def main():
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--agents", nargs="+", default=["practical_xpo", "practical_algorithm1"])
  p.add_argument("--k", type=int, nargs="+", default=[1, 8])
  p.add_argument("--seeds", type=int, default=8)
  p.add_argument("--steps", type=int, default=100)
  args = p.parse_args()
  env = rlhf.random_contextual(jax.random.key(7), 50, 8, 6, 0.5, 4.0)
  print(f"|X| = 50, A = 8, d = 6; {args.seeds} seeds, T = {args.steps}; mean regret over T")
  print(f"{'agent':<22} {'k':>3} {'exact':>8} {'drawn':>8} {'drawn − exact (95% t)':>26}")
  for name in args.agents:
    exact = mean_regret(env, name, args.seeds, args.steps)
    for k in args.k:
      drawn = mean_regret(env, name, args.seeds, args.steps, cal_prompts=k)
      d = drawn - exact
      half = stats.paired(drawn, exact).half
      print(f"{name:<22} {k:>3} {exact.mean():>8.4f} {drawn.mean():>8.4f} "
            f"{d.mean():>+13.4f} ± {half:.4f}", flush=True)


if __name__ == "__main__":
  main()
