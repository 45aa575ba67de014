"""Seed-steps per second of the linear and log-linear DPO-form agents on contexts drawn from a
generator every round, beside the same agents on a finite prompt set of the pool's size.

The generated environment is the registered `generated_contextual` (`rbx.rlhf.generated`:
s ~ U[0, 1]^k, φ(s, a) = ((a + 1) cos πs, sin πs/(a + 1)), d = 2k, θ* ~ N(0, I), β = 1,
r_max = 4, uniform π_ref), its regret exact over a pool of `--pool` contexts; the finite one
is `rbx.rlhf.random_contextual` with |X| = `--pool` prompts and the same A and d. Each agent
runs `--steps` rounds of all `--seeds` seeds vmapped in one jitted program, told the horizon
`--horizon`; the rate counts a second, compiled call only (`practical_throughput.rate`).

    PYTHONPATH=. python -m benchmarks.throughput.generated_throughput    # A = 16, d = 8, m = 1,000
"""
from __future__ import annotations

import argparse
import os

import jax

from benchmarks.throughput.practical_throughput import rate
from rbx import rlhf

AGENTS = {"linear/greedy": {}, "linear/xpo": {}, "practical/greedy": {"policy": "loglinear"},
          "practical/xpo": {"policy": "loglinear"}}


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--pool", type=int, default=1000)
  p.add_argument("--actions", type=int, default=16)
  p.add_argument("--context-dim", type=int, default=4)
  p.add_argument("--seeds", type=int, default=8)
  p.add_argument("--steps", type=int, default=20, help="timed rounds")
  p.add_argument("--horizon", type=int, default=200, help="the horizon the agents are told")
  p.add_argument("--agents", nargs="*", default=list(AGENTS))
  args = p.parse_args(argv)
  dev = jax.devices()
  d = 2 * args.context_dim
  print(f"jax {jax.__version__}, {len(dev)} {dev[0].platform} device(s), {os.cpu_count()} cores; "
        f"A = {args.actions}, d = {d}, pool / |X| = {args.pool}, {args.seeds} seeds × "
        f"{args.steps} rounds, horizon {args.horizon}")
  envs = {"generated": rlhf.registry.FAMILY.load_env("generated_contextual", dict(
              num_actions=args.actions, context_dim=args.context_dim, pool_size=args.pool)),
          "finite": rlhf.random_contextual(jax.random.key(0), args.pool, args.actions, d, 1.0,
                                           4.0)}
  print(f"{'agent':<18} {'contexts':<10} {'seed-steps/s':>13} {'compile s':>10}")
  for name in args.agents:
    for kind, env in envs.items():
      r, c = rate(env, rlhf.get(name, **AGENTS.get(name, {})), args.seeds, args.steps,
                  args.horizon)
      print(f"{name:<18} {kind:<10} {r:>13,.1f} {c:>10.1f}", flush=True)


if __name__ == "__main__":
  main()
