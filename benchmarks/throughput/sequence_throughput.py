"""Seed-steps per second of the sequence agents (`rbx.rlhf.sequences`), on the enumerated
answers and on answers as token arrays (`rbx.rlhf.tokens`), side by side, with the cost of
building each environment timed apart.

On `random_sequences` environments (|X| prompts, V tokens, L positions, V^L answers, d = 16,
β = 0.5, r_max = 4, uniform π_ref), "build s" is the seconds to build the environment (the
enumerated one: the V^L answers, φ (X, V^L, d), r* and π_ref; the token one: the min/max-plus
passes and π*; a second build, its operations compiled); each agent then runs `--steps` rounds
of all `--seeds` seeds vmapped in one jitted program, told the horizon `--horizon` (the
buffer's capacity), α = 1, `--train-steps` Adam steps per round, and the rate counts a second,
compiled call only (`practical_throughput.rate`). "tokens/enumerated" is the ratio of the two
paths' rates for the same agent and size (V^L ≤ 65,536; beyond, the token path alone).

    python -m benchmarks.throughput.sequence_throughput           # V^L = 4,096, 65,536, 32^32
    python -m benchmarks.throughput.sequence_throughput --tiny    # V^L = 8, |X| = 4: seconds
    python -m benchmarks.throughput.sequence_throughput --sizes 64,32,32 --answers tokens \
        --agents sequence_algorithm1 --sweep --seeds 256 --steps 100 --train-steps 5 \
        --batch-size 32                                           # a sweep's rate, minibatches

With `--sweep` the rate is `rbx.sweep`'s own (`timing.sweep`: the seeds sharded over every
device at the sweep's seed batch, the horizon `--steps`, compiles excluded); `--batch-size` B
gives the agents minibatch steps (`batch_size`: B comparisons drawn per Adam step, O(B) a step
where the default's DPO term is over the whole buffer, O(horizon)).
"""
from __future__ import annotations

import argparse
import itertools
import os
import time

import jax

from benchmarks import timing
from benchmarks.throughput.practical_throughput import rate
from rbx import rlhf
from rbx.rlhf import sequences
from rbx.rlhf.learners import sequence

AGENTS = ("sequence_dpo", "sequence_xpo", "sequence_vpo", "sequence_algorithm1")
SIZES = {"default": [(64, 8, 4), (64, 16, 4), (64, 32, 32)], "tiny": [(4, 2, 3)]}
"""(|X|, V, L) per row: V^L = 4,096, 65,536 and 32^32 ≈ 1.5·10^48 answers; the tiny one 8."""


def build(X: int, V: int, L: int, dim: int, enumerate: bool):
  """(`random_sequences(key(0), X, V, L, dim, β = 0.5, r_max = 4, enumerate=enumerate)`, the
  seconds of its second build, its operations compiled)."""
  for _ in range(2):
    start = time.perf_counter()
    env = jax.block_until_ready(sequences.random_sequences(jax.random.key(0), X, V, L, dim,
                                                           0.5, 4.0, enumerate=enumerate))
  return env, time.perf_counter() - start


def batch(text: str) -> int | None:
  """A `--batch-size` value: an integer, or "all" (None: the whole buffer)."""
  return None if text == "all" else int(text)


def main(argv=None) -> list[str]:
  """Prints (and returns) the table's lines."""
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--tiny", action="store_true", help="one tiny size, 2 seeds, 2 rounds")
  p.add_argument("--dim", type=int, default=16)
  p.add_argument("--seeds", type=int, default=8)
  p.add_argument("--steps", type=int, default=3, help="timed rounds")
  p.add_argument("--horizon", type=int, default=100, help="the horizon the agents are told")
  p.add_argument("--train-steps", type=int, nargs="*", default=[20],
                 help="Adam steps per round, a row each")
  p.add_argument("--batch-size", type=batch, nargs="*", default=[None],
                 help="comparisons drawn per Adam step (the agents' batch_size), a row each; "
                 "all: the whole buffer (the default)")
  p.add_argument("--sweep", action="store_true", help="time `rbx.sweep` over every device "
                 "(its seed batch, the horizon --steps) instead of one vmapped program")
  p.add_argument("--budget", type=float, default=float("inf"),
                 help="with --sweep: stop each row after the chunk (10 rounds) that passes "
                 "this many seconds of running (the rate of the rounds run)")
  p.add_argument("--policies", nargs="*", default=["loglinear"],
                 choices=sorted(sequence.POLICIES))
  p.add_argument("--agents", nargs="*", default=list(AGENTS), choices=AGENTS)
  p.add_argument("--answers", nargs="*", default=["enumerated", "tokens"],
                 choices=["enumerated", "tokens"], help="the paths to time")
  p.add_argument("--sizes", nargs="*", type=lambda t: tuple(int(v) for v in t.split(",")),
                 help="|X|,V,L triples (default: the module docstring's)")
  args = p.parse_args(argv)
  if args.tiny:
    args.seeds, args.steps, args.horizon, args.train_steps = 2, 2, 4, [2]
  dev = jax.devices()
  how = (f"rbx.sweep, horizon {args.steps}" + (f", {args.budget:g} s a row" if args.sweep and
                                               args.budget < float("inf") else "")
         if args.sweep else f"one vmapped program, horizon {args.horizon}")
  lines = [f"jax {jax.__version__}, {len(dev)} {dev[0].platform} device(s), {os.cpu_count()} "
           f"cores; d = {args.dim}, {args.seeds} seeds × {args.steps} rounds ({how}), α = 1, "
           "Adam (lr 0.1)",
           f"{'|X|':>5} {'V':>3} {'L':>2} {'V^L':>9} {'answers':<10} {'build s':>8} "
           f"{'agent':<20} {'policy':<10} {'train':>5} {'batch':>5} {'seed-steps/s':>13} "
           f"{'compile s':>10} {'tokens/enumerated':>18}"]
  print(*lines, sep="\n", flush=True)
  for X, V, L in args.sizes or SIZES["tiny" if args.tiny else "default"]:
    paths = [a for a in args.answers if a == "tokens" or V ** L <= sequences.MAX_ANSWERS]
    envs = {a: build(X, V, L, args.dim, a == "enumerated") for a in paths}
    for name, policy, train, size in itertools.product(args.agents, args.policies,
                                                       args.train_steps, args.batch_size):
      if policy == "tabular" and "enumerated" not in paths:
        continue
      kwargs = {} if name == "sequence_dpo" else {"alpha": 1.0}
      agent = rlhf.get(name, policy=policy, train_steps=train, batch_size=size, **kwargs)
      rates = {}
      for path in paths if policy != "tabular" else ["enumerated"]:
        env, built = envs[path]
        if args.sweep:
          chunk = {"chunk": 10} if args.budget < float("inf") else {}   # where it can stop
          timed = timing.sweep(lambda: (env, agent), {}, args.seeds, args.steps, args.budget,
                               **chunk)
          rates[path], c = timed["seed_steps_per_second"], timed["compile_seconds"]
        else:
          rates[path], c = rate(env, agent, args.seeds, args.steps, args.horizon)
        ratio = f"{rates['tokens'] / rates['enumerated']:.1f}" if len(rates) == 2 else ""
        answers = f"{V ** L:,}" if V ** L < 10 ** 9 else f"{V}^{L}"
        lines.append(f"{X:>5} {V:>3} {L:>2} {answers:>9} {path:<10} {built:>8.2f} {name:<20} "
                     f"{policy:<10} {train:>5} {size or 'all':>5} {rates[path]:>13,.1f} "
                     f"{c:>10.1f} {ratio:>18}")
        print(lines[-1], flush=True)
  return lines


if __name__ == "__main__":
  main()
