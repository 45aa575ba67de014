"""`rbx data ...`: the data-set subcommands of the `rbx` command line."""
from __future__ import annotations

import argparse
import sys

from rbx.data import loader, openml


def register(subparsers) -> None:
  """Adds `data download NAME...` to the `rbx` parser's subcommands."""
  data = subparsers.add_parser("data", help="data sets for the neural-bandit benchmarks")
  sub = data.add_subparsers(dest="data_command", required=True)
  dl = sub.add_parser("download", help="fetch data sets from OpenML into the data directory",
                      description=f"Fetches {', '.join(openml.DATASETS)} from OpenML, checks the"
                      " MD5 checksum OpenML publishes and writes NAME.csv.gz atomically into the"
                      f" data directory (--data-dir, else ${loader.ENV_VAR}, else"
                      " $XDG_CACHE_HOME/rbx/datasets or ~/.cache/rbx/datasets).")
  dl.add_argument("names", nargs="+", metavar="NAME", help=f"one of {', '.join(openml.DATASETS)}")
  dl.add_argument("--data-dir", default=None, help="the data directory")
  dl.set_defaults(handler=download)


def download(args: argparse.Namespace) -> int:
  """Downloads every named data set; prints the file and its shape, or the error (exit 2)."""
  for name in args.names:
    try:
      path = openml.download(name, args.data_dir)
      ds = loader.load(path)
    except (openml.DownloadError, ValueError, OSError) as e:
      print(f"rbx data download: {e}", file=sys.stderr)
      return 2
    print(f"{path}: {ds.features.shape[0]} rows, {ds.features.shape[1]} features after"
          f" preprocessing, {ds.num_classes} classes")
  return 0
