"""The regret cost of the sequence agents' cheaper rounds — fewer Adam steps (`train_steps`),
minibatch steps (`batch_size`: B comparisons drawn per step) — against the default (20 steps on
the whole buffer), paired over seeds.

Every setting runs Algorithm 1 (α = 1, the log-linear policy, Adam) on the same seeds of
`random_sequences(key(0), 16, 8, 8, 8, β = 0.5, r_max = 4, enumerate=False)` (answers as
tokens). Printed per setting: R(T) (mean ± sd over seeds), the mean regret of the last 20
rounds, and R(T) − R(T) of the default with its 95% t interval and Holm's adjusted p over the
settings. The throughput side is `benchmarks/throughput/sequence_throughput.py --sweep`.

Usage: python -m benchmarks.accuracy.minibatch_regret [--seeds 32] [--steps 300]
"""
from __future__ import annotations

import argparse

import jax
import numpy as np

from rbx import rlhf
from rbx.core import stats
from rbx.rlhf import sequences

DEFAULT = (20, None, 0.1)
SETTINGS = [(1, None, 0.1), (5, 32, 0.1), (1, 128, 0.1), (5, 32, 0.03)]
"""(train_steps, batch_size, learning_rate) beside the default's."""


def regrets(env, setting, seeds, steps) -> np.ndarray:
  """Per-step regret of Algorithm 1 at `setting`, (seeds, steps)."""
  train, size, lr = setting
  res = rlhf.sweep(lambda: (env, rlhf.get("sequence/algorithm1", alpha=1.0, train_steps=train,
                                          batch_size=size, learning_rate=lr)),
                   {}, seeds=seeds, steps=steps, progress=False)
  return np.asarray(res.regret).reshape(seeds, steps)


def main(argv=None) -> list[str]:
  """Prints (and returns) the table's lines."""
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--seeds", type=int, default=32)
  p.add_argument("--steps", type=int, default=300)
  args = p.parse_args(argv)
  env = sequences.random_sequences(jax.random.key(0), 16, 8, 8, 8, 0.5, 4.0, enumerate=False)
  runs = {s: regrets(env, s, args.seeds, args.steps) for s in [DEFAULT, *SETTINGS]}
  total = {s: r.sum(axis=1) for s, r in runs.items()}
  family = stats.holm({s: stats.paired(total[s], total[DEFAULT]) for s in SETTINGS})
  lines = [f"|X| = 16, V = 8, L = 8, d = 8; Algorithm 1, α = 1; {args.seeds} seeds, "
           f"T = {args.steps}; R(T) paired against the default (20 steps, whole buffer)",
           "| train steps | batch | lr | R(T) | last 20 rounds | R(T) − default (95% t) | "
           "Holm p |", "|---:|---:|---:|---:|---:|---:|---:|"]
  for s, r in runs.items():
    train, size, lr = s
    c = family.get(s)
    diff = (f"{c.mean:+.1f} [{c.low:+.1f}, {c.high:+.1f}] | {c.p_holm:.3f}" if c else "— | —")
    lines.append(f"| {train} | {size or 'all'} | {lr} | {total[s].mean():.1f} ± "
                 f"{total[s].std(ddof=1):.1f} | {r[:, -20:].mean():.3f} | {diff} |")
  print(*lines, sep="\n")
  return lines


if __name__ == "__main__":
  main()
