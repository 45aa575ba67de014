"""`rbx demo`: the RLHF paper's Examples 1 and 2 with Algorithm 1, VPO and XPO.

Example 1 (Proposition 1): VPO with π_cal = 1_{a0} never compares against a0 and stays
≥ 1/2 suboptimal. Example 2 (Proposition 2, Remark 1): with a reference policy far from human
preference (large κ) and small β, XPO's comparisons against π_ref carry no information and it
stays ≥ 0.01 suboptimal. Algorithm 1 escapes both. All runs use the same constant α. Each agent's cumulative regret is
printed as the mean ± std over seeds and as the median with the 10–90% range: where seeds split
into stuck and escaped (VPO on Example 2) the mean lies between the two groups and describes
neither, the quantiles show both.
"""
from __future__ import annotations

import time

import numpy as np

from rbx import rlhf
from rbx.core.results import QUANTILES

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
  results, (q10, q90) = {}, QUANTILES
  echo(f"rbx demo: {seeds} seeds x {steps} steps, constant alpha = {alpha:g} (R(T) over seeds: "
       f"mean ± std, ddof = 1; median [{q10:.0%}, {q90:.0%} quantiles])")
  for name, make_env in EXAMPLES.items():
    env = make_env()
    start = time.perf_counter()
    res = rlhf.sweep(lambda agent: (env, rlhf.get(agent, alpha=alpha)), {"agent": list(AGENTS)},
                     seeds=seeds, steps=steps, progress=progress)
    results[name] = res
    thr = THRESHOLDS[name]
    echo(f"\n{name}: {len(AGENTS)} agents in {time.perf_counter() - start:.1f} s")
    echo(f"{'example':<10} {'agent':<11} {'mean ± std':>16}   {'median [10%, 90%]':<24}"
         f"{'still suboptimal'}")
    for row in res.summary():
      stuck = np.mean(res.sel(agent=row["agent"]).regret[:, -1] >= thr)
      quantiles = f"{row['median']:.1f} [{row['q10']:.1f}, {row['q90']:.1f}]"
      echo(f"{name:<10} {row['agent']:<11} {row['mean']:>8.1f} ± {row['std']:<6.1f}  "
           f"{quantiles:<24} {stuck:>4.0%} (>= {thr:g})")
  return results
