"""How close `rlhf.solve_optimistic` gets to the global maximum of (3.1a)/(3.2a), per A and config.

Random problems (`helpers.random_problem`: β, α, r_max and counts varied over decades): A = 2,
3, 4 against the float64 brute force of `tests/helpers.py` (dense grid + L-BFGS-B from every
vertex); A = 10, 50, 200 against a much longer solve (`STRONG`: every candidate start refined,
40 iterations, 20 of them DC steps, 12 step sizes, exact conjugate gradients). Then the solver as the agents use
it: Algorithm 1 along its own trajectories (random instances, β = 0.5 and 0.1, α = 3), every
step's solve against `STRONG` from the same warm start. Prints, per config, the largest
relative gap and the miss rates (gap > 1e-5, > 1e-3). `--prompts X`: Algorithm 1's lazy
re-solve on X prompts (`prompts_table`), its misses and its regret beside the full re-solve.

    python -m benchmarks.accuracy.solver_accuracy                   # 160 problems per A ≤ 4 (minutes)
    python -m benchmarks.accuracy.solver_accuracy --instances 20 --actions 2 3 4 10
    python -m benchmarks.accuracy.solver_accuracy --actions 10 --configs default the --seeds-times 4
    python -m benchmarks.accuracy.solver_accuracy --prompts 20        # Algorithm 1's lazy re-solve
"""
from __future__ import annotations

import argparse
import sys

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import ROOT

sys.path.insert(0, str(ROOT / "tests"))
import helpers as ref  # noqa: E402

from rbx import rlhf  # noqa: E402

S = rlhf.SolverConfig
CONFIGS = {
    "default": S(),
    "the directions before (newton_f, dc_gradient)": S(newton_f=True, dc_gradient=True),
    "F's Newton direction too (newton_f=True)": S(newton_f=True),
    "3 step sizes, 6 CG steps": S(line_search=3, cg_iterations=6),
    "exact CG (cg_iterations=A+2)": S(cg_iterations=1000),
    "no DC phase (dc_iterations=0)": S(dc_iterations=0),
    "F alone ranks the vertices (screen='value')": S(screen="value"),
    "one step size (line_search=1)": S(line_search=1),
    "8 iterations, 4 DC (iterations=8)": S(iterations=8),
    "8 iterations, 3 DC (iterations=8, dc_iterations=3)": S(iterations=8, dc_iterations=3),
}
STRONG = S(iterations=40, dc_iterations=20, line_search=12, starts=100_000, cg_iterations=1000)
TRAJECTORY_CONFIGS = ("default", "the directions before (newton_f, dc_gradient)",
                      "F's Newton direction too (newton_f=True)",
                      "F alone ranks the vertices (screen='value')",
                      "3 step sizes, 6 CG steps", "one step size (line_search=1)",
                      "8 iterations, 4 DC (iterations=8)",
                      "8 iterations, 3 DC (iterations=8, dc_iterations=3)")
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
  p.add_argument("--configs", nargs="+", default=None, metavar="LABEL",
                 help="only the configs whose label starts with one of these")
  p.add_argument("--seeds-times", type=int, default=1,
                 help="multiply the trajectories' seed counts (a tighter miss rate)")
  p.add_argument("--prompts", type=int, default=None,
                 help="only the table of Algorithm 1's lazy re-solve on this many prompts")
  args = p.parse_args()
  if args.prompts:
    return prompts_table(args.prompts)
  chosen = lambda label: args.configs is None or label.startswith(tuple(args.configs))
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
      if not chosen(label):
        continue
      report(label, (best - solve(problems, cfg)) / np.maximum(np.abs(best), 1e-9))
  print("\nAlgorithm 1's solves along its trajectories (α = 3), against the long solve")
  for A in args.actions:
    if A not in TRAJECTORIES:
      continue
    seeds, steps = TRAJECTORIES[A]
    seeds *= args.seeds_times
    for beta, r_max, dev in ((0.5, 2.0, 1.0), (0.1, 4.0, 2.0)):
      env = rlhf.random_instance(jax.random.key(A), 1, A, beta, r_max, deviation=dev)
      for label in filter(chosen, TRAJECTORY_CONFIGS):
        gaps = ref.trajectory_gaps(env, 3.0, seeds, steps, CONFIGS[label], STRONG)
        report(f"A = {A}, β = {beta} ({seeds} × {steps}), {label}", gaps.ravel())


# The lazy re-solve of Algorithm 1 (`rbx.rlhf.learners.tabular`): settings at the unsampled prompts.
LAZY = {"full re-solve (default)": None,
        "lazy, 2 starts": S(starts=2),
        "lazy, 2 starts, 6 iterations": S(starts=2, iterations=6, dc_iterations=2),
        "lazy, 1 start, 3 iterations (control)": S(starts=1, iterations=3, dc_iterations=1)}


def prompts_table(X, seeds=8, steps=60, regret_seeds=64, horizon=150):
  """Algorithm 1 on X prompts (A = 10) with the lazy re-solve: at every step and prompt, F
  below the default solve of the same problem (share > 1e-3, `seeds` × `steps`), and the
  cumulative regret at `horizon` over `regret_seeds` seeds beside the full re-solve's
  (z: the difference over its standard error); greedy (α = 0) shows the regret comparison
  can tell agents apart."""
  print(f"\nAlgorithm 1 on {X} prompts (A = 10, α = 3): the lazy re-solve against the full")
  for beta, r_max, dev in ((0.5, 2.0, 1.0), (0.1, 4.0, 2.0)):
    env = rlhf.random_instance(jax.random.key(10), X, 10, beta, r_max, deviation=dev)
    agents = {k: (lambda cfg=cfg: rlhf.algorithm1(3.0, unsampled_solver=cfg))
              for k, cfg in LAZY.items()}
    agents["greedy (α = 0, control)"] = rlhf.greedy
    full = None
    for label, make in agents.items():
      regret = np.asarray(rlhf.sweep(lambda: (env, make()), {}, seeds=regret_seeds,
                                     steps=horizon, progress=False).final())
      full = regret if full is None else full
      z = (regret.mean() - full.mean()) / np.sqrt(regret.var() / regret.size
                                                  + full.var() / full.size + 1e-12)
      miss = ""
      if label in LAZY and LAZY[label] is not None:
        gaps = ref.trajectory_gaps(env, 3.0, seeds, steps, S(), S(), unsampled_solver=LAZY[label])
        miss = f"   > 1e-3: {(gaps > 1e-3).mean():6.1%} of {gaps.size}"
      print(f"  β = {beta}, {label:38s} regret at T = {horizon}: {regret.mean():7.2f} ± "
            f"{regret.std() / np.sqrt(regret.size):5.2f}  z = {z:+6.2f}{miss}", flush=True)


if __name__ == "__main__":
  main()
