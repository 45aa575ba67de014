"""How far the linear agents' solves (`rbx.rlhf.learners.linear`) end below a thorough solve of
the same problem, along the agents' own trajectories.

    python -m benchmarks.accuracy.linear_accuracy [--prompts 50] [--dim 16] [--alpha 2] [--seeds 8]
                                         [--steps 60] [--baseline REV]

On `random_contextual(key(0), |X|, A = 10, d, β = 0.5, r_max = 4)` each agent runs with its
defaults (`rlhf.linear.LINEAR_SOLVER`) at constant α; at every step the problem it solved
((3.1a)/(3.2a): its data, its π_cal, α) is solved again with `THOROUGH` (16 starts, 12
iterations: tests/rlhf/test_linear.py's setting) from the agent's previous θ, and the gap
F(thorough) − F(agent's θ) is recorded (negative where the agent's point is the better one).
Prints per agent and version the mean and largest gap and the share of steps missing by
> 1e-3. `--baseline REV` also runs this benchmark on git revision REV's whole tree
(`benchmarks.revision`: a worktree, removed after) on the same seeds, right after each of this
tree's rows; there the reference solve is REV's own at `THOROUGH`'s settings.
"""
from __future__ import annotations

import argparse
import contextlib

import jax
import jax.numpy as jnp
import numpy as np
from benchmarks import revision

from rbx import rlhf
from rbx.core.protocol import Agent, pair
from rbx.rlhf import linear

THOROUGH = linear.LINEAR_SOLVER._replace(starts=16, iterations=12, dc_iterations=4,
                                         line_search=3)
# π_cal of each agent's step, from its state before the update and the task
CALIBRATION = {"linear_algorithm1": lambda old, spec: jnp.exp(old.log_pi),
               "linear_xpo": lambda old, spec: spec.pi_ref,
               "linear_vpo": lambda old, spec: spec.pi_cal}


def solver_with(fields) -> linear.SolverConfig:
  """`LINEAR_SOLVER` with the fields of `--solver FIELD=VALUE ...` replaced."""
  def value(field, text):
    if field not in linear.SolverConfig._fields:
      raise ValueError(f"--solver: no field {field!r}; the fields: {linear.SolverConfig._fields}")
    kind = type(getattr(linear.LINEAR_SOLVER, field))
    return text.lower() in ("1", "true") if kind is bool else kind(text)
  return linear.LINEAR_SOLVER._replace(**{k: value(k, v) for k, v in
                                          (f.split("=", 1) for f in fields)})


def gaps(env, inner: Agent, name: str, alpha: float, seeds: int, steps: int) -> np.ndarray:
  """F(thorough) − F(agent) at every step of `inner` (constant α), shape (seeds, steps)."""
  def update(key, state, obs, query, feedback, spec):
    old, _ = state
    new = inner.update(key, old, obs, query, feedback, spec)
    cal = CALIBRATION[name](old, spec)
    problem = linear.LinearProblem(
        spec.features, jnp.log(spec.pi_ref), spec.rho, spec.beta, alpha, spec.r_max,
        linear.LinearData(new.data.z, new.data.count),
        linear.feature_mean(spec.rho[:, None] * cal, spec.features))
    best = linear.solve_linear(problem, old.theta, THOROUGH)
    F = lambda theta: problem.value(problem.embed(theta))
    return new, F(best) - F(new.theta)

  def act(key, state, obs, spec):
    inner_state, query = inner.act(key, state[0], obs, spec)
    return (inner_state, state[1]), query

  agent = Agent("gaps", lambda k, spec, h: (inner.init(k, spec, h), jnp.zeros(())), act, update)
  run = pair(env, agent, steps)

  def one(key):
    def body(c, t):
      c = run.step(c, key, t)[0]
      return c, c[1][1]
    return jax.lax.scan(body, run.init(key), 1 + jnp.arange(steps))[1]

  keys = jax.vmap(jax.random.key)(jnp.arange(seeds))
  return np.asarray(jax.jit(jax.vmap(one))(keys))


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--prompts", type=int, default=50)
  parser.add_argument("--actions", type=int, default=10)
  parser.add_argument("--dim", type=int, default=16)
  parser.add_argument("--alpha", type=float, nargs="+", default=[2.0])
  parser.add_argument("--seeds", type=int, default=8)
  parser.add_argument("--steps", type=int, default=60)
  parser.add_argument("--agents", nargs="+", default=list(CALIBRATION))
  parser.add_argument("--baseline", help="git revision whose agents to run alongside")
  parser.add_argument("--solver", nargs="*", default=[], metavar="FIELD=VALUE",
                      help="this tree's agents with LINEAR_SOLVER's fields replaced")
  args = parser.parse_args(argv)
  solver = solver_with(args.solver)
  mine = {"solver": solver} if args.solver else {}      # a revision's agents may not take it
  env = rlhf.random_contextual(jax.random.key(0), args.prompts, args.actions, args.dim, 0.5, 4.0)
  with contextlib.ExitStack() as stack:
    baseline = args.baseline and stack.enter_context(revision.checkout(args.baseline))
    if revision.name() == revision.THIS:
      print(f"|X| = {args.prompts}, A = {args.actions}, d = {args.dim}, {args.seeds} seeds × "
            f"{args.steps} steps; solver {solver}; reference {THOROUGH}")
      print("| α | agent | version | mean gap | max gap | steps > 1e-3 | steps < −1e-3 |")
      print("|---:|---|---|---:|---:|---:|---:|")
    for alpha in args.alpha:
      for name in args.agents:
        g = gaps(env, rlhf.get(name, alpha=alpha, **mine), name, alpha, args.seeds, args.steps)
        print(f"| {alpha:g} | {name} | {revision.name()} | {g.mean():.4f} | {g.max():.3f} | "
              f"{(g > 1e-3).mean():.1%} | {(g < -1e-3).mean():.1%} |", flush=True)
        if baseline:
          print(baseline("-m", __spec__.name, "--prompts", str(args.prompts), "--actions",
                         str(args.actions), "--dim", str(args.dim), "--alpha", str(alpha),
                         "--seeds", str(args.seeds), "--steps", str(args.steps), "--agents", name),
                end="", flush=True)


if __name__ == "__main__":
  main()
