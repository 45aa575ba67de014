"""The linear step of this tree against a revision's on the same problems from the same warm
starts: F(this tree) − F(REV) per problem, along the agents' own runs.

    python -m benchmarks.accuracy.linear_same --baseline REV [--prompts 100] [--actions 10]
                                              [--dim 16] [--kappa 100] [--steps 60] [--seeds 4]
                                              [--solver FIELD=VALUE ...]

On `random_contextual(key(0), |X|, A, d, β = 0.5, r_max = 4, κ)` linear_algorithm1 and
linear_xpo (α = 1, this tree's agents) run `--steps` steps from each of `--seeds` seeds; at
every step the problem the agent solved (its data, its π_cal, α) is solved again from the warm
starts it had (`LinearState.basins` before the update) by this tree's `search_linear` and by
REV's (its `rbx/rlhf/linear.py`, loaded beside this tree's `rbx`), and F at the two best end
points (each retracted onto K) is compared. Where the two steps are equally good the gaps are
rounding and either sign; a step change that loses optima shows as a negative tail. Unlike
`linear_global.py`, the trajectories are shared, so the chaotic divergence of two runs'
trajectories (a last bit moves a sampled answer) does not enter the comparison. `--solver`
solves with this tree's `LINEAR_SOLVER` with those fields replaced (REV's step keeps its own
defaults; the runs are this tree's agents at their defaults).
"""
from __future__ import annotations

import argparse
import importlib.util
import subprocess
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import ROOT
from benchmarks.accuracy.linear_accuracy import CALIBRATION, solver_with
from rbx import rlhf
from rbx.core.protocol import pair
from rbx.rlhf import linear


def module_at(revision: str, tmp: str):
  """REV's rbx/rlhf/linear.py as a module (its imports resolve to this tree's rbx)."""
  path = Path(tmp) / "linear_at_revision.py"
  path.write_text(subprocess.run(["git", "show", f"{revision}:rbx/rlhf/linear.py"], cwd=ROOT,
                                 check=True, capture_output=True, text=True).stdout)
  spec = importlib.util.spec_from_file_location("linear_at_revision", path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def gaps(env, name: str, seed: int, steps: int, other, solver=None) -> np.ndarray:
  """F(this tree's step, with `solver` if given) − F(`other`'s step) at every step of the
  agent's run, (steps,)."""
  spec, cal = env.spec, CALIBRATION[name]
  run, key = pair(env, rlhf.get(name, alpha=1.0), steps), jax.random.key(seed)

  def body(carry, t):
    old = carry[1]
    new = run.step(carry, key, t)[0]
    mean = linear.feature_mean(spec.rho[:, None] * cal(old, spec), spec.features)
    return new, (new[1].data.z, new[1].data.count, mean, old.basins)

  _, problems = jax.jit(lambda: jax.lax.scan(body, run.init(key), 1 + jnp.arange(steps)))()

  def value(module, z, count, mean, basins):
    task = (spec.features, jnp.log(spec.pi_ref), spec.rho, spec.beta, 1.0, spec.r_max)
    config = {"config": solver} if module is linear and solver is not None else {}
    theta = module.search_linear(module.LinearProblem(*task, module.LinearData(z, count), mean),
                                 basins, **config)[0]
    p = linear.LinearProblem(*task, linear.LinearData(z, count), mean)
    return p.value(p.embed(theta / jnp.maximum(1.0, p.gauge(p.features @ theta))))

  ours, theirs = (jax.jit(jax.vmap(lambda *a, m=m: value(m, *a)))(*problems)
                  for m in (linear, other))
  return np.asarray(ours - theirs)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--baseline", required=True, help="git revision whose step to compare")
  parser.add_argument("--prompts", type=int, default=100)
  parser.add_argument("--actions", type=int, default=10)
  parser.add_argument("--dim", type=int, default=16)
  parser.add_argument("--kappa", type=float, default=100.0)
  parser.add_argument("--steps", type=int, default=60)
  parser.add_argument("--seeds", type=int, default=4)
  parser.add_argument("--solver", nargs="*", default=[], metavar="FIELD=VALUE",
                      help="this tree's step with LINEAR_SOLVER's fields replaced")
  args = parser.parse_args(argv)
  solver = solver_with(args.solver) if args.solver else None
  env = rlhf.random_contextual(jax.random.key(0), args.prompts, args.actions, args.dim, 0.5,
                               4.0, kappa=args.kappa)
  with tempfile.TemporaryDirectory() as tmp:
    other = module_at(args.baseline, tmp)
    g = np.stack([gaps(env, name, seed, args.steps, other, solver)
                  for name in ("linear_algorithm1", "linear_xpo") for seed in range(args.seeds)])
  print(f"|X| = {args.prompts}, A = {args.actions}, d = {args.dim}, κ = {args.kappa:g}; "
        f"{g.size} problems (linear_algorithm1 and linear_xpo, {args.seeds} seeds × {args.steps} "
        f"steps); F(this tree{'' if solver is None else f', {solver}'}) − F({args.baseline}):")
  print("| mean | min | max | within 1e-5 | higher by > 1e-3 | lower by > 1e-3 |")
  print("|---:|---:|---:|---:|---:|---:|")
  print(f"| {g.mean():+.2e} | {g.min():+.4f} | {g.max():+.4f} | {(np.abs(g) <= 1e-5).mean():.1%} | "
        f"{(g > 1e-3).mean():.1%} | {(g < -1e-3).mean():.1%} |")


if __name__ == "__main__":
  main()
