"""Seed-steps per second of the sequence agents (`rbx.rlhf.sequences`), with the cost of the
enumeration timed apart.

On `random_sequences` environments (|X| prompts, V tokens, L positions, V^L answers, d = 16,
β = 0.5, r_max = 4, uniform π_ref), "enumerate s" is the seconds to build the environment
(the V^L answers, φ (X, V^L, d), r* and π_ref; a second build, its operations compiled); each agent then runs `--steps` rounds of all
`--seeds` seeds vmapped in one jitted program, told the horizon `--horizon` (the buffer's
capacity), α = 1, `--train-steps` Adam steps per round, and the rate counts a second,
compiled call only (`practical_throughput.rate`).

    python -m benchmarks.throughput.sequence_throughput           # V^L = 4,096 and 65,536, |X| = 64
    python -m benchmarks.throughput.sequence_throughput --tiny    # V^L = 8, |X| = 4: seconds
"""
from __future__ import annotations

import argparse
import os
import time

import jax

from benchmarks.throughput.practical_throughput import rate
from rbx import rlhf
from rbx.rlhf import sequences
from rbx.rlhf.learners import sequence

AGENTS = ("sequence_dpo", "sequence_xpo", "sequence_vpo", "sequence_algorithm1")
SIZES = {"default": [(64, 8, 4), (64, 16, 4)], "tiny": [(4, 2, 3)]}
"""(|X|, V, L) per row: V^L = 4,096 and 65,536 answers; the tiny one 8."""


def build(X: int, V: int, L: int, dim: int):
  """(`random_sequences(key(0), X, V, L, dim, β = 0.5, r_max = 4)`, the seconds of its second
  build, its operations compiled)."""
  for _ in range(2):
    start = time.perf_counter()
    env = jax.block_until_ready(sequences.random_sequences(jax.random.key(0), X, V, L, dim,
                                                           0.5, 4.0))
  return env, time.perf_counter() - start


def main(argv=None) -> list[str]:
  """Prints (and returns) the table's lines."""
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--tiny", action="store_true", help="one tiny size, 2 seeds, 2 rounds")
  p.add_argument("--dim", type=int, default=16)
  p.add_argument("--seeds", type=int, default=8)
  p.add_argument("--steps", type=int, default=3, help="timed rounds")
  p.add_argument("--horizon", type=int, default=100, help="the horizon the agents are told")
  p.add_argument("--train-steps", type=int, default=20)
  p.add_argument("--policies", nargs="*", default=["loglinear"],
                 choices=sorted(sequence.POLICIES))
  p.add_argument("--agents", nargs="*", default=list(AGENTS), choices=AGENTS)
  args = p.parse_args(argv)
  if args.tiny:
    args.seeds, args.steps, args.horizon, args.train_steps = 2, 2, 4, 2
  dev = jax.devices()
  lines = [f"jax {jax.__version__}, {len(dev)} {dev[0].platform} device(s), {os.cpu_count()} "
           f"cores; d = {args.dim}, {args.seeds} seeds × {args.steps} rounds, horizon "
           f"{args.horizon}, α = 1, {args.train_steps} Adam steps (lr 0.1) per round",
           f"{'|X|':>5} {'V':>3} {'L':>2} {'V^L':>7} {'enumerate s':>12} {'agent':<20} "
           f"{'policy':<10} {'seed-steps/s':>13} {'compile s':>10}"]
  print(*lines, sep="\n", flush=True)
  for X, V, L in SIZES["tiny" if args.tiny else "default"]:
    env, built = build(X, V, L, args.dim)
    for name in args.agents:
      for policy in args.policies:
        kwargs = {} if name == "sequence_dpo" else {"alpha": 1.0}
        agent = rlhf.get(name, policy=policy, train_steps=args.train_steps, **kwargs)
        r, c = rate(env, agent, args.seeds, args.steps, args.horizon)
        lines.append(f"{X:>5} {V:>3} {L:>2} {V ** L:>7,} {built:>12.2f} {name:<20} {policy:<10} "
                     f"{r:>13,.1f} {c:>10.1f}")
        print(lines[-1], flush=True)
  return lines


if __name__ == "__main__":
  main()
