"""Open question (§6) — the dependence on A and r_max: R(T) of Algorithm 1, XPO and VPO."""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from matplotlib.figure import Figure
from benchmarks.reproduction.common import Context, save

from rbx import rlhf, schedules


@dataclasses.dataclass(frozen=True)
class Sizes:
  """This section's sizes at one scale."""
  actions: tuple[int, ...]    # A
  r_maxes: tuple[float, ...]  # r_max (the truth's and the learner's)
  instances: int              # random instances per A
  seeds: int                  # seeds per instance
  steps: int                  # T


QUICK = Sizes(actions=(3, 10, 30), r_maxes=(1.0, 2.0, 4.0, 8.0), instances=2, seeds=4,
              steps=1_000)
FULL = Sizes(actions=(3, 10, 30, 100, 200), r_maxes=(1.0, 2.0, 4.0, 8.0), instances=8, seeds=32,
             steps=2_000)
BETA, ALPHA = 0.5, 1.0
# scheme -> (agent, α): the three at the same constant α, and Algorithm 1 with Proposition 3's
SCHEMES = {"algorithm1": ("algorithm1", None), "xpo": ("xpo", None), "vpo": ("vpo", None),
           "algorithm1, α_t of Prop. 3": ("algorithm1", "proposition3")}


def measure(scale: Sizes) -> dict[tuple[str, int], np.ndarray]:
  """(scheme, A) -> R(T) of shape (r_max, instance, seed): one sweep per A, the schemes static,
  r_max and the instance traced. Instance i is `random_instance(fold_in(key(0), i), 1, A, β,
  r_max)` — uniform π_ref (κ = 1), r* = r_max · U with the same U at every r_max."""
  out = {}
  for A in scale.actions:
    def build(scheme, r_max, instance, A=A):
      env = rlhf.random_instance(jax.random.fold_in(jax.random.key(0), jnp.asarray(
          instance).astype(jnp.int32)), 1, A, BETA, r_max, 1.0)
      agent, schedule = SCHEMES[scheme]
      alpha = (ALPHA if schedule is None else
               schedules.proposition3(A, scale.steps, BETA, r_max, kappa=1.0))
      return env, rlhf.get(agent, alpha=alpha)
    res = rlhf.sweep(build, {"scheme": list(SCHEMES), "r_max": list(scale.r_maxes),
                             "instance": [float(i) for i in range(scale.instances)]},
                     seeds=scale.seeds, steps=scale.steps, record="summary")
    final = res.final()                                 # (scheme, r_max, instance, seed)
    for k, scheme in enumerate(SCHEMES):
      out[scheme, A] = final[k]
  return out


class Exponent(NamedTuple):
  """A power law R ∝ x^slope fitted to mean R at each x."""
  slope: float
  low: float                   # the 95% bootstrap interval: the spread over runs only
  high: float
  misfit: float                # the largest factor between a mean R and the fitted law, ≥ 1
  monotone: bool               # mean R ordered as x (a power law with any slope is)

  def text(self) -> str:
    """"slope [low, high]", bold where the law fits (monotone, misfit below `MISFIT`)."""
    fits = self.monotone and self.misfit < MISFIT
    b = "**" if fits else ""
    return (f"{b}{self.slope:.2f}{b} [{self.low:.2f}, {self.high:.2f}]"
            + ("" if fits else f" (misfit ×{self.misfit:.1f}"
               + ("" if self.monotone else ", not monotone") + ")"))


MISFIT = 1.5
"""A fitted law within this factor of every mean (and monotone) is called a fit; otherwise the
slope is reported with its misfit, since its bootstrap interval covers only the spread over
runs, not a law that does not hold."""


def exponent(x: np.ndarray, runs: list[np.ndarray], boots: int = 1000) -> Exponent:
  """The least-squares slope of log mean R on log x, with a 95% bootstrap interval resampling
  each x's runs (instances × seeds, flattened), the fit's largest factor off a mean, and
  whether the means are monotone in x."""
  lx = np.log(np.asarray(x, np.float64))
  fit = lambda means: np.polyfit(lx, np.log(means), 1)
  rng = np.random.default_rng(0)
  flat = [np.asarray(r, np.float64).ravel() for r in runs]
  means = np.array([f.mean() for f in flat])
  draws = [fit([rng.choice(f, f.size).mean() for f in flat])[0] for _ in range(boots)]
  slope, icpt = fit(means)
  misfit = float(np.exp(np.max(np.abs(np.log(means) - (slope * lx + icpt)))))
  steps = np.diff(means)
  return Exponent(float(slope), *np.percentile(draws, [2.5, 97.5]), misfit,
                  bool((steps >= 0).all() or (steps <= 0).all()))


def run(ctx: Context) -> tuple[str, str]:
  """R(T) against A and r_max; the fitted exponents of R in A (per r_max) and in r_max (per A)."""
  scale = FULL if ctx.full else QUICK
  data = measure(scale)
  As, rms = scale.actions, scale.r_maxes
  lines = ["## Open question: how R(T) depends on A and r_max", "",
           "Theorem 1 and Proposition 3 bound the regret with factors of A and r_max whose "
           "tightness the paper's §6 leaves open. Here R(T) at T = "
           f"{scale.steps:,} on random one-prompt instances (uniform π_ref, so κ = 1; r* = "
           "r_max · U with U ~ U[0, 1]^A the same at every r_max, the learner told the exact "
           f"box), {scale.instances} instances per A × {scale.seeds} seeds, β = {BETA:g}: "
           f"Algorithm 1, XPO and VPO at the same constant α = {ALPHA:g}, and Algorithm 1 with "
           "Proposition 3's α_t (κ = 1). The exponent of R in A is the slope of log mean R(T) "
           "on log A at each r_max (in r_max: on log r_max at each A), with a 95% bootstrap "
           "interval resampling each point's runs. That interval is the spread over runs "
           "only: where the means are not monotone or the fitted law misses one of them by "
           f"more than ×{MISFIT:g}, no power law describes the row, and the slope is shown "
           "unbolded with its misfit (the largest factor between a mean and the law)."
           + ("" if 200 in As else f" The quick scale stops at A = {max(As)} and T = "
                f"{scale.steps:,} (A = 200 runs at about 50 seed-steps/s on a CPU); "
                "`--full` runs A ∈ {3, 10, 30, 100, 200} at T = 2,000."), "",
           "| scheme | r_max | " + " | ".join(f"R(T), A = {A}" for A in As)
           + " | exponent in A [95%] |", "|---|---:|" + "---:|" * (len(As) + 1)]
  exps_a, exps_r = {}, {}
  for scheme in SCHEMES:
    for m, r_max in enumerate(rms):
      runs = [data[scheme, A][m] for A in As]
      e = exps_a[scheme, r_max] = exponent(As, runs)
      lines.append(f"| {scheme} | {r_max:g} | " + " | ".join(f"{r.mean():.1f}" for r in runs)
                   + f" | {e.text()} |")
    for A in As:
      exps_r[scheme, A] = exponent(rms, list(data[scheme, A]))
  lines += ["", "The exponent of R(T) in r_max, per A:", "",
            "| scheme | " + " | ".join(f"A = {A}" for A in As) + " |",
            "|---|" + "---:|" * len(As)]
  for scheme in SCHEMES:
    lines.append(f"| {scheme} | " + " | ".join(exps_r[scheme, A].text() for A in As) + " |")
  fig = Figure(figsize=(10, 4))
  ax1, ax2 = fig.subplots(1, 2)
  mid = rms[len(rms) // 2]
  for k, scheme in enumerate(SCHEMES):
    m = rms.index(mid)
    ax1.plot(As, [data[scheme, A][m].mean() for A in As], marker="o", color=f"C{k}",
             label=scheme)
    ax2.plot(rms, [data[scheme, As[-1]][m].mean() for m in range(len(rms))], marker="o",
             color=f"C{k}", label=scheme)
  ax1.set(xscale="log", yscale="log", xlabel="A", ylabel=f"mean R({scale.steps:,})",
          title=f"r_max = {mid:g}")
  ax2.set(xscale="log", yscale="log", xlabel="r_max", ylabel=f"mean R({scale.steps:,})",
          title=f"A = {As[-1]}")
  ax1.legend(fontsize="small")
  path = save(fig, ctx.figdir, "scaling.png")
  lines += ["", f"![R(T) against A and against r_max]({path})", ""]
  fmt = lambda e: e.text().replace("**", "")
  summary = (f"Dependence on A and r_max (T = {scale.steps:,}, A ∈ {{{', '.join(map(str, As))}}}, "
             f"{scale.instances} instances × {scale.seeds} seeds): the exponent of R(T) in A at "
             f"r_max = {mid:g} is " + ", ".join(f"{s} {fmt(exps_a[s, mid])}" for s in SCHEMES)
             + f"; in r_max at A = {As[-1]}: " + ", ".join(
                 f"{s} {fmt(exps_r[s, As[-1]])}" for s in SCHEMES) + ".")
  return "\n".join(lines), summary
