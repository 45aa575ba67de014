"""How close `rlhf.solve_optimistic` gets to the global maximum of (3.1a)/(3.2a), per A and config.

Random problems (`helpers.random_problem`: β, α, r_max and counts varied over decades): A = 2,
3, 4 against the float64 brute force of `tests/helpers.py` (dense grid + L-BFGS-B from every
vertex); A = 10, 50, 200 against a much longer solve (`STRONG`: every candidate start refined,
40 iterations, 20 of them DC steps, 12 step sizes, exact conjugate gradients). Then the solver as the agents use
it: Algorithm 1 along its own trajectories (random instances, β = 0.5 and 0.1, α = 3), every
step's solve against `STRONG` from the same warm start. Prints, per config, the largest
relative gap and the miss rates (gap > 1e-5, > 1e-3).

    python benchmarks/solver_accuracy.py                   # 160 problems per A ≤ 4 (minutes)
    python benchmarks/solver_accuracy.py --instances 20 --actions 2 3 4 10
    python benchmarks/solver_accuracy.py --prompts 20        # cheap solves on many prompts
"""
from __future__ import annotations

import argparse
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
import helpers as ref  # noqa: E402

from rbx import rlhf  # noqa: E402

S = rlhf.SolverConfig
CONFIGS = {
    "default": S(),
    "3 step sizes, 6 CG steps": S(line_search=3, cg_iterations=6),
    "exact CG (cg_iterations=A+2)": S(cg_iterations=1000),
    "no DC phase (dc_iterations=0)": S(dc_iterations=0),
    "F alone ranks the vertices (screen='value')": S(screen="value"),
}
STRONG = S(iterations=40, dc_iterations=20, line_search=12, starts=100_000, cg_iterations=1000)
TRAJECTORY_CONFIGS = ("default", "F alone ranks the vertices (screen='value')",
                      "3 step sizes, 6 CG steps")
TRAJECTORIES = {2: (64, 100), 4: (64, 100), 10: (32, 60), 50: (8, 20), 200: (2, 6)}   # seeds, T


def solve(problems, cfg):
  stack = {k: jnp.asarray(np.array([p[k] for p in problems]), jnp.float32) for k in problems[0]}
  fn = jax.jit(jax.vmap(lambda w, pr, pc, b, a, rm: rlhf.solve_optimistic(w, pr, pc, b, a, rm,
                                                                           config=cfg)))
  rs = fn(stack["wins"], stack["pi_ref"], stack["pi_cal"], stack["beta"], stack["alpha"],
          stack["r_max"])
  return np.array([ref.objective(r, p["wins"], p["pi_ref"], p["pi_cal"], p["beta"], p["alpha"])
                   for r, p in zip(np.asarray(rs, np.float64), problems)])


def report(label, gap):
  """One line: the largest relative gap below the reference and the miss rates."""
  print(f"  {label:52s} max gap {gap.max():9.2e}   > 1e-5: {(gap > 1e-5).mean():6.1%}"
        f"   > 1e-3: {(gap > 1e-3).mean():6.1%}   of {gap.size}", flush=True)


def main():
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--instances", type=int, default=160, help="random problems per A ≤ 10")
  p.add_argument("--actions", nargs="+", type=int, default=[2, 3, 4, 10, 50, 200])
  p.add_argument("--seed", type=int, default=5000)
  p.add_argument("--prompts", type=int, default=None,
                 help="only the table of solves of fewer starts on this many prompts")
  args = p.parse_args()
  if args.prompts:
    return prompts_table(args.prompts)
  print("Random problems")
  for A in args.actions:
    n = args.instances if A <= 10 else max(args.instances // (A // 10), 8)
    problems = [ref.random_problem(np.random.default_rng(args.seed + 1000 * A + i), A)
                for i in range(n)]
    if A <= 4:
      best, what = np.array([ref.brute_force_max(**q)[0] for q in problems]), "brute force"
    else:
      best, what = solve(problems, STRONG), "every candidate refined for 40 iterations"
    print(f"A = {A}: against {what}")
    for label, cfg in CONFIGS.items():
      report(label, (best - solve(problems, cfg)) / np.maximum(np.abs(best), 1e-9))
  print("\nAlgorithm 1's solves along its trajectories (α = 3), against the long solve")
  for A in args.actions:
    if A not in TRAJECTORIES:
      continue
    seeds, steps = TRAJECTORIES[A]
    for beta, r_max, dev in ((0.5, 2.0, 1.0), (0.1, 4.0, 2.0)):
      env = rlhf.random_instance(jax.random.key(A), 1, A, beta, r_max, deviation=dev)
      for label in TRAJECTORY_CONFIGS:
        gaps = ref.trajectory_gaps(env, 3.0, seeds, steps, CONFIGS[label], STRONG)
        report(f"A = {A}, β = {beta} ({seeds} × {steps}), {label}", gaps.ravel())


def prompts_table(X, seeds=8, steps=60):
  """Algorithm 1 on X prompts (A = 10) with a solve of 1, 2 or 4 starts at every prompt — the
  cheap path that would let a step skip the full search at the X − 1 prompts whose data did
  not change — against the default solve of the same problems."""
  print(f"\nAlgorithm 1 on {X} prompts (A = 10, α = 3), solves of fewer starts against the default")
  for beta, r_max, dev in ((0.5, 2.0, 1.0), (0.1, 4.0, 2.0)):
    env = rlhf.random_instance(jax.random.key(10), X, 10, beta, r_max, deviation=dev)
    for starts in (1, 2, 4):
      gaps = ref.trajectory_gaps(env, 3.0, seeds, steps, S(starts=starts), S())
      report(f"|X| = {X}, β = {beta} ({seeds} × {steps}), starts = {starts}", gaps.ravel())


if __name__ == "__main__":
  main()
