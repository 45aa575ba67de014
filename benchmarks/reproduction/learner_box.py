"""Propositions 1–2 and Algorithm 1 against VPO/XPO when the learner's box is wider than the truth's."""
from __future__ import annotations

import dataclasses

import numpy as np
from matplotlib.figure import Figure
from benchmarks.reproduction.common import (OUTCOME_COLUMNS, OUTCOMES_TEXT, PROP1_BOUND, PROP2_BOUND,
                                 Context, outcome_cells, outcomes, save)

from rbx import rlhf


@dataclasses.dataclass(frozen=True)
class Sizes:
  """This section's sizes at one scale."""
  seeds: int
  ratios: tuple[float, ...]   # learner_r_max / r_max
  alphas: tuple[float, ...]   # the constant α of every scheme
  prop1: tuple[float, float]   # Example 1's (β, r_max), p = 0; horizon e^(r_max/β)/2
  prop2: tuple[float, float, float]   # Example 2's (κ, β, r_max); horizon min(κ, e^r_max / 2)


RATIOS = (1.0, 1.02, 1.05, 1.1, 1.25, 1.5, 2.0)
QUICK = Sizes(seeds=32, ratios=RATIOS, alphas=(0.1, 1.0, 10.0), prop1=(0.5, 3.5),
              prop2=(500.0, 1.0, 7.0))
FULL = Sizes(seeds=256, ratios=RATIOS, alphas=(0.1, 1.0, 10.0), prop1=(0.5, 3.5),
             prop2=(500.0, 1.0, 7.0))
MARKERS = {"algorithm1": "o", "vpo": "s", "xpo": "^"}
SHORT = ("stuck through T", "R(T)", "last 10% below", "stays below from t (median)")


def cases(scale: Sizes) -> list[tuple]:
  """(claim, example, failing scheme, its extra arguments, threshold, bound, horizon, r_max,
  make(learner_r_max) -> env) of Propositions 1 and 2."""
  beta1, r_max1 = scale.prop1
  kappa, beta2, r_max2 = scale.prop2
  return [("Proposition 1", f"Example 1 (p = 0, β = {beta1:g}, r_max = {r_max1:g})", "vpo",
           {"pi_init": [1 / 3] * 3}, 0.5, PROP1_BOUND, int(np.exp(r_max1 / beta1) / 2), r_max1,
           lambda lr: rlhf.example1(0.0, beta1, r_max1, learner_r_max=lr)),
          ("Proposition 2", f"Example 2 (κ = {kappa:g}, β = {beta2:g}, r_max = {r_max2:g})",
           "xpo", {}, 0.01, PROP2_BOUND, int(min(kappa, np.exp(r_max2) / 2)), r_max2,
           lambda lr: rlhf.example2(kappa, beta2, r_max2, learner_r_max=lr))]


def measure(scale: Sizes) -> dict:
  """(example index, scheme, α, ratio) -> `Outcomes`, every run of the section."""
  out = {}
  for k, (_, _, failing, extra, thr, _, horizon, r_max, make) in enumerate(cases(scale)):
    schemes = ["algorithm1", failing]
    res = rlhf.sweep(lambda agent, alpha, ratio: (make(ratio * r_max), rlhf.get(
        agent, alpha=alpha, **(extra if agent == failing else {}))),
        {"agent": schemes, "alpha": list(scale.alphas), "ratio": list(scale.ratios)},
        seeds=scale.seeds, steps=horizon)
    for i, scheme in enumerate(schemes):
      for j, alpha in enumerate(scale.alphas):
        for m, ratio in enumerate(scale.ratios):
          out[k, scheme, alpha, ratio] = outcomes(res.regret[i, j, m], thr)
  return out


def run(ctx: Context) -> tuple[str, str]:
  """Propositions 1–2's event and the practitioner's outcomes of Algorithm 1 and VPO/XPO at
  learner_r_max / r_max ∈ `ratios`, the truth unchanged."""
  scale = FULL if ctx.full else QUICK
  n, ratios, alphas = scale.seeds, scale.ratios, scale.alphas
  data = measure(scale)
  lines = ["## The learner's box: Propositions 1–2 when the learner does not know r_max exactly",
           "",
           "The propositions' examples fix r_max, and every scheme searches its reward model over "
           "the box [0, r_max]^A. Here the truth stays as it is (r* ∈ [0, r_max]) and only the "
           "learner's box widens to [0, ρ·r_max] (`learner_r_max = ρ·r_max`, ρ = "
           f"{', '.join(f'{r:g}' for r in ratios)}): what the agents are told "
           "(`Task.r_max`) changes, the regret is scored against the same r*. In Example 2, "
           "r*(a1) − r*(a0) = r_max: the exact box pins the gap at its edge, which a few hundred "
           "comparisons cannot (σ(7) ≈ 0.999). Each example runs Algorithm 1 and the "
           f"proposition's failing scheme at the same constant α ∈ {{{', '.join(f'{a:g}' for a in alphas)}}} "
           f"on the same {n} seeds (seed s uses `key(s)`). " + OUTCOMES_TEXT, ""]
  findings = []
  fig = Figure(figsize=(16, 7), layout="constrained")
  axes = fig.subplots(2, 4)
  for k, (claim, example, failing, _, thr, bound, horizon, r_max, _) in enumerate(cases(scale)):
    lines += [f"### {claim}: {example}, T = {horizon}, threshold {thr:g}, bound {bound:.4f}", "",
              "| learner_r_max / r_max | α | scheme | " + " | ".join(OUTCOME_COLUMNS) + " |",
              "|---:|---:|---|" + "---:|" * len(OUTCOME_COLUMNS)]
    for ratio in ratios:
      for alpha in alphas:
        for scheme in ("algorithm1", failing):
          lines.append(f"| {ratio:g} | {alpha:g} | {scheme} | "
                       + " | ".join(outcome_cells(data[k, scheme, alpha, ratio], horizon)) + " |")
    lines.append("")
    for col, field in enumerate(("stuck", "final", "tail_below", "settle")):
      ax = axes[k, col]
      for j, alpha in enumerate(alphas):
        for scheme in ("algorithm1", failing):
          v = np.array([getattr(data[k, scheme, alpha, r], field) for r in ratios])
          ax.errorbar(range(len(ratios)), v[:, 0], yerr=[v[:, 0] - v[:, 1], v[:, 2] - v[:, 0]],
                      color=f"C{j}", marker=MARKERS[scheme], capsize=2,
                      linestyle="-" if scheme == "algorithm1" else "--",
                      label=f"{scheme}, α = {alpha:g}")
      if field == "stuck":
        ax.axhline(bound, color="k", linestyle=":", label="bound")
      ax.set(xlabel="learner_r_max / r_max", title=f"{claim}: {SHORT[col]}")
      ax.set_xticks(range(len(ratios)), [f"{r:g}" for r in ratios], fontsize="small")
    findings.append(_finding(data, k, claim, failing, bound, ratios, alphas))
  axes[0, 0].legend(fontsize="xx-small")
  path = save(fig, ctx.figdir, "learner_box.png")
  lines += ["Where the separation holds (computed from the tables; \"overlap\": the two R(T) "
            "intervals overlap):", ""]
  lines += [f"* {f}" for f in findings]
  lines += ["", f"![each outcome against learner_r_max / r_max: Algorithm 1 solid, the failing "
            f"scheme dashed, one colour per α]({path})", ""]
  summary = (f"The learner's box ({n} seeds, learner_r_max / r_max from {ratios[0]:g} to "
             f"{ratios[-1]:g}, the truth fixed): " + " ".join(findings))
  return "\n".join(lines), summary


def _finding(data, k, claim, failing, bound, ratios, alphas) -> str:
  """Where Algorithm 1 separates from the failing scheme, per α over the ratios: on the event
  (its stuck interval below the failing scheme's; the failing scheme at or above the bound) and
  on R(T) (the failing scheme's mean over Algorithm 1's, marked where the intervals overlap)."""
  event, regret, tail = [], [], []
  for alpha in alphas:
    a1 = [data[k, "algorithm1", alpha, r] for r in ratios]
    fs = [data[k, failing, alpha, r] for r in ratios]
    sep = [r for r, a, f in zip(ratios, a1, fs) if a.stuck[2] < f.stuck[1] and f.stuck[0] >= bound]
    event.append(f"α = {alpha:g}: {_ratios(sep)}")
    tail.append(f"α = {alpha:g}: " + _ratios(
        [r for r, a, f in zip(ratios, a1, fs) if a.tail_below[1] > f.tail_below[2]]))
    regret.append(f"α = {alpha:g}: " + ", ".join(
        f"{f.final[0] / a.final[0]:.1f}×" + ("" if a.final[2] < f.final[1] else " (overlap)"
                                              if a.final[1] <= f.final[2] else " (Algorithm 1 higher)")
        for a, f in zip(a1, fs)))
  return (f"{claim}: Algorithm 1's stuck fraction lies below {failing}'s (disjoint 95% "
          f"intervals; {failing} at or above the bound {bound:.4f}) at learner_r_max / r_max = "
          f"{'; '.join(event)}. {failing}'s R(T) over Algorithm 1's at ratios "
          f"{', '.join(f'{r:g}' for r in ratios)}: {'; '.join(regret)}. Algorithm 1 spends more "
          f"of the last 10% of steps below the threshold (disjoint intervals) at ratios "
          f"{'; '.join(tail)}.")


def _ratios(rs) -> str:
  return "none" if not rs else ", ".join(f"{r:g}" for r in rs)
