"""Seed-steps per second of the practical (DPO-form) RLHF agents, with the DPO term from win
counts and from a buffer of the comparisons side by side, and beside the exact-solver agents.

On contextual environments (`rbx.rlhf.random_contextual`: |X| prompts, A answers, features in
R^d, β = 0.5, r_max = 4, uniform π_ref), each agent runs `--steps` rounds of all `--seeds` seeds
vmapped in one jitted program (`rbx.core.protocol.rollout`), told the horizon `--horizon` (the
buffer's capacity, so its rows cost what they would in a run that long); the rate counts a
second, compiled call only. The practical agents train `--train-steps` Adam steps per round on
the log-linear or tabular policy with α = 1 and their default bonus estimate (`--cal-prompts k`:
the exact bonus at k prompts drawn from ρ instead); the exact agents solve (3.1a)/(3.2a) with
the default `SolverConfig`.

    python -m benchmarks.throughput.practical_throughput     # |X| = 10³, 10⁴, A = 10, d = 16
    python -m benchmarks.throughput.practical_throughput --prompts 100 --agents xpo algorithm1
"""
from __future__ import annotations

import argparse
import os

import jax

from benchmarks import timing
from rbx import rlhf
from rbx.core import protocol
from rbx.rlhf.learners import practical

PRACTICAL = ("online_dpo", "practical_xpo", "practical_vpo", "practical_algorithm1")
EXACT = ("xpo", "algorithm1")


def rate(env, agent, seeds, steps, horizon):
  """(seed-steps/s, compile seconds) of `agent` on `env`: `seeds` seeds vmapped, `steps`
  rounds, `agent.init` told `horizon`."""
  keys = jax.random.split(jax.random.key(0), seeds)
  run = jax.jit(jax.vmap(lambda k: protocol.rollout(env, agent, k, steps, horizon).regret))
  first, [timed] = timing.calls(run, keys)
  return seeds * steps / timed, first - timed


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--prompts", type=int, nargs="*", default=[1000, 10000])
  p.add_argument("--actions", type=int, default=10)
  p.add_argument("--dim", type=int, default=16)
  p.add_argument("--seeds", type=int, default=8)
  p.add_argument("--steps", type=int, default=3, help="timed rounds")
  p.add_argument("--horizon", type=int, default=300, help="the horizon the agents are told")
  p.add_argument("--train-steps", type=int, default=20)
  p.add_argument("--policies", nargs="*", default=["loglinear"])
  p.add_argument("--data", nargs="*", default=list(practical.DATA))
  p.add_argument("--cal-prompts", type=int, default=None)
  p.add_argument("--agents", nargs="*", default=list(PRACTICAL))
  args = p.parse_args(argv)
  dev = jax.devices()
  print(f"jax {jax.__version__}, {len(dev)} {dev[0].platform} device(s), {os.cpu_count()} cores; "
        f"A = {args.actions}, d = {args.dim}, {args.seeds} seeds × {args.steps} rounds, "
        f"horizon {args.horizon}, α = 1, {args.train_steps} Adam steps (lr 0.1) per round, "
        f"cal_prompts = {args.cal_prompts}")
  print(f"{'|X|':>6} {'agent':<22} {'policy':<10} {'data':<7} {'seed-steps/s':>13} "
        f"{'compile s':>10}")
  for X in args.prompts:
    env = rlhf.random_contextual(jax.random.key(0), X, args.actions, args.dim, 0.5, 4.0)
    for name in args.agents:
      if name in EXACT:
        r, c = rate(env, rlhf.get(name, alpha=1.0), args.seeds, args.steps, args.horizon)
        print(f"{X:>6} {name + ' (exact)':<22} {'—':<10} {'—':<7} {r:>13,.1f} {c:>10.1f}",
              flush=True)
        continue
      for policy in args.policies:
        for data in args.data:
          kwargs = {} if name == "online_dpo" else {"alpha": 1.0}
          if args.cal_prompts is not None and name != "online_dpo":
            kwargs.update(cal_samples=None, cal_prompts=args.cal_prompts)
          agent = rlhf.get(name, policy=policy, train_steps=args.train_steps, data=data,
                           **kwargs)
          r, c = rate(env, agent, args.seeds, args.steps, args.horizon)
          print(f"{X:>6} {name:<22} {policy:<10} {data:<7} {r:>13,.1f} {c:>10.1f}", flush=True)


if __name__ == "__main__":
  main()
