"""How close `rlhf.solve_optimistic` gets to the global maximum of (3.1a)/(3.2a), per SolverConfig.

Small instances (A = 2, 3, 4) against the float64 brute force of `tests/helpers.py`
(dense grid + L-BFGS-B from every vertex); A = 10 against a much longer solve
(40 iterations, 20 of them DC steps, 12 step sizes, 40 starts). Random instances from
`helpers.random_problem` (β, α, r_max and counts varied over decades). Prints, per
config, the largest relative gap and how many instances are off by more than 1e-5 and 1e-3.

    python benchmarks/solver_accuracy.py                   # 160 instances per A ≤ 4 (minutes)
    python benchmarks/solver_accuracy.py --instances 20    # quicker
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
    "no DC phase (dc_iterations=0)": S(dc_iterations=0),
    "12 iterations, 6 step sizes": S(iterations=12, dc_iterations=6, line_search=6),
}
STRONG = S(iterations=40, dc_iterations=20, line_search=12, starts=40)


def solve(problems, cfg):
  stack = {k: jnp.asarray(np.array([p[k] for p in problems]), jnp.float32) for k in problems[0]}
  fn = jax.jit(jax.vmap(lambda w, pr, pc, b, a, rm: rlhf.solve_optimistic(w, pr, pc, b, a, rm,
                                                                           config=cfg)))
  rs = fn(stack["wins"], stack["pi_ref"], stack["pi_cal"], stack["beta"], stack["alpha"],
          stack["r_max"])
  return np.array([ref.objective(r, p["wins"], p["pi_ref"], p["pi_cal"], p["beta"], p["alpha"])
                   for r, p in zip(np.asarray(rs, np.float64), problems)])


def report(label, best, values):
  gap = (best - values) / np.maximum(np.abs(best), 1e-9)
  print(f"  {label:32s} max gap {gap.max():9.2e}   > 1e-5: {(gap > 1e-5).sum():3d}"
        f"   > 1e-3: {(gap > 1e-3).sum():3d}   of {gap.size}", flush=True)


def main():
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--instances", type=int, default=160, help="random instances per action count")
  p.add_argument("--seed", type=int, default=5000)
  args = p.parse_args()
  for A in (2, 3, 4, 10):
    problems = [ref.random_problem(np.random.default_rng(args.seed + 1000 * A + i), A)
                for i in range(args.instances)]
    if A <= 4:
      best, what = np.array([ref.brute_force_max(**q)[0] for q in problems]), "brute force"
    else:
      best, what = solve(problems, STRONG), "a 40-iteration, 40-start solve"
    print(f"A = {A}: against {what}")
    for label, cfg in CONFIGS.items():
      report(label, best, solve(problems, cfg))


if __name__ == "__main__":
  main()
