"""Seed-steps per second of the linear agents (`rbx.rlhf.learners.linear`), their flops per step
and the fraction of this machine's measured matmul rate they reach.

    python -m benchmarks.throughput.linear_throughput [--prompts 1000 10000] [--dim 16] [--seeds 16]
                                           [--steps 50] [--seed-batch 16] [--baseline REV]
                                           [--solver FIELD=VALUE ...]

For each |X|: one `rlhf.sweep` per agent at its defaults on `random_contextual(key(0), |X|,
A = 10, d)`, each in a fresh process (`RATE`, the compile cache off); seed-steps/s from the
sweep's run time (compile excluded). The matmul rate is measured in the same run (a float32
(n, n) @ (n, n) product, best of 5), because the machine may be shared: compare the ratio, not
the absolute rate. `--baseline REV` also runs the agents on git revision REV's whole tree
(`benchmarks.revision`: a worktree, removed after) right after each of this tree's, and prints
the speed-up: the fair comparison on a loaded machine. `--solver` runs this tree's agents with
`LINEAR_SOLVER`'s fields replaced (e.g. `iterations=48 tolerance=1e-4`; the baseline keeps
its defaults).

Flops per step, from the method (`rbx.rlhf.linear`'s "Cost"): a pass over φ (a product
φθ or φᵀv) is 2·|X|·A·d flops, a pass over the data buffer 2·T·d, the Laplacian 2·T·d².
A step makes 1 (π_cal's mean) + 1 (the new policy) passes over φ, and per refined start 1
(its embedding) + 1 (its slope, if it takes DC steps) + 2 per DC iteration (the Newton
direction, the kept point's rewards) + 4 per F iteration (the slope, the Newton direction, the
gradient and the kept point's rewards), as many passes over Z (counted so; the kept point's
Zθ is one fewer, of T·d), and one Laplacian per iteration. Elementwise work is not counted as
flops; the script reports the passes with |X|·A exponentials per seed ("exp passes": the new
policy, and per start its embedding, its slope before DC steps and its sum after them, and per
F iteration its slope and F at `line_search` × 2 trial points). The candidate rays' F depend
on the task alone: one seed batch sharing the task computes them once (not counted). These
counts are this tree's method at a fixed step count; a `--baseline` revision's rows, and this
tree's with a `tolerance` (a step count that varies), leave them out.
"""
from __future__ import annotations

import argparse
import contextlib
import json

import jax

from benchmarks import ROOT, revision, timing
from benchmarks.accuracy.linear_accuracy import solver_with
from rbx.rlhf.linear import LINEAR_SOLVER

AGENTS = ("linear_greedy", "linear_xpo", "linear_vpo", "linear_algorithm1")


# One row's (seed-steps/s, compile seconds), run in a fresh process on a tree's rbx
# (`benchmarks.revision`); public names only, so that any revision runs it.
RATE = """
import json, sys
import jax
from rbx import rlhf
X, A, d, name, seeds, steps, seed_batch, solver = json.loads(sys.argv[1])
env = rlhf.random_contextual(jax.random.key(0), X, A, d, 0.5, 4.0)
options = {"solver": rlhf.SolverConfig(**solver)} if solver else {}
t = rlhf.sweep(lambda: (env, rlhf.get(name, **options)), {}, seeds=seeds, steps=steps,
               seed_batch=seed_batch, progress=False, record="summary").timing
print(json.dumps([t["seed_steps_per_second"], t["compile_seconds"]]))
"""


def step_cost(X: int, A: int, d: int, T: int, config=LINEAR_SOLVER):
  """(flops, passes over φ, exp passes) of one update (module docstring)."""
  dc = min(config.dc_iterations, config.iterations)
  f_steps = config.iterations - dc
  passes = 2 + config.starts * (1 + (dc > 0) + 2 * dc + 4 * f_steps)
  laplacians = config.starts * config.iterations
  flops = passes * 2 * (X * A * d + T * d) + laplacians * 2 * T * d * d
  exps = 1 + config.starts * (1 + 2 * (dc > 0) + f_steps * (1 + 2 * config.line_search))
  return flops, passes, exps


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--prompts", type=int, nargs="+", default=[1000, 10000])
  parser.add_argument("--actions", type=int, default=10)
  parser.add_argument("--dim", type=int, default=16)
  parser.add_argument("--seeds", type=int, default=16)
  parser.add_argument("--steps", type=int, default=50)
  parser.add_argument("--seed-batch", type=int, default=16)
  parser.add_argument("--agents", nargs="+", default=list(AGENTS))
  parser.add_argument("--baseline", help="git revision whose agents to run alongside")
  parser.add_argument("--solver", nargs="*", default=[], metavar="FIELD=VALUE",
                      help="this tree's agents with LINEAR_SOLVER's fields replaced")
  args = parser.parse_args(argv)
  solver = solver_with(args.solver)
  with contextlib.ExitStack() as stack:
    trees = {revision.THIS: lambda *a: revision.python(ROOT, revision.THIS, *a)}
    if args.baseline:
      trees[args.baseline] = stack.enter_context(revision.checkout(args.baseline))
    rate = timing.matmul_rate()
    print(f"matmul rate (float32 1024^3, best of 5): {rate / 1e9:.1f} GFlop/s; "
          f"devices {jax.device_count()}; solver {solver}")
    print("| |X| | agent | version | seed-steps/s | this tree × | MFlop/step | passes over φ | "
          "exp passes | GFlop/s | of matmul rate | compile s |")
    print("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for X in args.prompts:
      flops, passes, exps = step_cost(X, args.actions, args.dim, args.steps, solver)
      for name in args.agents:
        first = None
        for version, python in trees.items():
          this = version == revision.THIS
          row = [X, args.actions, args.dim, name, args.seeds, args.steps, args.seed_batch,
                 solver._asdict() if this and args.solver else None]
          sps, compile_s = json.loads(python("-c", RATE, json.dumps(row)))
          first = first or sps
          achieved = sps * flops
          cost = (f"{flops / 1e6:.1f} | {passes} | {exps} | {achieved / 1e9:.2f} | "
                  f"{achieved / rate:.3f}") if this and solver.tolerance == 0 else \
              "— | — | — | — | —"
          print(f"| {X} | {name} | {version} | {sps:.1f} | {first / sps:.2f} | {cost} | "
                f"{compile_s:.0f} |", flush=True)
  print(f"matmul rate again: {timing.matmul_rate() / 1e9:.1f} GFlop/s")


if __name__ == "__main__":
  main()
