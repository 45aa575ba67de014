"""The `rbx` command line."""
from __future__ import annotations

import argparse
import sys

from rbx.data import cli as data_cli


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(prog="rbx", description=__doc__)
  sub = parser.add_subparsers(dest="command", required=True)
  demo = sub.add_parser("demo", help="the RLHF paper's Examples 1-2 with Algorithm 1, VPO, XPO")
  demo.add_argument("--seeds", type=int, default=None, help="number of seeds (default 64)")
  demo.add_argument("--steps", type=int, default=None, help="iterations per run (default 500)")
  demo.add_argument("--alpha", type=float, default=None, help="the constant alpha (default 3)")
  data_cli.register(sub)
  args = parser.parse_args(argv)
  if args.command == "data":
    return args.handler(args)

  if args.command == "demo":
    from rbx import demo as demo_lib
    try:
      demo_lib.run(seeds=args.seeds or demo_lib.SEEDS, steps=args.steps or demo_lib.STEPS,
                   alpha=demo_lib.ALPHA if args.alpha is None else args.alpha)
    except ValueError as e:
      print(f"rbx demo: {e}", file=sys.stderr)
      return 2
  return 0


if __name__ == "__main__":
  sys.exit(main())
