"""The step size's two readings on one data set: training on (10)/(12) divided by n_t
(`scaling="mean"`, rbx's default) or as written (`scaling="sum"`), at the paper's η = 10⁻³.

    python -m benchmarks.accuracy.step_size                     # Mushroom, m = 100, J = 10, T = 500, 3 seeds
    python -m benchmarks.accuracy.step_size --steps 2000 --train-steps 100 --seeds 10

Prints R(T) (mean ± std over seeds, ddof = 1) per agent and scaling, and whether any run
diverged (a non-finite regret).
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from benchmarks import SHARED_DATASETS
from rbx import data, neural



def main(argv=None) -> None:
  """Runs both scalings side by side and prints one row per (scaling, agent)."""
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--dataset", default="mushroom")
  p.add_argument("--agents", default="rbmle_pc,neural_ucb")
  p.add_argument("--seeds", type=int, default=3)
  p.add_argument("--steps", type=int, default=500)
  p.add_argument("--width", type=int, default=100)
  p.add_argument("--train-steps", type=int, default=10)
  p.add_argument("--eta", type=float, default=1e-3)
  args = p.parse_args(argv)
  ds = data.load(args.dataset, data_dir=os.environ.get("RBX_DATA_DIR", SHARED_DATASETS))
  env = neural.classification(ds.features, ds.labels)
  print(f"{args.dataset}: m = {args.width}, J = {args.train_steps}, eta = {args.eta:g}, "
        f"T = {args.steps}, {args.seeds} seeds (mean ± std, ddof = 1)")
  for scaling in ("mean", "sum"):
    begin = time.perf_counter()
    res = neural.sweep(
        lambda agent: (env, neural.get(agent, nu=0.1, lam=1e-3, eta=args.eta, width=args.width,
                                       train_steps=args.train_steps, scaling=scaling)),
        {"agent": args.agents.split(",")}, seeds=args.seeds, steps=args.steps)
    seconds = time.perf_counter() - begin
    for row in res.summary():
      finite = np.isfinite(res.sel(agent=row["agent"]).cumulative).all()
      print(f"  {scaling:>4}  {row['agent']:<11} R({args.steps}) = {row['mean']:7.1f} ± "
            f"{row['std']:5.1f}  {'finite' if finite else 'DIVERGED'}  ({seconds:.0f} s)")


if __name__ == "__main__":
  main()
