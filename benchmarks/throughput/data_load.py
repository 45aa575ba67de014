"""Data-load times: `rbx.data.load` of every data set in the data directory, first load (empty
cache), cached load, and the pure-Python parser (no pandas, no cache), side by side.

  python -m benchmarks.throughput.data_load                   # every *.csv.gz in ../shared/datasets
  python -m benchmarks.throughput.data_load --names covertype --repeats 3

Each figure is a fresh Python process timing the `rbx.data.load` call alone (the imports
apart), the best of `--repeats`, as wall-clock seconds and, in parentheses, the process's CPU
seconds (which other jobs on a shared machine inflate less):

  first:  an empty cache directory (RBX_CACHE_DIR, a temporary one): parse with pandas,
          preprocess, write the cache file; pandas' import, which the first load of a process
          makes, is timed apart (`import pandas`, once per process, not per data set);
  cached: a new process on that cache: hash the file (SHA-256), read the .npz;
  pure:   pandas hidden (`sys.modules["pandas"] = None`) and `cache=False`: the `csv` module.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CODE = """
import sys, time
from rbx import data
start = time.perf_counter()
if {pure}:
  sys.modules["pandas"] = None
else:
  import pandas
imported, cpu = time.perf_counter(), time.process_time()
ds = data.load({name!r}, data_dir={data_dir!r}, cache={cache})
print(time.perf_counter() - imported, time.process_time() - cpu, imported - start,
      *ds.features.shape)
"""


def timed(name: str, data_dir: str, cache_dir: str, pure: bool = False) -> list[float]:
  """[load seconds, its CPU seconds, pandas import seconds, rows, features] of one load in a
  fresh process."""
  code = CODE.format(pure=pure, name=name, data_dir=data_dir, cache=not pure)
  out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, RBX_CACHE_DIR=cache_dir),
                       check=True, capture_output=True, text=True).stdout.split()
  return [float(v) for v in out]


def main() -> None:
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--data-dir", default=str(SHARED_DATASETS))
  p.add_argument("--names", nargs="*", help="data sets (default: every *.csv.gz there)")
  p.add_argument("--repeats", type=int, default=1)
  args = p.parse_args()
  names = args.names or sorted(f.name.removesuffix(".csv.gz")
                               for f in Path(args.data_dir).glob("*.csv.gz"))
  print("| data set | rows | features | first load (s) | cached load (s) | pure parser (s) |"
        " pandas import (s) |")
  print("|---|---:|---:|---:|---:|---:|---:|")
  for name in names:
    first, cached, pure, imports = [], [], [], []
    for _ in range(args.repeats):
      with tempfile.TemporaryDirectory() as cache_dir:
        *seconds, imported, rows, features = timed(name, args.data_dir, cache_dir)
        first.append(seconds)
        imports.append(imported)
        cached.append(timed(name, args.data_dir, cache_dir)[:2])
        pure.append(timed(name, args.data_dir, cache_dir, pure=True)[:2])
    cells = " | ".join("{:.2f} ({:.2f})".format(*min(times)) for times in (first, cached, pure))
    print(f"| {name} | {rows:.0f} | {features:.0f} | {cells} | {min(imports):.2f} |", flush=True)


if __name__ == "__main__":
  main()
