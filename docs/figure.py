"""The README's figure: cumulative regret of Algorithm 1 and XPO on the RLHF paper's Example 2.

    python docs/figure.py                      # 256 seeds x 2,000 steps -> docs/images/example2.png
    python docs/figure.py --seeds 8 --steps 50 --out /tmp/example2.png
"""
from __future__ import annotations

import argparse
from pathlib import Path

from rbx import rlhf
from rbx.core import plots


def main(argv=None) -> None:
  """Runs the README's hello-world sweep at the figure's scale and plots R(t) with 95% CIs."""
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--seeds", type=int, default=256)
  p.add_argument("--steps", type=int, default=2000)
  p.add_argument("--out", type=Path, default=Path(__file__).parent / "images" / "example2.png")
  args = p.parse_args(argv)
  env = rlhf.example2(kappa=500.0, beta=0.1, r_max=7.0)
  res = rlhf.sweep(lambda agent: (env, rlhf.get(agent, alpha=3.0)),
                   grid={"agent": ["algorithm1", "xpo"]}, seeds=args.seeds, steps=args.steps,
                   record="log", log_points=100)
  plots.cumulative(res, args.out)
  print(args.out)


if __name__ == "__main__":
  main()
