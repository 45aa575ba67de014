"""How far the linear agents' steps end below SciPy's multi-start optimum of the same problem,
along the agents' own trajectories on the instances of REPRODUCTION.md's linear section.

    python -m benchmarks.accuracy.linear_global [--prompts 100] [--actions 10] [--kappa 100]
                                                [--dims 4 16] [--seeds 2]
                                                [--steps 5 10 20 50 100 200] [--starts 20]
                                                [--solver FIELD=VALUE ...]

Each linear agent (`rbx.rlhf.learners.linear`, its default `LINEAR_SOLVER`, α = 1) runs on
`random_contextual(key(0), |X|, A, d, β = 0.5, r_max = 4, κ)` (default A = 10, κ = 100: the section's
trap instance); at the listed steps t the problem it solved ((3.1a)/(3.2a): its first t
comparisons, its π_cal, α) is solved again by SciPy's SLSQP from `--starts` starts
(`benchmarks/reference/scipy_linear.py`), and the gap F(SciPy) − F(agent) is recorded
(negative where the agent's point is the better one). Prints per (d, agent, t) the mean and
largest gap over seeds. `--solver` runs the agents with `LINEAR_SOLVER`'s fields replaced (e.g.
`iterations=12`: how far more steps a round take the agents toward SciPy's optimum).
"""
from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.accuracy.linear_accuracy import CALIBRATION, solver_with
from benchmarks.reference import scipy_linear
from rbx import rlhf
from rbx.core.protocol import pair
from rbx.rlhf import linear

AGENTS = ("linear_algorithm1", "linear_vpo", "linear_xpo", "linear_greedy")


def trajectory(env, name: str, alpha: float, seed: int, steps: int, solver=None):
  """The agent's run (with `solver`, default its own): its comparisons z (steps, d), and per
  step t its θ^(t+1) and the calibration mean Σ_x ρ(x) φ(x)ᵀπ_cal(x) of the problem it solved,
  each (steps, d)."""
  agent = rlhf.get(name, **({} if name == "linear_greedy" else {"alpha": alpha}),
                   **({} if solver is None else {"solver": solver}))
  cal = CALIBRATION.get(name, lambda old, spec: spec.pi_ref)
  run, spec, key = pair(env, agent, steps), env.spec, jax.random.key(seed)

  def body(carry, t):
    new = run.step(carry, key, t)[0]
    mean = linear.feature_mean(spec.rho[:, None] * cal(carry[1], spec), spec.features)
    return new, (new[1].theta, mean)

  final, (thetas, means) = jax.jit(
      lambda: jax.lax.scan(body, run.init(key), 1 + jnp.arange(steps)))()
  return np.asarray(final[1].data.z), np.asarray(thetas), np.asarray(means)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--prompts", type=int, default=100)
  parser.add_argument("--actions", type=int, default=10)
  parser.add_argument("--kappa", type=float, default=100.0, help="the trap's κ")
  parser.add_argument("--dims", type=int, nargs="+", default=[4, 16])
  parser.add_argument("--alpha", type=float, default=1.0)
  parser.add_argument("--seeds", type=int, default=2)
  parser.add_argument("--steps", type=int, nargs="+", default=[5, 10, 20, 50, 100, 200])
  parser.add_argument("--starts", type=int, default=20)
  parser.add_argument("--agents", nargs="+", default=list(AGENTS))
  parser.add_argument("--solver", nargs="*", default=[], metavar="FIELD=VALUE",
                      help="the agents with LINEAR_SOLVER's fields replaced")
  args = parser.parse_args(argv)
  solver = solver_with(args.solver)
  print(f"|X| = {args.prompts}, A = {args.actions}, κ = {args.kappa:g}, α = {args.alpha:g}, {args.seeds} seeds; "
        f"solver {solver}; SciPy SLSQP from {args.starts} starts")
  print("| d | agent | t | mean gap | max gap |")
  print("|---:|---|---:|---:|---:|")
  for d in args.dims:
    env = rlhf.random_contextual(jax.random.key(0), args.prompts, args.actions, d, 0.5, 4.0,
                                 kappa=args.kappa)
    spec = env.spec
    for name in args.agents:
      gaps = np.zeros((args.seeds, len(args.steps)))
      alpha = 0.0 if name == "linear_greedy" else args.alpha
      for seed in range(args.seeds):
        z, thetas, means = trajectory(env, name, args.alpha, seed, max(args.steps), solver)
        for i, t in enumerate(args.steps):
          task = [np.asarray(a, np.float64) for a in (spec.features, np.log(spec.pi_ref),
                                                      spec.rho)] + [float(spec.beta), alpha]
          data = [z[:t].astype(np.float64), means[t - 1].astype(np.float64)]
          best, _ = scipy_linear.solve(*task, float(spec.r_max), *data, starts=args.starts,
                                       seed=seed)
          theta = np.asarray(thetas[t - 1], np.float64)
          gaps[seed, i] = best - scipy_linear.value(theta, *task, *data)
      for i, t in enumerate(args.steps):
        print(f"| {d} | {name} | {t} | {gaps[:, i].mean():+.4f} | {gaps[:, i].max():+.4f} |",
              flush=True)


if __name__ == "__main__":
  main()
