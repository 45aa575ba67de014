"""The practical DPO-form losses on Examples 1–2 and a contextual environment."""
from __future__ import annotations

import dataclasses
import sys

import jax
import numpy as np
from benchmarks.reproduction.common import Context, wilson

from rbx import rlhf
from rbx.core import results as results_lib


@dataclasses.dataclass(frozen=True)
class Sizes:
  """This section's sizes at one scale."""
  prop_alphas: tuple[float, ...]   # constant α
  practical_seeds: int   # seeds on Examples 1–2
  practical_prop1: tuple[float, float]   # Example 1's (β, r_max)
  practical_prop2: tuple[float, float, float]   # Example 2's (κ, β, r_max)
  contextual: tuple[int, int, int]   # (|X|, A, d) of the contextual runs
  contextual_seeds: int   # seeds there (the exact Algorithm 1 re-solves all |X| prompts a step)
  contextual_steps: int   # their horizon


QUICK = Sizes(
    prop_alphas=(0.1, 1.0, 10.0), practical_seeds=256, practical_prop1=(0.5, 3.0),
    practical_prop2=(200.0, 1.0, 6.0), contextual=(100, 10, 16), contextual_seeds=8,
    contextual_steps=30)
FULL = Sizes(
    prop_alphas=(0.1, 1.0, 10.0, 100.0), practical_seeds=1000, practical_prop1=(0.5, 4.0),
    practical_prop2=(500.0, 0.1, 7.0), contextual=(100, 10, 16), contextual_seeds=1000,
    contextual_steps=200)


def run(ctx: Context) -> tuple[str, str]:
  """The practical DPO-form losses (`rbx.rlhf.learners.practical`, tabular policy) on Examples 1-2 beside
  the exact agents of the same scheme (the same stuck events as Propositions 1-2), and every
  practical agent (log-linear policy) against the exact ones on a contextual environment."""
  scale = FULL if ctx.full else QUICK
  beta1, r_max1 = scale.practical_prop1
  kappa, beta2, r_max2 = scale.practical_prop2
  alphas, n = list(scale.prop_alphas), scale.practical_seeds
  cases = [("Example 1", "vpo", 0.5, int(np.exp(r_max1 / beta1) / 2),
            lambda: rlhf.example1(0.0, beta1, r_max1), f"β = {beta1:g}, r_max = {r_max1:g}"),
           ("Example 2", "xpo", 0.01, int(min(kappa, np.exp(r_max2) / 2)),
            lambda: rlhf.example2(kappa, beta2, r_max2),
            f"κ = {kappa:g}, β = {beta2:g}, r_max = {r_max2:g}")]
  variants = [("exact", lambda s, a: rlhf.get(s, alpha=a)),
              ("practical", lambda s, a: rlhf.get(f"practical/{s}", alpha=a)),
              ("practical, λ = 0", lambda s, a: rlhf.get(f"practical/{s}", alpha=a, l2=0.0)),
              ("practical, clipped", lambda s, a: rlhf.get(f"practical/{s}", alpha=a, clip=True))]
  lines = ["## Practical online RLHF: DPO-form losses on a policy", "",
           "`rbx.rlhf.learners.practical` runs each scheme as a loss on a parametric policy, as "
           "practitioners do (TRL's OnlineDPO/XPO trainers, SELM): L(θ) = DPO(θ; D) + "
           "α β Ê_{a∼π_cal}[log π_θ(a)/π_ref(a)], which is −(ℓ + α J*) of (3.1a)/(3.2a) at the "
           "implicit reward r_θ = β log π_θ/π_ref (derivation: `docs/practical_rlhf.md`), plus "
           "(λ/2)‖θ − θ_ref‖² with λ = 1 (θ_ref: π_θ = π_ref), minimised by 20 Adam steps "
           "(learning rate 0.1) per round, warm-started; the expectation over π_cal is the "
           "round's own answer drawn from π_cal (XPO: a2 ∼ π_ref; Algorithm 1: a2 ∼ π^(t)) or, "
           "for VPO (whose answers are not drawn from π_cal), one fresh draw. **Departures from "
           "the paper's step**: no box [0, r_max]; instead the ℓ2 term, a Gaussian prior "
           "N(θ_ref, I/λ) on θ (MAP, not the box's maximum). \"practical, λ = 0\" is the "
           "control without it; \"clipped\" keeps λ = 1 and maps the implicit reward smoothly "
           "onto ranges below r_max (h tanh((r − mean r)/h), h = r_max/2, `clip=True`). Tabular "
           "softmax policy, π^(1) = π_ref.", "",
           f"### Examples 1–2: fraction stuck ({n} seeds, 95% Wilson intervals)", "",
           "The events of Propositions 1–2: regret ≥ 1/2 (Example 1) or ≥ 0.01 (Example 2) for "
           "every 1 < t ≤ horizon. R(T): mean cumulative regret at the horizon.", "",
           "| example | scheme | agent | " + " | ".join(f"α = {a:g}: stuck, R(T)" for a in alphas)
           + " |", "|---|---|---|" + "---:|" * len(alphas)]
  stuck_of = {}
  for example, failing, thr, horizon, make_env, setting in cases:
    env = make_env()
    for scheme in (failing, "algorithm1"):
      for label, make in variants:
        res = rlhf.sweep(lambda alpha: (env, make(scheme, alpha)), {"alpha": alphas}, seeds=n,
                         steps=horizon)
        stuck = (res.regret[..., 1:] >= thr).all(axis=-1).mean(axis=-1)      # (alpha,)
        final = res.final().mean(axis=-1)
        stuck_of[example, scheme, label] = stuck
        print(f"[reproduce]   {example} {scheme} {label}: stuck {np.round(stuck, 3)}",
              file=sys.stderr, flush=True)
        cells = [f"**{f:.3f}** [{lo:.3f}, {hi:.3f}], {r:.1f}"
                 for f, (lo, hi), r in zip(stuck, (wilson(f, n) for f in stuck), final)]
        lines.append(f"| {example} ({setting}, T = {horizon}) | {scheme} | {label} | "
                     + " | ".join(cells) + " |")
  lines.append("")

  X, A, d = scale.contextual
  seeds, steps = scale.contextual_seeds, scale.contextual_steps
  env = rlhf.random_contextual(jax.random.key(0), X, A, d, 0.5, 4.0, deviation=1.0)
  pairs = [("greedy", "online_dpo"), ("xpo", "practical_xpo"), ("vpo", "practical_vpo"),
           ("algorithm1", "practical_algorithm1")]
  lines += [f"### A contextual environment: |X| = {X}, A = {A}, d = {d}", "",
            f"`rlhf.random_contextual(key(0), {X}, {A}, {d}, β = 0.5, r_max = 4, deviation = 1)`: "
            "φ(x, a) ∼ N(0, I/d), r* = θ*ᵀφ scaled into [0, 4], uniform π_ref and ρ. α = 1 for "
            "every scheme (VPO calibrates with π_ref); the practical agents use the log-linear "
            "policy π_θ ∝ π_ref exp(θᵀφ/β) (which can represent π*) with the ℓ2 term at λ = 1 — "
            "the prior N(0, I), which is also the distribution θ* is drawn from here (a "
            "confound in their favour) — the exact agents solve every "
            f"prompt's (3.1a)/(3.2a) in the box. {seeds} seeds, T = {steps}; R(T) mean ± std, "
            "95% t-interval of the mean.", "",
            "| scheme | exact agent R(T) | [95% CI] | practical (log-linear) R(T) | [95% CI] |",
            "|---|---:|---:|---:|---:|"]
  means = {}
  for exact_name, practical_name in pairs:
    cells = []
    for name, make in ((exact_name, lambda: rlhf.get(exact_name, **(
        {} if exact_name == "greedy" else {"alpha": 1.0}))),
                       (practical_name, lambda: rlhf.get(practical_name, policy="loglinear", **(
                           {} if practical_name == "online_dpo" else {"alpha": 1.0})))):
      final = rlhf.sweep(lambda: (env, make()), {}, seeds=seeds, steps=steps).final()
      mean, std, half = results_lib.mean_ci(final, axis=-1)
      means[name] = float(mean)
      print(f"[reproduce]   contextual {name}: R(T) {float(mean):.2f}", file=sys.stderr, flush=True)
      cells += [f"{float(mean):.2f} ± {float(std):.2f}",
                f"[{float(mean - half):.2f}, {float(mean + half):.2f}]"]
    lines.append(f"| {exact_name} | " + " | ".join(cells) + " |")
  lines.append("")
  e1, e2 = stuck_of["Example 1", "vpo", "practical"], stuck_of["Example 2", "xpo", "practical"]
  a1 = [stuck_of[e, "algorithm1", "practical"] for e in ("Example 1", "Example 2")]
  v0, a0 = (stuck_of["Example 1", s, "practical, λ = 0"] for s in ("vpo", "algorithm1"))
  summary = (f"Practical losses ({n} seeds, ℓ2 prior λ = 1): VPO's loss stuck on Example 1 in "
             f"{e1.min():.2f}–{e1.max():.2f} of seeds, XPO's on Example 2 in {e2.min():.2f}–"
             f"{e2.max():.2f}, Algorithm 1's loss in {a1[0].min():.2f}–{a1[0].max():.2f} and "
             f"{a1[1].min():.2f}–{a1[1].max():.2f} (over α); without the prior (λ = 0) on "
             f"Example 1 VPO's in {v0.min():.2f}–{v0.max():.2f}, Algorithm 1's in "
             f"{a0.min():.2f}–{a0.max():.2f}. Contextual |X| = {X}, A = {A}: R(T) "
             + ", ".join(f"{k} {v:.1f}" for k, v in means.items())
             + f" ({seeds} seeds, T = {steps}).")
  return "\n".join(lines), summary
