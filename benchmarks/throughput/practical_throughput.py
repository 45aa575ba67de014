"""Seed-steps per second of the practical (DPO-form) RLHF agents beside the exact-solver agents.

On a contextual environment (`rbx.rlhf.random_contextual`: |X| prompts, A answers, features in
R^d, β = 0.5, r_max = 4, uniform π_ref), each agent runs `rlhf.sweep` (one jitted program,
seeds vmapped in batches of 64) for a few steps after compiling; the rate counts run time only.
The practical agents train `--train-steps` Adam steps per round on the log-linear or tabular
policy; the exact agents solve (3.1a)/(3.2a) with the default `SolverConfig` (Algorithm 1
re-solves every prompt each step, as π_cal = π^(t) changes them all; VPO and XPO with a
constant α only the round's prompt).

    python -m benchmarks.throughput.practical_throughput      # |X| = 100, A = 10, d = 16, 1,024 seeds
    python -m benchmarks.throughput.practical_throughput --seeds 64 --steps 3
"""
from __future__ import annotations

import argparse
import os

import jax

from rbx import rlhf

PRACTICAL = ("online_dpo", "practical_xpo", "practical_vpo", "practical_algorithm1")
EXACT = ("xpo", "algorithm1")


def rate(env, agent, seeds, steps, devices=None):
  """(seed-steps/s, compile seconds) of `agent` on `env` over `seeds` seeds."""
  timing = rlhf.sweep(lambda: (env, agent), {}, seeds=seeds, steps=steps, devices=devices).timing
  return timing["seed_steps_per_second"], timing["compile_seconds"]


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--prompts", type=int, default=100)
  p.add_argument("--actions", type=int, default=10)
  p.add_argument("--dim", type=int, default=16)
  p.add_argument("--seeds", type=int, default=1024)
  p.add_argument("--steps", type=int, default=5, help="timed steps of the practical agents")
  p.add_argument("--exact-steps", type=int, default=2, help="timed steps of the exact agents")
  p.add_argument("--train-steps", type=int, default=20)
  p.add_argument("--policies", nargs="*", default=["loglinear", "tabular"])
  p.add_argument("--agents", nargs="*", default=list(PRACTICAL + EXACT))
  p.add_argument("--devices", type=int, default=1, help="CPU devices to shard the seeds over")
  args = p.parse_args(argv)
  jax.config.update("jax_num_cpu_devices", args.devices)
  env = rlhf.random_contextual(jax.random.key(0), args.prompts, args.actions, args.dim, 0.5, 4.0)
  dev = jax.devices()
  print(f"jax {jax.__version__}, {len(dev)} {dev[0].platform} device(s), {os.cpu_count()} cores; "
        f"|X| = {args.prompts}, A = {args.actions}, d = {args.dim}, {args.seeds} seeds, "
        f"α = 1, {args.train_steps} Adam steps (lr 0.1) per round")
  print(f"{'agent':<22} {'policy':<10} {'steps':>5} {'seed-steps/s':>13} {'compile s':>10}")
  for name in args.agents:
    if name in EXACT:
      agent = rlhf.get(name, alpha=1.0)
      r, c = rate(env, agent, args.seeds, args.exact_steps, args.devices)
      print(f"{name + ' (exact)':<22} {'—':<10} {args.exact_steps:>5} {r:>13,.1f} {c:>10.1f}",
            flush=True)
      continue
    for policy in args.policies:
      kwargs = {} if name == "online_dpo" else {"alpha": 1.0}
      agent = rlhf.get(name, policy=policy, train_steps=args.train_steps, **kwargs)
      r, c = rate(env, agent, args.seeds, args.steps, args.devices)
      print(f"{name:<22} {policy:<10} {args.steps:>5} {r:>13,.1f} {c:>10.1f}", flush=True)


if __name__ == "__main__":
  main()
