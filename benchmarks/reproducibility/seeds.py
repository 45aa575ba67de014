"""Seeds are seeds: a seed's regret is the same bits however a sweep is cut.

For each agent, on a tiny instance of its family, seed s's per-step regret is compared bit for
bit across: a run of many seeds (several batches on every device), two slices of those seeds
(as `rbx run --seeds A:B` and `rbx merge` make them), for the first and last seed and both
sides of the cut; and the seed alone in a sweep and `simulate(env, agent, jax.random.key(s))`,
for the seed that moves from place `cut` to place 0 and the last (in the padded batch). With
`--cost` it prints instead the seed-steps/s of the default path (every batch full, the last
padded) against the one it replaced (a batch of min(seed_batch, seeds per device)), side by
side in one process.

    python -m benchmarks.reproducibility.seeds              # every registered agent
    python -m benchmarks.reproducibility.seeds --classes    # one agent of every policy class
    python -m benchmarks.reproducibility.seeds --cost --seeds 10 --steps 200 --classes

Every run it compares is on the same devices, so it holds under any XLA flags
(tests/core/test_seeds.py runs it under the test suite's cheap code generation, which breaks
equalities between device counts only). Exit status 1 when any seed differs.
"""
from __future__ import annotations

import argparse
import sys
import time

import jax
import numpy as np

from benchmarks import timing
from rbx import neural, rlhf
from rbx.core import sweep as sweep_lib
from rbx.rlhf import sequences

STEPS = 12
SEEDS = 150              # > 2 devices x 64 seeds a batch: several batches per device
SLICE = 41               # where the two slices part
# one agent of every policy class ("name@contextual": a tabular agent on a contextual instance)
CLASSES = {"tabular": "tabular/algorithm1", "contextual": "tabular/xpo@contextual",
           "linear": "linear/algorithm1", "practical": "practical/xpo",
           "sequence": "sequence/algorithm1", "neural": "rbmle_ga"}


def environment(name: str):
  """A tiny instance of the family (and policy class) of agent `name`."""
  name, _, where = name.partition("@")
  if name in neural.FAMILY.agents:
    return neural.synthetic("linear", dim=3, num_arms=3, noise=0.1, seed=0)
  policy_class = rlhf.FAMILY.agents.resolve(name).partition("/")[0]
  if policy_class == "sequence":
    return sequences.random_sequences(jax.random.key(3), 3, 2, 2, 3, beta=0.5, r_max=2.0)
  if policy_class == "tabular" and not where:
    return rlhf.example2(100, 0.5, 6.0)
  return rlhf.random_contextual(jax.random.key(3), 3, 4, 3, beta=0.5, r_max=2.0)


def agent(name: str):
  """Agent `name` with its defaults; the neural ones at width 8 and 2 training steps."""
  name = name.partition("@")[0]
  if name in neural.FAMILY.agents:
    small = {k: v for k, v in (("width", 8), ("train_steps", 2))
             if k in neural.FAMILY.agents[name].params}
    return neural.get(name, **small)
  return rlhf.get(name)


def differences(name: str, steps: int = STEPS, seeds: int = SEEDS, cut: int = SLICE,
                seed_batch: int | None = None) -> dict[str, list[int]]:
  """{how the seeds were run: the looked-at seeds (the slices: the first, both sides of the
  cut, the last; alone and `simulate`: the cut's right side and the last) whose regret differs
  from the `seeds`-seed run's}: every list empty when seeds are seeds. `seed_batch` None: the default (the program width of this config and device kind)."""
  env, ag = environment(name), agent(name)
  build = lambda: (env, ag)
  run = lambda which: sweep_lib.sweep(build, {}, which, steps, seed_batch=seed_batch,
                                      progress=False).regret
  looked_at = [0, cut - 1, cut, seeds - 1]
  moved = looked_at[2:]           # the first of the second slice (place `cut` -> 0) and the last
  whole = run(seeds)
  ways = {"two slices": (looked_at, np.concatenate([run(list(range(cut))),
                                                    run(list(range(cut, seeds)))])[looked_at]),
          "alone": (moved, np.stack([run([s])[0] for s in moved])),
          "simulate": (moved, np.stack([np.asarray(sweep_lib.simulate(
              env, ag, jax.random.key(s), steps, seed_batch=seed_batch).regret)
              for s in moved]))}
  return {way: [s for s, row in zip(which, got) if not np.array_equal(row, whole[s])]
          for way, (which, got) in ways.items()}


def cost(name: str, seeds: int, steps: int) -> tuple[float, float]:
  """Seed-steps/s of `seeds` seeds of agent `name`: the default path (every batch full, the
  last padded) and the former one (a batch of min(seed_batch, seeds per device)), the same
  devices, run seconds only (compiles excluded), best of two."""
  env, ag = environment(name), agent(name)
  build = lambda: (env, ag)
  width = timing.sweep(build, {}, 1, 1)["seed_batch"]
  devices = len(jax.local_devices())
  former = max(1, min(width, -(-seeds // devices)))
  rates = []
  for batch in (width, former):
    best = 0.0
    for _ in range(2):
      t = timing.sweep(build, {}, seeds, steps, seed_batch=batch)
      best = max(best, t["seed_steps"] / t["run_seconds"])
    rates.append(best)
  return rates[0], rates[1]


def main(argv=None) -> int:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--agents", nargs="*", help="agent names, NAME@contextual for a tabular agent "
                 "on a contextual instance (default: every registered agent)")
  p.add_argument("--classes", action="store_true", help="one agent of every policy class")
  p.add_argument("--steps", type=int, default=STEPS)
  p.add_argument("--seeds", type=int, default=SEEDS, help="seeds of the whole run")
  p.add_argument("--cut", type=int, default=SLICE, help="where the two slices part")
  p.add_argument("--seed-batch", type=int, help="the program width (default: the config's)")
  p.add_argument("--cost", action="store_true", help="seed-steps/s before and after, instead "
                 "(--seeds: a small run pays most for the padding)")
  args = p.parse_args(argv)
  names = (list(CLASSES.values()) if args.classes
           else args.agents or [*rlhf.FAMILY.agents, *neural.FAMILY.agents])
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
    found = differences(name, args.steps, args.seeds, args.cut, args.seed_batch)
    bad = {way: seeds for way, seeds in found.items() if seeds}
    failed += bool(bad)
    print(f"{name:22s} {'DIFFERS ' + str(bad) if bad else 'same bits'} "
          f"({time.perf_counter() - begin:.0f} s)", flush=True)
  print(f"{failed} of {len(names)} agents differ")
  return 1 if failed else 0


if __name__ == "__main__":
  sys.exit(main())
