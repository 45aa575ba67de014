"""Seed-steps per second of Algorithm 1: rbx (jit + vmap over seeds) beside two per-seed loops.

Runs Algorithm 1 (constant α) on a random single-prompt instance for A ∈ {3, 10, 50} (or
`--actions`) and 1, 64, 1024 seeds (or `--seeds`). The references run one seed at a time, so
their rates do not depend on the number of seeds: the NumPy port of rbx's method
(benchmarks/numpy_algorithm1.py, like for like) and the loop a researcher would write without
rbx, SciPy's L-BFGS-B from 12 starts for the reward step (benchmarks/scipy_algorithm1.py).
Prints the rates, rbx's ratio to each, and a check that rbx and NumPy give the same regret
statistics.

    python benchmarks/rlhf_throughput.py            # full table (a few minutes)
    python benchmarks/rlhf_throughput.py --quick    # A ∈ {3, 10}, fewer steps
    python benchmarks/rlhf_throughput.py --actions 200 1000 --seeds 1 64

rbx runs on one CPU device and, sharded over the seeds (`devices=` of `rlhf.sweep`), on one
CPU device per core (`jax_num_cpu_devices`, `--devices`); the NumPy loop uses one core.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import jax
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import numpy_algorithm1  # noqa: E402
import scipy_algorithm1  # noqa: E402

from rbx import rlhf  # noqa: E402

BETA, R_MAX, ALPHA = 0.5, 2.0, 3.0
_CFG = rlhf.SolverConfig()
SOLVER = dict(iterations=_CFG.iterations, dc_iterations=_CFG.dc_iterations, starts=_CFG.starts,
              sizes=_CFG.shrink ** np.arange(_CFG.line_search))   # the same settings in NumPy


def instance(A):
  return rlhf.random_instance(jax.random.key(A), 1, A, BETA, R_MAX, deviation=1.0)


def rbx_rate(A, seeds, steps, devices):
  """(seed-steps/s, compile seconds) of `rlhf.sweep`, one jitted program over the seeds."""
  env, agent = instance(A), rlhf.algorithm1(ALPHA)
  timing = rlhf.sweep(lambda: (env, agent), {}, seeds=seeds, steps=steps, devices=devices).timing
  return timing["seed_steps_per_second"], timing["compile_seconds"]


def reference_rate(A, steps, scipy=False, seeds=2):
  """Seed-steps/s of the NumPy port (or, with `scipy`, the SciPy L-BFGS-B loop), seed by seed."""
  env = instance(A)
  args = (np.asarray(env.r_star[0], float), np.asarray(env.pi_ref[0], float), BETA, R_MAX, ALPHA)
  t0 = time.perf_counter()
  for s in range(seeds):
    if scipy:
      scipy_algorithm1.run(*args, steps=steps, seed=s)
    else:
      numpy_algorithm1.run(*args, steps=steps, seed=s, solver=SOLVER)
  return seeds * steps / (time.perf_counter() - t0)


def same_statistics(A=3, steps=100, rbx_seeds=256, numpy_seeds=24):
  env = instance(A)
  res = rlhf.sweep(lambda: (env, rlhf.algorithm1(ALPHA)), {}, seeds=rbx_seeds, steps=steps)
  ours = res.final()
  args = (np.asarray(env.r_star[0], float), np.asarray(env.pi_ref[0], float), BETA, R_MAX, ALPHA)
  ref = np.array([numpy_algorithm1.run(*args, steps=steps, seed=s, solver=SOLVER).sum() for s in range(numpy_seeds)])
  se = np.sqrt(ours.var() / ours.size + ref.var() / ref.size)
  z = (ours.mean() - ref.mean()) / se
  print(f"\nregret check (A={A}, T={steps}): rbx {ours.mean():.2f} ± {ours.std():.2f} "
        f"({rbx_seeds} seeds), NumPy {ref.mean():.2f} ± {ref.std():.2f} ({numpy_seeds} seeds); "
        f"z = {z:+.2f} -> {'same' if abs(z) < 3 else 'DIFFERENT'} distribution of cumulative regret")


def main():
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--quick", action="store_true")
  p.add_argument("--actions", nargs="+", type=int, default=None, help="the A values")
  p.add_argument("--seeds", nargs="+", type=int, default=[1, 64, 1024], help="rbx's seed counts")
  p.add_argument("--devices", type=int, default=os.cpu_count(),
                 help="CPU devices for rbx's sharded column (default: one per core)")
  args = p.parse_args()
  jax.config.update("jax_num_cpu_devices", args.devices)
  n = len(jax.devices())
  actions = args.actions or ((3, 10) if args.quick else (3, 10, 50))
  seed_counts = args.seeds
  steps = ({3: 40, 10: 10} if args.quick else {3: 100, 10: 40, 50: 2})
  steps = {A: steps.get(A, 2 if A <= 100 else 1) for A in actions}
  print(f"jax {jax.__version__} on {n} {jax.devices()[0].platform} device(s); Algorithm 1, "
        f"alpha={ALPHA}, beta={BETA}, r_max={R_MAX}, solver {rlhf.SolverConfig()}")
  print(f"{'A':>4} {'seeds':>6} {'steps':>6} {'rbx 1 device':>13} {f'rbx {n} devices':>14} "
        f"{'compile s':>10} {'NumPy':>8} {'SciPy':>8} {'/NumPy':>7} {'/SciPy':>7}   "
        "(seed-steps/s; ratios: best rbx over each reference)")
  for A in actions:
    ref_steps = max(2, steps[A] // 4)
    ref, sci = reference_rate(A, ref_steps), reference_rate(A, ref_steps, scipy=True)
    for seeds in seed_counts:
      one, comp = rbx_rate(A, seeds, steps[A], devices=1)
      many = rbx_rate(A, seeds, steps[A], devices=n)[0] if n > 1 and seeds >= n else float("nan")
      best = np.nanmax([one, many])
      print(f"{A:>4} {seeds:>6} {steps[A]:>6} {one:>13.0f} {many:>14.0f} {comp:>10.1f} "
            f"{ref:>8.1f} {sci:>8.1f} {best / ref:>6.0f}x {best / sci:>6.0f}x", flush=True)
  same_statistics()


if __name__ == "__main__":
  main()
