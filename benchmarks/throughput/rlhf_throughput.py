"""Seed-steps per second of Algorithm 1: rbx (jit + vmap over seeds) beside two per-seed loops.

Runs Algorithm 1 (constant α) on a random single-prompt instance for A ∈ {3, 10, 50, 200, 1000}
(or `--actions`), and on |X| ∈ {1, 100, 10000} prompts at A = 10 (or `--prompts`), Algorithm 1,
Algorithm 1 with the lazy re-solve (2 starts at the unsampled prompts, `rbx.rlhf.learners.tabular`) and
XPO. The references run one seed at a time, so their rates do not depend on the number of
seeds: the NumPy port of rbx's method (benchmarks/reference/numpy_algorithm1.py, like for like) and the
loop a researcher would write without rbx, SciPy's L-BFGS-B from 12 starts for the reward step
(benchmarks/reference/scipy_algorithm1.py). Both are single-prompt; for |X| prompts their rate is that
of |X| single-prompt solves a step (Algorithm 1 re-solves every prompt), printed as an estimate.
Prints the rates, rbx's ratio to each, and a check that rbx and NumPy give the same regret
statistics.

rbx runs with its defaults (one CPU device per core, the seeds sharded over them) and, for
comparison, on one device (`devices=1`); the NumPy and SciPy loops use one core.

    python -m benchmarks.throughput.rlhf_throughput            # full tables (about 15 minutes on 2 cores)
    python -m benchmarks.throughput.rlhf_throughput --quick    # A ∈ {3, 10}, |X| ∈ {1, 100}, fewer steps
    python -m benchmarks.throughput.rlhf_throughput --actions 200 1000 --prompts
"""
from __future__ import annotations

import argparse
import time

import jax
import numpy as np

from benchmarks import timing
from benchmarks.reference import numpy_algorithm1, scipy_algorithm1
from rbx import rlhf
from rbx.core import compile_cache

BETA, R_MAX, ALPHA = 0.5, 2.0, 3.0
_CFG = rlhf.SolverConfig()
SOLVER = dict(iterations=_CFG.iterations, dc_iterations=_CFG.dc_iterations, starts=_CFG.starts,
              sizes=_CFG.shrink ** np.arange(_CFG.line_search), newton_f=_CFG.newton_f,
              dc_gradient=_CFG.dc_gradient)   # the same settings in NumPy


def instance(A):
  return rlhf.random_instance(jax.random.key(A), 1, A, BETA, R_MAX, deviation=1.0)


# The prompt rows' agents: name -> (registered agent, its arguments besides α).
AGENTS = {"algorithm1": ("algorithm1", {}),
          "alg1 lazy": ("algorithm1", {"unsampled_solver": rlhf.SolverConfig(starts=2)}),
          "xpo": ("xpo", {})}


def rbx_rate(env, seeds, steps, devices, agent="algorithm1"):
  """(seed-steps/s, compile seconds) of `rlhf.sweep`, one jitted program over the seeds."""
  name, kwargs = AGENTS[agent]
  t = timing.sweep(lambda: (env, rlhf.get(name, alpha=ALPHA, **kwargs)), {}, seeds, steps,
                   devices=devices)
  return t["seed_steps_per_second"], t["compile_seconds"]


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
  res = rlhf.sweep(lambda: (env, rlhf.algorithm1(ALPHA)), {}, seeds=rbx_seeds, steps=steps,
                   progress=False)
  ours = res.final()
  args = (np.asarray(env.r_star[0], float), np.asarray(env.pi_ref[0], float), BETA, R_MAX, ALPHA)
  ref = np.array([numpy_algorithm1.run(*args, steps=steps, seed=s, solver=SOLVER).sum() for s in range(numpy_seeds)])
  se = np.sqrt(ours.var() / ours.size + ref.var() / ref.size)
  z = (ours.mean() - ref.mean()) / se
  print(f"\nregret check (A={A}, T={steps}): rbx {ours.mean():.2f} ± {ours.std():.2f} "
        f"({rbx_seeds} seeds), NumPy {ref.mean():.2f} ± {ref.std():.2f} ({numpy_seeds} seeds); "
        f"z = {z:+.2f} -> {'same' if abs(z) < 3 else 'DIFFERENT'} distribution of cumulative regret")


# (seed counts, steps) per A and per |X| (A = 10): the state is seeds × |X| × A² win counts.
ACTIONS = {3: ([1, 64, 1024], 100), 10: ([1, 64, 1024], 40), 50: ([64, 1024], 4),
           200: ([64], 2), 1000: ([8], 1)}
PROMPTS = {1: ([1024], 40), 100: ([256], 4), 10000: ([8], 1)}


def row(label, env, seeds, steps, n, refs, agent="algorithm1"):
  one, comp = rbx_rate(env, seeds, steps, 1, agent)
  default = rbx_rate(env, seeds, steps, None, agent)[0] if n > 1 and seeds >= n else one
  ref, sci = refs
  print(f"{label:>16} {seeds:>6} {steps:>6} {default:>12.1f} {one:>13.1f} {comp:>10.1f} "
        f"{ref:>8.2f} {sci:>8.2f} {default / ref:>6.0f}x {default / sci:>6.0f}x", flush=True)


def main():
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--quick", action="store_true")
  p.add_argument("--actions", nargs="*", type=int, default=None, help="the A values")
  p.add_argument("--prompts", nargs="*", type=int, default=None, help="the |X| values (A = 10)")
  p.add_argument("--seeds", nargs="+", type=int, default=None, help="rbx's seed counts")
  args = p.parse_args()
  compile_cache.use(False)     # its compile seconds are compiles, not loads from the disk cache
  n = len(jax.devices())
  actions = args.actions if args.actions is not None else ([3, 10] if args.quick else list(ACTIONS))
  prompts = args.prompts if args.prompts is not None else ([1, 100] if args.quick else list(PROMPTS))
  if args.actions and args.prompts is None:
    prompts = []
  print(f"jax {jax.__version__} on {n} {jax.devices()[0].platform} device(s) (rbx's default); "
        f"alpha={ALPHA}, beta={BETA}, r_max={R_MAX}, solver {rlhf.SolverConfig()}")
  header = (f"{'default':>12} {'1 device':>13} {'compile s':>10} {'NumPy':>8} {'SciPy':>8} "
            f"{'/NumPy':>7} {'/SciPy':>7}   (seed-steps/s; ratios: rbx's default over each)")
  refs = {}

  def reference(A, steps):
    if A not in refs:
      ref_steps, ref_seeds = max(1, steps // 4), 2 if A <= 50 else 1
      refs[A] = (reference_rate(A, ref_steps, seeds=ref_seeds),
                 reference_rate(A, ref_steps, scipy=True, seeds=ref_seeds))
    return refs[A]

  if actions:
    print(f"\nAlgorithm 1, one prompt\n{'A':>16} {'seeds':>6} {'steps':>6} {header}")
  for A in actions:
    seed_counts, steps = ACTIONS.get(A, ([8], 1))
    for seeds in args.seeds or seed_counts:
      row(str(A), instance(A), seeds, steps, n, reference(A, steps))
  if prompts:
    print(f"\nA = 10, |X| prompts (references: |X| single-prompt solves a step, estimated)\n"
          f"{'agent, |X|':>16} {'seeds':>6} {'steps':>6} {header}")
  for X in prompts:
    seed_counts, steps = PROMPTS.get(X, ([8], 1))
    env = rlhf.random_instance(jax.random.key(10), X, 10, BETA, R_MAX, deviation=1.0)
    ref, sci = reference(10, 40)
    for agent in AGENTS:
      for seeds in args.seeds or seed_counts:
        row(f"{agent}, {X}", env, seeds, steps, n, (ref / X, sci / X), agent)
  same_statistics()


if __name__ == "__main__":
  main()
