"""Seeds are seeds: a seed's regret is the same bits however a sweep is cut.

For each agent, on a tiny instance of its family, seed s's per-step regret is compared bit for
bit across: a run of many seeds (several batches on every device), two slices of those seeds
(as `rbx run --seeds A:B` and `rbx merge` make them), the seed alone in a sweep, and
`simulate(env, agent, jax.random.key(s))`; with `--cost`, also the seed-steps/s of today's
default path against the width-follows-the-slice path it replaced (one seed per device batch
holding `min(seed_batch, seeds per device)`), side by side in one process.

    python -m benchmarks.reproducibility.seeds              # every registered agent
    python -m benchmarks.reproducibility.seeds --agents algorithm1 rbmle_ga
    python -m benchmarks.reproducibility.seeds --cost       # what invariance costs

Run it with the default XLA flags (tests/test_seeds.py runs it in a child process without the
test suite's code-generation flags, which break equalities between device counts). Exit status
1 when any seed differs.
"""
from __future__ import annotations

import argparse
import sys
import time

import jax
import numpy as np

from rbx import neural, rlhf
from rbx.core import sweep as sweep_lib
from rbx.rlhf import sequences

STEPS = 12
SEEDS = 150              # > 2 devices x 64 seeds a batch: several batches per device
SLICE = 41               # where the two slices part
LOOKED_AT = (0, 40, 41, 149)   # the seeds run alone and by simulate


def environment(name: str):
  """A tiny instance of the family (and policy class) of agent `name`."""
  if name in neural.FAMILY.agents:
    return neural.synthetic("linear", dim=3, num_arms=3, noise=0.1, seed=0)
  if name.startswith("sequence_"):
    return sequences.random_sequences(jax.random.key(3), 3, 2, 2, 3, beta=0.5, r_max=2.0)
  if name in ("algorithm1", "vpo", "modified", "xpo", "selm", "greedy"):
    return rlhf.example2(100, 0.5, 6.0)
  return rlhf.random_contextual(jax.random.key(3), 3, 4, 3, beta=0.5, r_max=2.0)


def agent(name: str):
  """Agent `name` with its defaults; the neural ones at width 8 and 2 training steps."""
  if name in neural.FAMILY.agents:
    small = {k: v for k, v in (("width", 8), ("train_steps", 2))
             if k in neural.FAMILY.agents[name].params}
    return neural.get(name, **small)
  return rlhf.get(name)


def differences(name: str, steps: int = STEPS) -> dict[str, list[int]]:
  """{how the seeds were run: the looked-at seeds whose regret differs from the many-seed
  run's}: every list empty when seeds are seeds."""
  env, ag = environment(name), agent(name)
  build = lambda: (env, ag)
  run = lambda seeds: sweep_lib.sweep(build, {}, seeds, steps, progress=False).regret
  whole = run(SEEDS)
  ways = {"two slices": np.concatenate([run(list(range(SLICE))),
                                        run(list(range(SLICE, SEEDS)))])[list(LOOKED_AT)],
          "alone": np.stack([run([s])[0] for s in LOOKED_AT]),
          "simulate": np.stack([np.asarray(sweep_lib.simulate(env, ag, jax.random.key(s),
                                                              steps).regret)
                                for s in LOOKED_AT])}
  return {way: [s for s, row in zip(LOOKED_AT, got) if not np.array_equal(row, whole[s])]
          for way, got in ways.items()}


def cost(name: str, seeds: int, steps: int) -> tuple[float, float]:
  """Seed-steps/s of `seeds` seeds of agent `name`: the default path (every batch full, the
  last padded) and the former one (a batch of min(seed_batch, seeds per device)), the same
  devices, run seconds only (compiles excluded), best of two."""
  env, ag = environment(name), agent(name)
  build = lambda: (env, ag)
  width = sweep_lib.sweep(build, {}, 1, 1, progress=False).timing["seed_batch"]
  devices = len(jax.local_devices())
  former = max(1, min(width, -(-seeds // devices)))
  rates = []
  for batch in (width, former):
    best = 0.0
    for _ in range(2):
      t = sweep_lib.sweep(build, {}, seeds, steps, seed_batch=batch, progress=False).timing
      best = max(best, t["seed_steps"] / t["run_seconds"])
    rates.append(best)
  return rates[0], rates[1]


def main(argv=None) -> int:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--agents", nargs="*", help="agent names (default: every registered agent)")
  p.add_argument("--steps", type=int, default=STEPS)
  p.add_argument("--cost", action="store_true", help="seed-steps/s before and after, instead")
  p.add_argument("--seeds", type=int, default=10, help="seeds of a --cost run (a small run "
                 "pays most for the padding)")
  args = p.parse_args(argv)
  names = args.agents or [*rlhf.FAMILY.agents, *neural.FAMILY.agents]
  print(f"jax {jax.__version__}, {len(jax.local_devices())} {jax.default_backend()} device(s)")
  if args.cost:
    print(f"| agent | seeds | steps | padded (seed-steps/s) | former (seed-steps/s) | ratio |")
    print("|---|---|---|---|---|---|")
    for name in names:
      new, old = cost(name, args.seeds, args.steps)
      print(f"| {name} | {args.seeds} | {args.steps} | {new:,.0f} | {old:,.0f} | {new / old:.2f} |",
            flush=True)
    return 0
  failed = 0
  for name in names:
    begin = time.perf_counter()
    found = differences(name, args.steps)
    bad = {way: seeds for way, seeds in found.items() if seeds}
    failed += bool(bad)
    print(f"{name:22s} {'DIFFERS ' + str(bad) if bad else 'same bits'} "
          f"({time.perf_counter() - begin:.0f} s)", flush=True)
  print(f"{failed} of {len(names)} agents differ")
  return 1 if failed else 0


if __name__ == "__main__":
  sys.exit(main())
