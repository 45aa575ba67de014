"""Sweep scaling: seed-steps/s against the number of seeds, the chunking overhead, and the peak
memory of a 10^5-seed RLHF sweep run in seed blocks.

Every sweep is a TOML config run by `rbx.sweep` (`rbx.runs.config`, `rbx.core.driver`), as
`rbx run` does. Rates count run time only (compiles are timed apart).

  python -m benchmarks.throughput.sweep_scaling                 # defaults: about 5 minutes on 2 CPU cores
  python -m benchmarks.throughput.sweep_scaling --seeds 1 100 10000 --rlhf-steps 20 --neural-steps 10

1. Throughput: Algorithm 1 (default solver) on Example 1 and NeuralUCB (width 32, J = 10) on
   a synthetic linear bandit, for each number of seeds (one chunk of all steps), with the
   default devices (all: `import rbx` makes one CPU device per core) and on one device.
2. Chunking overhead: the same RLHF sweep as one monolithic scan (chunk = T) and in
   `--chunks` chunks, without and with a checkpoint written after every chunk; best of
   `--repeats`; the ratio chunked / monolithic (target <= 1.10).
3. Memory: `--memory-seeds` seeds (10^5) in blocks of `--memory-block`, record = "summary",
   each in a fresh process (peak RSS from getrusage), beside the driver's formula.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax

import rbx.core.sweep
from benchmarks import timing
from rbx.core import compile_cache
from rbx.runs import checkpoint, config

RLHF = """
family = "rlhf"
seeds = {seeds}
steps = {steps}
chunk = {chunk}
record = "{record}"
seed_batch = 64
{block}
[env]
name = "example1"
beta = 0.5
r_max = 4.0
[agent]
name = "algorithm1"
alpha = 3.0
{solver}
"""

NEURAL = """
family = "neural"
seeds = {seeds}
steps = {steps}
chunk = {steps}
[env]
name = "synthetic"
reward = "linear"
dim = 5
num_arms = 4
[agent]
name = "neural_ucb"
nu = 0.1
width = 32
train_steps = 10
"""

SMALL_SOLVER = "[agent.solver]\nstarts = 2\niterations = 2\nline_search = 2\nkeep = 2"


def rlhf_config(seeds, steps, chunk=None, record="steps", block=None, solver=""):
  return config.loads(RLHF.format(seeds=seeds, steps=steps, chunk=chunk or steps, record=record,
                                  block="" if block is None else f"seed_block = {block}",
                                  solver=solver))


def timed(cfg, on_chunk=None, **options):
  """(run seconds, compile seconds, seed-steps) of one `rbx.sweep` of `cfg` (`options`
  override the config's)."""
  t = timing.sweep(cfg.build, cfg.grid, cfg.seeds, cfg.steps,
                   **{**cfg.sweep_options(), **options}, on_chunk=on_chunk)
  return t["run_seconds"], t["compile_seconds"], t["seed_steps"]


def throughput(args):
  print(f"## seed-steps/s against seeds ({jax.default_backend()}, {jax.device_count()} device(s))\n")
  print("| agent | seeds | steps | seed-steps/s | compile s | 1 device: seed-steps/s | ratio |")
  print("|---|---:|---:|---:|---:|---:|---:|")
  for name, make, steps in (
      ("algorithm1 (RLHF, A=3)", lambda s: rlhf_config(s, args.rlhf_steps), args.rlhf_steps),
      ("neural_ucb (m=32, J=10)", lambda s: config.loads(NEURAL.format(seeds=s, steps=args.neural_steps)),
       args.neural_steps)):
    for s in args.seeds:
      run_s, compile_s, n = timed(make(s))
      one_s = timed(make(s), devices=1)[0]
      print(f"| {name} | {s} | {steps} | {n / run_s:,.0f} | {compile_s:.1f} | {n / one_s:,.0f} "
            f"| {one_s / run_s:.2f} |", flush=True)


def overhead(args):
  T, chunk = args.overhead_steps, args.overhead_steps // args.chunks
  print(f"\n## chunking overhead (RLHF, {args.overhead_seeds} seeds, T = {T}, "
        f"{args.chunks} chunks of {chunk}; best of {args.repeats})\n")
  mono = rlhf_config(args.overhead_seeds, T)
  cut = rlhf_config(args.overhead_seeds, T, chunk=chunk)
  with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "checkpoint.npz"

    def save(snap):
      arrays = {f"carry.{i}": x for i, x in enumerate(snap.carry or [])}
      checkpoint.save(path, {**arrays, "records.data": snap.records["data"],
                             "records.cum": snap.records["cum"]}, {"t": snap.t})

    best = {k: min(timed(c, cb)[0] for _ in range(args.repeats))
            for k, c, cb in (("monolithic", mono, None), ("chunked", cut, None),
                             ("chunked + checkpoints", cut, save))}
  print("| run | seconds | ratio to monolithic |")
  print("|---|---:|---:|")
  for k, v in best.items():
    print(f"| {k} | {v:.3f} | {v / best['monolithic']:.3f} |")


def memory(args):
  print(f"\n## peak memory: {args.memory_seeds:,} RLHF seeds x {args.memory_steps} steps, "
        "record = \"summary\", small solver, each in a fresh process\n")
  print("| seed block | peak RSS MiB | formula MiB (state + records) | seconds |")
  print("|---:|---:|---:|---:|")
  for block in (args.memory_block, args.memory_seeds):
    out = subprocess.run([sys.executable, "-m", __spec__.name, "--measure-memory", str(args.memory_seeds),
                          str(args.memory_steps), str(block)], capture_output=True, text=True,
                         check=True)
    m = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"| {block:,} | {m['peak_mib']:.0f} | {m['formula_mib']:.1f} | {m['seconds']:.1f} |")
  print("\n(peak RSS includes Python, JAX and XLA themselves: "
        f"{_baseline_mib():.0f} MiB after importing rbx and running one tiny sweep)")


def _measure_memory(seeds, steps, block):
  cfg = rlhf_config(seeds, steps, record="summary", block=block, solver=SMALL_SOLVER)
  begin = time.perf_counter()
  timed(cfg)
  per_seed = rbx.core.sweep.state_bytes(cfg.build, cfg.grid, cfg.steps, cfg.static())
  formula = block * (per_seed + steps * 4) + seeds * 2 * 8     # state, chunk regret, records + cum
  print(json.dumps({"peak_mib": _peak_mib(), "formula_mib": formula / 2 ** 20,
                    "seconds": time.perf_counter() - begin}))


def _baseline_mib():
  """Peak RSS of a 1-seed, 1-step run: the interpreter, JAX and one compiled program."""
  out = subprocess.run([sys.executable, "-m", __spec__.name, "--measure-memory", "1", "1", "1"],
                       capture_output=True, text=True, check=True)
  return json.loads(out.stdout.strip().splitlines()[-1])["peak_mib"]


def _peak_mib():
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main():
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--seeds", type=int, nargs="+", default=[1, 10, 100, 1000, 10000])
  p.add_argument("--rlhf-steps", type=int, default=4)
  p.add_argument("--neural-steps", type=int, default=2)
  p.add_argument("--overhead-seeds", type=int, default=64)
  p.add_argument("--overhead-steps", type=int, default=200)
  p.add_argument("--chunks", type=int, default=10)
  p.add_argument("--repeats", type=int, default=3)
  p.add_argument("--memory-seeds", type=int, default=100_000)
  p.add_argument("--memory-steps", type=int, default=2)
  p.add_argument("--memory-block", type=int, default=10_000)
  p.add_argument("--skip", nargs="*", default=[], choices=["throughput", "overhead", "memory"])
  p.add_argument("--measure-memory", type=int, nargs=3, help=argparse.SUPPRESS)
  args = p.parse_args()
  compile_cache.use(False)     # its compile seconds are compiles, not loads from the disk cache
  if args.measure_memory:
    _measure_memory(*args.measure_memory)
    return
  for part in (throughput, overhead, memory):
    if part.__name__ not in args.skip:
      part(args)


if __name__ == "__main__":
  main()
