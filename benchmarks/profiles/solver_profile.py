"""Where a solve of (3.1a)/(3.2a) spends its time: the figures behind `rlhf/solver.py`'s choices.

1. One ascent step (`solver.ascent_step`, jitted, vmapped over random problems, one device)
   with parts switched on or off: the default, the former directions (F's own
   Newton direction in steps on F, the scaled gradient in DC steps: `newton_f`,
   `dc_gradient`), ℓ and σ from A² exponentials (the path for r_max > 88) instead of A
   (`solver.Problem.ratios`), no CG (`cg_iterations=0`), one step size (`line_search=1`),
   both; for the steps on F and the DC steps.
2. The Laplacian's pieces: σ as `jax.nn.sigmoid`, 1/(1 + e^(−d)) or from A exponentials; row
   sums as `jnp.sum` over the last axis or a product with a ones vector.
3. Algorithm 1 sweeps with the starts and trial points vmapped or mapped one after another
   (`solver.SEQUENTIAL_FROM`), per A, one device.
4., 5. (each alone, on request) Algorithm 1 sweeps with two solver configs alternated: the
   screen (`screen`), the step's directions (`newton_f`, `dc_gradient`).
6. (alone, on request) Algorithm 1 sweeps per seed batch, beside the default for the problem.
7. (alone, on request) a whole solve under the profiler: its time by kind of XLA:CPU thunk.

    python -m benchmarks.profiles.solver_profile                 # A = 10 for 1-2, A ∈ {3, 10, 50, 200} for 3
    python -m benchmarks.profiles.solver_profile --actions 10 50 --batch 4096
    python -m benchmarks.profiles.solver_profile --screen --actions 10 50   # 4. the screen's cost
    python -m benchmarks.profiles.solver_profile --directions --actions 10 50   # 5. the step's directions
    python -m benchmarks.profiles.solver_profile --seed-batch --actions 3 10 50 200   # 6. seed batches
    python -m benchmarks.profiles.solver_profile --trace --actions 10                # 7. a solve's thunks
"""
from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import re
import tempfile

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import timing
from rbx import rlhf
from rbx.rlhf import registry as rlhf_registry, solver


def best_ms(f, *args, repeats=5):
  return 1e3 * min(timing.calls(f, *args, repeats=repeats)[1])


def problems(A, n, seed=0):
  rng = np.random.default_rng(seed)
  f32 = lambda x: jnp.asarray(x, jnp.float32)
  return (f32(rng.integers(0, 5, (n, A, A))), f32(rng.dirichlet(np.ones(A), n)),
          f32(rng.dirichlet(np.ones(A), n)), f32(rng.uniform(0, 2, (n, A))))


def step_table(A, n):
  print(f"1. one ascent step, A = {A}, {n} problems (ms)")
  args = problems(A, n)
  default = solver.SolverConfig()
  for label, cfg, box in [("default", default, 2.0),
                          ("directions before", solver.SolverConfig(newton_f=True, dc_gradient=True),
                           2.0),
                          ("A² exponentials", default, np.inf),
                          ("no CG", solver.SolverConfig(cg_iterations=0), 2.0),
                          ("one step size", solver.SolverConfig(line_search=1), 2.0),
                          ("neither", solver.SolverConfig(cg_iterations=0, line_search=1), 2.0)]:
    row = []
    for dc in (False, True):
      def step(w, pr, pc, r, cfg=cfg, dc=dc, box=box):
        prob = solver.Problem(w, pr, pc, 0.5, 3.0, box)
        slope = 0.1 * r if dc else None
        return solver.ascent_step(r, solver.ranked(prob, slope)(r), prob, jnp.float32(2.0), cfg,
                                   slope)
      row.append(best_ms(jax.jit(jax.vmap(step)), *args))
    print(f"  {label:16s} F step {row[0]:7.1f}   DC step {row[1]:7.1f}", flush=True)


def laplacian_table(A, n):
  print(f"2. the Laplacian's pieces, A = {A}, {n} problems (ms)")
  w, _, _, r = problems(A, n)
  ones = jnp.ones(A)
  diff = lambda r: r[:, None] - r[None, :]
  forms = {"sigma: jax.nn.sigmoid": lambda r, w: jax.nn.sigmoid(diff(r)),
           "sigma: 1/(1 + e^-d)": lambda r, w: 1.0 / (1.0 + jnp.exp(-diff(r))),
           "sigma: from A exponentials":
               lambda r, w: 1.0 / (1.0 + solver.Problem(w, None, None, 0.5, 3.0, 2.0).ratios(r)),
           "row sums: jnp.sum(axis=1)": lambda r, w: jnp.sum(w * r[None, :], axis=1),
           "row sums: (w * r) @ ones": lambda r, w: (w * r[None, :]) @ ones,
           "derivatives (as in the solver)":
               lambda r, w: solver.Problem(w, None, None, 0.5, 3.0, 2.0).derivatives(r)}
  for label, f in forms.items():
    print(f"  {label:32s} {best_ms(jax.jit(jax.vmap(f)), r, w):7.2f}", flush=True)


# (seeds, steps) of the sweeps of table 3, per A
SWEEPS = {3: (1024, 100), 10: (1024, 20), 50: (256, 4), 200: (16, 2), 1000: (2, 1)}


def mapping_table(actions):
  print("3. Algorithm 1 (α = 3) through rlhf.sweep on one device, starts and trial points "
        "vmapped vs mapped (seed-steps/s)")
  saved = solver.SEQUENTIAL_FROM
  try:
    for A in actions:
      seeds, steps = SWEEPS.get(A, (2, 1))
      env = rlhf.random_instance(jax.random.key(A), 1, A, 0.5, 2.0, deviation=1.0)
      row = []
      for threshold in (10 ** 9, 0):           # vmapped everywhere, mapped everywhere
        solver.SEQUENTIAL_FROM = threshold
        timing = rlhf.sweep(lambda: (env, rlhf.algorithm1(3.0)), {}, seeds=seeds, steps=steps,
                            devices=1, progress=False).timing
        row.append(timing["seed_steps_per_second"])
      print(f"  A = {A:4d}, {seeds} seeds x {steps} steps: vmapped {row[0]:9.1f}   mapped "
            f"{row[1]:9.1f}   mapped / vmapped {row[1] / row[0]:5.2f}x", flush=True)
  finally:
    solver.SEQUENTIAL_FROM = saved


def alternated_table(title, configs, actions, repeats=3):
  """Algorithm 1 (α = 3) through rlhf.sweep on one device with each of `configs` (label ->
  SolverConfig), alternated in one process; the rates and the first's best over the second's."""
  print(f"{title}, alternated in one process (seed-steps/s)")
  for A in actions:
    seeds, steps = SWEEPS.get(A, (2, 1))
    env = rlhf.random_instance(jax.random.key(A), 1, A, 0.5, 2.0, deviation=1.0)
    rates = {label: [] for label in configs}
    for _ in range(repeats):
      for label, cfg in configs.items():
        agent = lambda cfg=cfg: (env, rlhf.algorithm1(3.0, solver=cfg))
        rates[label].append(rlhf.sweep(agent, {}, seeds=seeds, steps=steps, devices=1,
                                       progress=False).timing["seed_steps_per_second"])
    first, second = (max(r) for r in rates.values())
    shown = "  ".join(f"{label} {[round(x, 1) for x in r]}" for label, r in rates.items())
    print(f"  A = {A:4d}, {seeds} seeds x {steps} steps: {shown}  (best / best {first / second:.2f})",
          flush=True)


def seed_batch_table(actions, prompts=100, repeats=2):
  """Algorithm 1 (α = 3) through rlhf.sweep with the default devices at several seed batches
  (seeds vmapped at once per device), beside the CPU default (`rlhf.registry.cpu_seed_batch`):
  per A on one prompt, and on `prompts` prompts at A = 10; the batches alternated `repeats`
  times, the best and the lowest rate of each."""
  print("6. Algorithm 1 (α = 3) through rlhf.sweep (default devices) per seed batch, alternated "
        f"{repeats} times (seed-steps/s, best (lowest))")
  cases = [(1, A, max(64, SWEEPS.get(A, (2, 1))[0]), SWEEPS.get(A, (2, 1))[1]) for A in actions]
  cases.append((prompts, 10, 256, 4))
  for X, A, seeds, steps in cases:
    env = rlhf.random_instance(jax.random.key(A), X, A, 0.5, 2.0, deviation=1.0)
    default = rlhf_registry.cpu_seed_batch(env)
    rates = {batch: [] for batch in sorted({1, 4, 16, 64, default})}
    for _ in range(repeats):
      for batch, rate in rates.items():
        rate.append(rlhf.sweep(lambda: (env, rlhf.algorithm1(3.0)), {}, seeds=seeds, steps=steps,
                               seed_batch=batch, progress=False).timing["seed_steps_per_second"])
    shown = "  ".join(f"{b}: {max(r):.1f} ({min(r):.1f})" for b, r in rates.items())
    best = max(max(r) for r in rates.values())
    print(f"  |X| = {X}, A = {A:4d}, {seeds} seeds x {steps} steps: {shown}   default {default}: "
          f"{max(rates[default]) / best:.2f} of the best", flush=True)


def trace_table(A, n, repeats=3):
  """7. Where a whole solve's time goes: `solve_optimistic` on n random problems (jitted, vmapped,
  one device) under `jax.profiler.trace`, the executed XLA:CPU thunks summed by kind (a YNNPACK
  fusion, a dot, XLA's own loop fusions by their fused ops) over `repeats` calls."""
  w, pr, pc, r = problems(A, n)
  f = jax.jit(jax.vmap(lambda w, pr, pc, r: rlhf.solve_optimistic(w, pr, pc, 0.5, 3.0, 2.0, r)))
  jax.block_until_ready(f(w, pr, pc, r))
  with tempfile.TemporaryDirectory() as tmp:
    with jax.profiler.trace(tmp, create_perfetto_trace=True):
      for _ in range(repeats):
        jax.block_until_ready(f(w, pr, pc, r))
    with gzip.open(glob.glob(f"{tmp}/**/*.trace.json.gz", recursive=True)[0]) as file:
      events = json.load(file)
  events = events["traceEvents"] if isinstance(events, dict) else events
  total = collections.Counter()
  for e in events:
    name = e.get("name", "")
    if e.get("ph") == "X" and re.match(r"(ynn_fusion|dot|[a-z_-]+_fusion|wrapped_|sort|while)", name):
      kind = re.sub(r"\.\d+$", "", name)
      total[kind if kind in ("ynn_fusion", "dot") else "XLA loop fusions and the rest"] += e["dur"]
  all_ms = sum(total.values()) / 1e3 / repeats
  print(f"7. one solve of {n} problems, A = {A}, one device: {all_ms:.1f} ms of thunks a call")
  for kind, us in total.most_common():
    print(f"  {kind:32s} {us / 1e3 / repeats:8.1f} ms  {us / 1e3 / repeats / all_ms:6.1%}", flush=True)


def main():
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--actions", nargs="+", type=int, default=[3, 10, 50, 200])
  p.add_argument("--batch", type=int, default=16384, help="problems for tables 1-2 (A = 10)")
  p.add_argument("--screen", action="store_true", help="only table 4 (the screen's cost)")
  p.add_argument("--trace", action="store_true",
                 help="only table 7 (a solve's time by kind of XLA:CPU thunk, A = --actions[0])")
  p.add_argument("--seed-batch", action="store_true",
                 help="only table 6 (the default seed batch against others)")
  p.add_argument("--directions", action="store_true",
                 help="only table 5 (the step's directions against the former ones)")
  args = p.parse_args()
  S = rlhf.SolverConfig
  if args.screen:
    return alternated_table("4. screen 'both' (default) vs 'value' (F alone)",
                            {"both": S(), "value": S(screen="value")}, args.actions)
  if args.trace:
    return trace_table(args.actions[0], 1024)
  if args.seed_batch:
    return seed_batch_table(args.actions)
  if args.directions:
    return alternated_table("5. the default directions vs those before (newton_f, dc_gradient)",
                            {"default": S(), "before": S(newton_f=True, dc_gradient=True)},
                            args.actions)
  print(f"jax {jax.__version__}, {jax.devices()[0].platform}; jitted calls on one device, best of 5")
  step_table(10, args.batch)
  laplacian_table(10, args.batch)
  mapping_table(args.actions)


if __name__ == "__main__":
  main()
