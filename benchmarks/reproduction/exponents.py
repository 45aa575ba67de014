"""Regret growth of Algorithm 1 with Proposition 3's α_t, against (β+1)/(β+2)."""
from __future__ import annotations

import dataclasses
import jax
import numpy as np
from benchmarks.reproduction.common import Context, png

from rbx import rlhf, schedules
from rbx.runs import report
from rbx.core import plots
from rbx.core import results as results_lib


@dataclasses.dataclass(frozen=True)
class Sizes:
  """This section's sizes at one scale."""
  betas: tuple[float, ...]   # β of the runs
  exponent_seeds: int   # seeds
  exponent_steps: int   # the longest horizon T


QUICK = Sizes(betas=(0.2, 1.0), exponent_seeds=16, exponent_steps=100_000)
FULL = Sizes(betas=(0.05, 0.1, 0.2, 0.5, 1.0), exponent_seeds=256, exponent_steps=1_000_000)


def run(ctx: Context) -> tuple[str, str]:
  """Regret growth of Algorithm 1 with Proposition 3's schedule, per β, to T = exponent_steps:
  the slope of log R(t) on log t within the run and of log R(T) on log T over runs of horizons
  T/100, T/10 and T (each with the schedule for its own T), with bootstrap intervals."""
  scale, figdir = (FULL if ctx.full else QUICK), ctx.figdir
  T, r_max, n = scale.exponent_steps, 2.0, scale.exponent_seeds
  horizons = [T // 100, T // 10, T]
  env_key = jax.random.key(0)
  finals = []
  for horizon in horizons:
    def build(beta, horizon=horizon):
      env = rlhf.random_instance(env_key, 1, 3, beta, r_max, 1.0)
      return env, rlhf.algorithm1(schedules.proposition3(3, horizon, beta, r_max, kappa=1.0))
    res = rlhf.sweep(build, {"beta": list(scale.betas)}, seeds=n, steps=horizon, record="log",
                     log_points=60)
    finals.append(res.final())                               # (beta, seed)
  r = dataclasses.replace(res, config={"family": "rlhf"})     # the longest run
  t = r.coords["step"]
  within = results_lib.scaling_slope_ci(t, r.cumulative)
  across = results_lib.scaling_slope_ci(np.asarray(horizons), np.stack(finals, axis=-1),
                                        t_min=horizons[0])
  lines = ["## Regret growth: Algorithm 1 with the schedule of Proposition 3", "",
           f"A random 3-action instance with uniform π_ref (Assumption 1 with κ = 1), r_max = "
           f"{r_max:g}, {n} seeds. *Within run*: the slope of log mean R(t) on log t over "
           f"√T ≤ t ≤ T in the run of horizon T = {T:,} (R(t) kept at 60 log-spaced steps). "
           "*Across horizons*: the slope of log mean R(T) on log T over separate runs with "
           f"T ∈ {{{', '.join(f'{h:,}' for h in horizons)}}}, each with α_t of Proposition 3 "
           "for its own T — the form of the proposition's bound R(T) = O(T^((β+1)/(β+2))). "
           "Intervals: 95% bootstrap over the seeds. A slope whose interval lies above "
           "(β+1)/(β+2) would contradict the bound's rate at these horizons; the failing "
           "schemes' slopes ≈ 1 in the table of Propositions 1–2 show the fit can see linear "
           "regret.", "",
           "| β | " + " | ".join(f"R({h:,})" for h in horizons)
           + " | slope within run | slope across horizons | (β+1)/(β+2) |",
           "|---:|" + "---:|" * (len(horizons) + 3)]
  above = 0
  for i, beta in enumerate(scale.betas):
    bound = (beta + 1) / (beta + 2)
    above += int(within[1][i] > bound) + int(across[1][i] > bound)
    lines.append(f"| {beta:g} | " + " | ".join(f"{f[i].mean():.2f}" for f in finals)
                 + "".join(f" | **{v[0][i]:.3f}** [{v[1][i]:.3f}, {v[2][i]:.3f}]"
                           for v in (within, across)) + f" | {bound:.3f} |")
  path = png(plots.save(plots.scaling(r, reference=report.reference_exponent(r)),
                        figdir / "exponents"))
  fitted = [v[0][i] for v in (within, across) for i in range(len(scale.betas))]
  far = max(fitted) < 0.5 * min((b + 1) / (b + 2) for b in scale.betas)
  verdict = (f"none lies above the bound's rate: consistent with the bound, but the check can "
             f"fail only above (β+1)/(β+2) and these slopes ({min(fitted):.2f}–"
             f"{max(fitted):.2f}) lie {'far ' if far else ''}below it, so it "
             f"{'barely tests' if far else 'tests'} the rate (the hard-instance search looks for "
             "steeper instances)" if above == 0 else
             f"{above} interval(s) lie above the bound's rate: the bound's rate is not seen here")
  lines += ["", f"Verdict: {verdict}.", "", f"![regret against t]({figdir.link(path)})", ""]
  summary = (f"Regret growth (Proposition 3's schedule, T = {T:,}, {n} seeds): Algorithm 1's "
             "slopes within run " + ", ".join(
                 f"β = {b:g}: {within[0][i]:.2f} [{within[1][i]:.2f}, {within[2][i]:.2f}]"
                 for i, b in enumerate(scale.betas))
             + "; across horizons " + ", ".join(
                 f"{across[0][i]:.2f} [{across[1][i]:.2f}, {across[2][i]:.2f}]"
                 for i in range(len(scale.betas)))
             + ", against (β+1)/(β+2) = " + ", ".join(
                 f"{(b + 1) / (b + 2):.2f}" for b in scale.betas) + f"; {verdict}.")
  return "\n".join(lines), summary
