"""`rbx demo`: the RLHF paper's Examples 1 and 2 with Algorithm 1, VPO and XPO.

Example 1 (Proposition 1): VPO with π_cal = 1_{a0} never compares against a0 and stays
≥ 1/2 suboptimal. Example 2 (Proposition 2, Remark 1): with a reference policy far from human
preference (large κ) and small β, XPO's comparisons against π_ref carry no information and it
stays ≥ 0.01 suboptimal. Algorithm 1 escapes both. All runs use the same constant α.
"""
from __future__ import annotations

import time

import numpy as np

from rbx import rlhf

ALPHA = 3.0
STEPS = 500
SEEDS = 64
AGENTS = ("algorithm1", "vpo", "xpo")
EXAMPLES = {
    # Proposition 1 holds for t ≤ e^(r_max/β)/2 ≈ 1490 > STEPS.
    "example1": lambda: rlhf.example1(p=0.0, beta=0.5, r_max=4.0),
    # Proposition 2 holds for t ≤ min(κ, e^(r_max)/2) = 500 = STEPS.
    "example2": lambda: rlhf.example2(kappa=500.0, beta=0.1, r_max=7.0),
}
THRESHOLDS = {"example1": 0.5, "example2": 0.01}   # the suboptimality of Propositions 1 and 2


def run(seeds: int = SEEDS, steps: int = STEPS, alpha: float = ALPHA, echo=print,
        progress: bool | str | None = None) -> dict:
  """Runs the demo; returns {example: `rbx.Results` with axes (agent, seed, step)}.
  `progress` is the sweeps' progress (see `rbx.sweep`), on stderr while an example runs;
  `echo` gets each example's table once its sweep is done, so no progress or compile line
  falls between a table's header and its rows."""
  results = {}
  echo(f"rbx demo: {seeds} seeds x {steps} steps, constant alpha = {alpha:g} "
       "(mean ± std over seeds, ddof = 1)")
  for name, make_env in EXAMPLES.items():
    env = make_env()
    start = time.perf_counter()
    res = rlhf.sweep(lambda agent: (env, rlhf.get(agent, alpha=alpha)), {"agent": list(AGENTS)},
                     seeds=seeds, steps=steps, progress=progress)
    results[name] = res
    thr = THRESHOLDS[name]
    echo(f"\n{name}: {len(AGENTS)} agents in {time.perf_counter() - start:.1f} s")
    echo(f"{'example':<10} {'agent':<11} {'cumulative regret':>22} {'still suboptimal':>18}")
    for i, agent in enumerate(AGENTS):
      final = res.final()[i]
      stuck = np.mean(res.regret[i, :, -1] >= thr)
      echo(f"{name:<10} {agent:<11} {final.mean():>12.1f} ± {final.std(ddof=1):<8.1f}"
           f" {stuck:>8.0%} (>= {thr:g})")
  return results
