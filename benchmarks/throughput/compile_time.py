"""What a short run waits for: the README hello world's compile seconds (from Python) and
`rbx demo`'s wall time, cold (the compilation cache off, or empty) and warm (the cache the
cold run filled; `rbx.core.compile_cache`, which `rbx.sweep` and the command line share).

Each figure comes from a fresh Python process (`python -c`, `python -m rbx.cli demo`), so
imports and tracing count as a user sees them. `--tree DIR` runs the same commands against
another checkout of rbx (e.g. `git worktree add /tmp/before <commit>`), before and after
side by side in one run: on a shared machine ratios are trustworthy, absolute times are not.
`--threads 1` compiles one program at a time (`RBX_COMPILE_THREADS`), the control for the
driver's compile pool.

    python -m benchmarks.throughput.compile_time [--tree DIR ...] [--threads N ...] [--repeats R]
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
  args = p.parse_args(argv)
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


if __name__ == "__main__":
  main()
