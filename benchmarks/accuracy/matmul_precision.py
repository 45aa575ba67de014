"""The regret cost of bfloat16 products (issue: Tables 1–2 on the matrix units).

Each agent runs with matmul_precision "float32" and "bf16" (`rbx.neural.network.Compute`) on
the same seeds; printed: R(T) under each and the paired difference bf16 − float32 over seeds
with its 95% t-interval. Defaults: NeuralUCB and NeuralRBMLE-GA, a synthetic cos(3xᵀa)
problem (d = 10, K = 4, noise 0.1) and Mushroom (the disjoint encoding, K = 2), m = 32,
J = 10, 16 seeds, T = 300.

Usage: python -m benchmarks.accuracy.matmul_precision [--agents neural_ucb rbmle_ga] [--seeds 16]
       [--steps 300] [--envs synthetic mushroom]
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from benchmarks import SHARED_DATASETS
from rbx import data, neural
from rbx.core import stats

MUSHROOM = str(SHARED_DATASETS / "mushroom.csv.gz")


def make_env(name):
  if name == "synthetic":
    return neural.synthetic("cosine", dim=10, num_arms=4, noise=0.1, seed=0)
  ds = data.load(MUSHROOM if os.path.exists(MUSHROOM) else name)
  return neural.classification(ds.features, ds.labels)


def main():
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--agents", nargs="+", default=["neural_ucb", "rbmle_ga"])
  p.add_argument("--envs", nargs="+", default=["synthetic", "mushroom"])
  p.add_argument("--seeds", type=int, default=16)
  p.add_argument("--steps", type=int, default=300)
  args = p.parse_args()
  for env_name in args.envs:
    env = make_env(env_name)
    for name in args.agents:
      start, total = time.perf_counter(), {}
      for prec in ("float32", "bf16"):
        agent = neural.get(name, width=32, train_steps=10, matmul_precision=prec)
        res = neural.sweep(lambda: (env, agent), {}, seeds=args.seeds, steps=args.steps,
                           progress=False)
        total[prec] = np.asarray(res.regret).sum(-1)                    # R(T) per seed
      diff = total["bf16"] - total["float32"]
      half = stats.paired(total["bf16"], total["float32"]).half
      print(f"{env_name} {name}: R(T) float32 {total['float32'].mean():.2f}, bf16 "
            f"{total['bf16'].mean():.2f}; bf16 − float32 {diff.mean():+.2f} ± {half:.2f} (95% t, "
            f"{diff.size} paired seeds, T = {args.steps}; {time.perf_counter() - start:.0f} s)",
            flush=True)


if __name__ == "__main__":
  main()
