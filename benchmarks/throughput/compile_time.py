"""What a short run waits for: the README hello world's compile seconds (from Python) and
`rbx demo`'s wall time, cold (the compilation cache off, or empty) and warm (the cache the
cold run filled; `rbx.core.compile_cache`, which `rbx.sweep` and the command line share).
With `--agents`, also the cold compile seconds of the shared-linear and practical agents at
|X| = 1,000, A = 10, d = 16 (`AGENTS`): one agent, the class's four paper agents in one grid
(they carry their scheme as data: one program), and three α values of one agent in a
per-agent grid (`rbx.core.grid.Runs`: one program).

Each figure comes from a fresh Python process (`python -c`, `python -m rbx.cli demo`), so
imports and tracing count as a user sees them. `--tree DIR` runs the same commands against
another checkout of rbx (e.g. `git worktree add /tmp/before <commit>`), before and after
side by side in one run: on a shared machine ratios are trustworthy, absolute times are not.
`--threads 1` compiles one program at a time (`RBX_COMPILE_THREADS`), the control for the
driver's compile pool.

    python -m benchmarks.throughput.compile_time [--tree DIR ...] [--threads N ...] [--repeats R]
    python -m benchmarks.throughput.compile_time --agents-only
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import ROOT

HELLO = """
import json
from rbx import rlhf
env = rlhf.example2(kappa=500.0, beta=0.1, r_max=7.0)
res = rlhf.sweep(lambda agent: (env, rlhf.get(agent, alpha=3.0)),
                 grid={"agent": ["algorithm1", "xpo"]}, seeds=64, steps=500, progress=False)
print(json.dumps(res.timing["compile_seconds"]))
"""


AGENT = """
import json, jax
from rbx import rlhf
env = rlhf.random_contextual(jax.random.key(0), 1000, 10, 16, beta=0.5, r_max=4.0)
grid = {grid}
get = lambda agent, alpha: rlhf.get(agent, **({} if agent.endswith("greedy") else {"alpha": alpha}))
res = rlhf.sweep(lambda agent, alpha=1.0: (env, get(agent, alpha)), grid, seeds=16,
                 steps=2, progress=False)
print(json.dumps(res.timing["compile_seconds"]))
"""
AGENTS = {
    f"{cls}: {what}": grid
    for cls in ("linear", "practical")
    for what, grid in (
        ("one agent (xpo)", {"agent": [f"{cls}/xpo"]}),
        ("four agents (algorithm1, vpo, xpo, greedy)",
         {"agent": [f"{cls}/{s}" for s in ("algorithm1", "vpo", "xpo", "greedy")]}),
        ("four rows of one setting (algorithm1, modified, xpo, selm)",
         {"agent": [f"{cls}/{s}" for s in ("algorithm1", "modified", "xpo", "selm")]}),
        ("xpo at three α, a per-agent grid", [{"agent": [f"{cls}/xpo"], "alpha": [0.5, 1.0, 2.0]}]))}
"""Label -> the grid of each agent row (sweep of 16 seeds, 2 steps, cache off)."""


def agents(tree: Path, grid) -> float:
  """`compile_seconds` of a sweep of `grid` (`AGENT`) in a fresh Python, the cache off."""
  out = subprocess.run([sys.executable, "-c", AGENT.replace("{grid}", repr(grid))],
                       env=_env(tree, None, None), capture_output=True, text=True, check=True,
                       cwd=tree)
  return float(out.stdout.strip().splitlines()[-1])


def _env(tree: Path, threads: int | None, cache: str | None) -> dict:
  env = {k: v for k, v in os.environ.items()
         if k not in ("JAX_COMPILATION_CACHE_DIR", "RBX_COMPILATION_CACHE",
                      "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS")}
  env["PYTHONPATH"] = str(tree)
  if threads is not None:
    env["RBX_COMPILE_THREADS"] = str(threads)
  if cache is None:           # cold: the cache turned off explicitly
    env["RBX_COMPILATION_CACHE"] = "off"
  else:                       # a tree with no cache of its own gets JAX's, the same way
    env["RBX_COMPILATION_CACHE"] = env["JAX_COMPILATION_CACHE_DIR"] = cache
    env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0.5"
  return env


def hello(tree: Path, threads: int | None, cache: str | None = None) -> float:
  """The hello world's `compile_seconds` in a fresh Python, with the compilation cache in
  `cache` (None: off, a cold compile)."""
  out = subprocess.run([sys.executable, "-c", HELLO], env=_env(tree, threads, cache),
                       capture_output=True, text=True, check=True, cwd=tree)
  return float(out.stdout.strip().splitlines()[-1])


def demo(tree: Path, threads: int | None, cache: str) -> float:
  """`rbx demo`'s wall seconds with the compilation cache in `cache`."""
  begin = time.perf_counter()
  subprocess.run([sys.executable, "-m", "rbx.cli", "demo", "--no-progress"],
                 env=_env(tree, threads, cache), capture_output=True, text=True, check=True,
                 cwd=tree)
  return time.perf_counter() - begin


def main(argv=None) -> list[dict]:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--tree", type=Path, action="append", default=[],
                 help="another rbx checkout to measure beside this one (repeatable)")
  p.add_argument("--threads", type=int, action="append", default=[],
                 help="RBX_COMPILE_THREADS settings to measure (default: unset only)")
  p.add_argument("--repeats", type=int, default=1, help="runs of each figure (median)")
  p.add_argument("--agents", action="store_true", help="also the linear and practical agents' rows")
  p.add_argument("--agents-only", action="store_true", help="only the agents' rows")
  args = p.parse_args(argv)
  if args.agents or args.agents_only:
    agent_rows(args.tree, args.repeats)
  if args.agents_only:
    return []
  settings = [(tree, threads) for tree in [ROOT] + args.tree for threads in args.threads or [None]]
  figures = {s: {"hello": [], "hello warm": [], "cold": [], "warm": []} for s in settings}
  for _ in range(args.repeats):         # interleaved: every setting sees the same load
    for tree, threads in settings:
      f = figures[tree, threads]
      f["hello"].append(hello(tree, threads))
      with tempfile.TemporaryDirectory(prefix="rbx-compile-time-") as cache:
        hello(tree, threads, cache)                       # fills the cache
        f["hello warm"].append(hello(tree, threads, cache))
      with tempfile.TemporaryDirectory(prefix="rbx-compile-time-") as cache:
        f["cold"].append(demo(tree, threads, cache))
        f["warm"].append(demo(tree, threads, cache))
      print(json.dumps({"tree": str(tree), "threads": threads, **{k: v[-1] for k, v in f.items()}}),
            flush=True)
  rows = [dict(tree=str(tree), threads=threads or "default",
               **{k: statistics.median(v) for k, v in figures[tree, threads].items()})
          for tree, threads in settings]
  print("\n| tree | compile threads | hello world compile s | the same, cache warm | "
        "rbx demo cold s | rbx demo warm s |")
  print("|---|---|---:|---:|---:|---:|")
  for r in rows:
    print(f"| {r['tree']} | {r['threads']} | {r['hello']:.1f} | {r['hello warm']:.1f} | "
          f"{r['cold']:.1f} | {r['warm']:.1f} |")
  return rows


def agent_rows(trees, repeats: int) -> None:
  """The `AGENTS` rows, each tree's beside this one's, interleaved `repeats` times (median)."""
  trees = [ROOT] + list(trees)
  seconds = {(label, tree): [] for label in AGENTS for tree in trees}
  for _ in range(repeats):
    for label, grid in AGENTS.items():
      for tree in trees:
        seconds[label, tree].append(agents(tree, grid))
        print(json.dumps({"row": label, "tree": str(tree), "compile_s": seconds[label, tree][-1]}),
              flush=True)
  print("\n| agents, |X| = 1,000, A = 10, d = 16, cold | " + " | ".join(
      f"compile s ({tree})" for tree in trees) + " |")
  print("|---|" + "---:|" * len(trees))
  for label in AGENTS:
    print(f"| {label} | " + " | ".join(f"{statistics.median(seconds[label, t]):.1f}"
                                        for t in trees) + " |")


if __name__ == "__main__":
  main()
