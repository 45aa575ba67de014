"""Seed-steps per second of the linear agents (`rbx.rlhf.linear_agents`), their flops per step
and the fraction of this machine's measured matmul rate they reach.

    python -m benchmarks.throughput.linear_throughput [--prompts 1000 10000] [--dim 16] [--seeds 16]
                                           [--steps 50] [--seed-batch 16] [--baseline REV]

For each |X|: one `rlhf.sweep` per agent at its defaults on `random_contextual(key(0), |X|,
A = 10, d)`; seed-steps/s from the sweep's run time (compile excluded). The matmul rate is
measured in the same run (a float32 (n, n) @ (n, n) product, best of 5), because the machine
may be shared: compare the ratio, not the absolute rate. `--baseline REV` also runs the agents
of git revision REV (its rbx/rlhf/linear.py and linear_agents.py) right after each of this
tree's, in the same process, and prints the speed-up: the fair comparison on a loaded machine.

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
counts are this tree's method; a `--baseline` revision's rows leave them out (its method may
differ).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
import types

import jax
import numpy as np

from benchmarks import ROOT
from rbx import rlhf
from rbx.core import compile_cache
from rbx.rlhf.linear import LINEAR_SOLVER

AGENTS = ("linear_greedy", "linear_xpo", "linear_vpo", "linear_algorithm1")


def matmul_rate(n: int = 1024, repeats: int = 5) -> float:
  """Flops/s of a float32 (n, n) @ (n, n) product on the default device, best of `repeats`."""
  a = jax.random.normal(jax.random.key(0), (n, n))
  f = jax.jit(lambda a: a @ a)
  f(a).block_until_ready()
  best = np.inf
  for _ in range(repeats):
    start = time.perf_counter()
    f(a).block_until_ready()
    best = min(best, time.perf_counter() - start)
  return 2 * n ** 3 / best


def baseline_agents(revision: str) -> dict:
  """{registry name: factory} of the linear agents as of git `revision`: its
  rbx/rlhf/linear.py and linear_agents.py loaded as separate modules."""

  def load(name, replace=("", "")):
    src = subprocess.run(["git", "show", f"{revision}:rbx/rlhf/{name}.py"], cwd=ROOT,
                         check=True, capture_output=True, text=True).stdout
    module = types.ModuleType(f"rbx.rlhf._baseline_{name}")
    sys.modules[module.__name__] = module
    code = compile(src.replace(*replace), f"{revision}:{name}.py", "exec")
    exec(code, module.__dict__)  # noqa: S102 (this repository's own source at `revision`)
    return module

  load("linear")
  agents = load("linear_agents", ("rbx.rlhf.linear import", "rbx.rlhf._baseline_linear import"))
  return {name: getattr(agents, name.removeprefix("linear_")) for name in AGENTS}


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
  args = parser.parse_args(argv)
  compile_cache.use(False)     # its compile seconds are compiles, not loads from the disk cache
  versions = {"this tree": rlhf.get}
  if args.baseline:
    old = baseline_agents(args.baseline)
    versions[args.baseline] = lambda name: old[name]()
  rate = matmul_rate()
  print(f"matmul rate (float32 1024^3, best of 5): {rate / 1e9:.1f} GFlop/s; "
        f"devices {jax.device_count()}; solver {LINEAR_SOLVER}")
  print("| |X| | agent | version | seed-steps/s | this tree × | MFlop/step | passes over φ | "
        "exp passes | GFlop/s | of matmul rate | compile s |")
  print("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
  for X in args.prompts:
    env = rlhf.random_contextual(jax.random.key(0), X, args.actions, args.dim, 0.5, 4.0)
    flops, passes, exps = step_cost(X, args.actions, args.dim, args.steps)
    for name in args.agents:
      first = None
      for version, make in versions.items():
        res = rlhf.sweep(lambda name=name, make=make, env=env: (env, make(name)), {},
                         seeds=args.seeds, steps=args.steps, seed_batch=args.seed_batch,
                         progress=False, record="summary")
        sps = res.timing["seed_steps_per_second"]
        first = first or sps
        achieved = sps * flops
        cost = (f"{flops / 1e6:.1f} | {passes} | {exps} | {achieved / 1e9:.2f} | "
                f"{achieved / rate:.3f}") if version == "this tree" else "— | — | — | — | —"
        print(f"| {X} | {name} | {version} | {sps:.1f} | {first / sps:.2f} | {cost} | "
              f"{res.timing['compile_seconds']:.0f} |", flush=True)
  print(f"matmul rate again: {matmul_rate() / 1e9:.1f} GFlop/s")


if __name__ == "__main__":
  main()
