"""Where a step of a linear agent (`rbx.rlhf.learners.linear`) spends its time: a `jax.profiler`
trace of its compiled steps, each XLA op's time summed by kind, output shape and source op.

    python -m benchmarks.profiles.linear_profile [--prompts 1000] [--agent linear_xpo] [--seeds 8]
                                        [--steps 10] [--baseline REV] [--top 25]

On `random_contextual(key(0), |X|, A = 10, d = 16, β = 0.5, r_max = 4)`: the agent runs 30
steps, then `--steps` more, vmapped over `--seeds`, are traced; with `--baseline REV`, on git
revision REV's whole tree (`benchmarks.revision`: a worktree, removed after). Run it with `RBX_NUM_CPU_DEVICES=1` (one device: a
program and its ops on one timeline). Prints the op time per step and the `--top` groups:
XLA's fusion name without its number (`ynn_fusion` is one handed to YNNPACK), its output shape
and the last JAX op it came from, with the share of the op time and the calls per step.
"""
from __future__ import annotations

import argparse
import collections
import gzip
import json
import pathlib
import re
import tempfile

import jax
import jax.numpy as jnp
from benchmarks import revision

from rbx import rlhf
from rbx.core.protocol import pair, scan


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--prompts", type=int, default=1000)
  parser.add_argument("--agent", default="linear_xpo")
  parser.add_argument("--seeds", type=int, default=8)
  parser.add_argument("--steps", type=int, default=10)
  parser.add_argument("--baseline", help="git revision whose agent to profile")
  parser.add_argument("--top", type=int, default=25)
  args = parser.parse_args(argv)
  if args.baseline:
    with revision.checkout(args.baseline) as python:
      print(python("-m", __spec__.name, "--prompts", str(args.prompts), "--agent", args.agent,
                   "--seeds", str(args.seeds), "--steps", str(args.steps), "--top", str(args.top)),
            end="")
    return
  env = rlhf.random_contextual(jax.random.key(0), args.prompts, 10, 16, 0.5, 4.0)
  agent = rlhf.get(args.agent)
  run = pair(env, agent, 30 + args.steps)
  keys = jax.vmap(jax.random.key)(jnp.arange(args.seeds))
  carry = jax.jit(jax.vmap(lambda k: scan(run, k, run.init(k), 1, 30, lambda tr: tr.regret)[0]))(
      keys)
  steps = jax.jit(jax.vmap(lambda c, k: scan(run, k, c, 31, args.steps, lambda tr: tr.regret)[0]))
  jax.block_until_ready(steps(carry, keys))
  hlo = steps.lower(carry, keys).compile().as_text()
  source = {m[1]: (re.sub(r"\{.*", "", m[2]), m[3].split("/")[-1]) for m in re.finditer(
      r"^\s*%([\w.\-]+) = (\S+) [\w\-]+\(.*?op_name=\"([^\"]*)\"", hlo, re.MULTILINE)}
  with tempfile.TemporaryDirectory() as trace:
    with jax.profiler.trace(trace, create_perfetto_trace=True):
      jax.block_until_ready(steps(carry, keys))
    with gzip.open(next(pathlib.Path(trace).rglob("*.json.gz"))) as f:
      events = json.load(f)
  events = events["traceEvents"] if isinstance(events, dict) else events
  groups = collections.defaultdict(lambda: [0, 0.0])
  for e in events:
    if e.get("ph") == "X" and not e["name"].startswith(("$", "Thunk", "end:")):
      key = (re.sub(r"\.\d+$", "", e["name"]), *source.get(e["name"], ("", "")))
      groups[key][0] += 1
      groups[key][1] += e.get("dur", 0.0)
  total = sum(t for _, t in groups.values())
  print(f"|X| = {args.prompts}, {args.agent} ({revision.name()}), {args.seeds} seeds: "
        f"op time {total / 1e3 / args.steps:.1f} ms a step")
  print("| op | shape | from | ms/step | share | calls/step |\n|---|---|---|---:|---:|---:|")
  for (op, shape, origin), (n, t) in sorted(groups.items(), key=lambda g: -g[1][1])[:args.top]:
    print(f"| {op} | {shape} | {origin} | {t / 1e3 / args.steps:.2f} | {t / total:.1%} | "
          f"{n / args.steps:g} |")


if __name__ == "__main__":
  main()
