"""Open question (§6) — the rate in T: a search for instances where Algorithm 1's regret grows fastest."""
from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np
from matplotlib.figure import Figure
from benchmarks.reproduction.common import Context, save

from rbx import rlhf, schedules
from rbx.core import results as results_lib


@dataclasses.dataclass(frozen=True)
class Sizes:
  """This section's sizes at one scale."""
  candidates: int      # random instances of the first round
  search_steps: int    # T of the search rounds
  search_seeds: int    # seeds per instance in the search rounds
  keep: int            # the best instances perturbed in the second round
  perturbations: int   # perturbed copies of each
  finalists: int       # the best of both rounds, re-run on fresh seeds
  final_steps: int     # their T
  final_seeds: int     # their seeds


QUICK = Sizes(candidates=32, search_steps=1_000, search_seeds=8, keep=4, perturbations=4,
              finalists=2, final_steps=10_000, final_seeds=16)
FULL = Sizes(candidates=512, search_steps=10_000, search_seeds=32, keep=16, perturbations=8,
             finalists=4, final_steps=100_000, final_seeds=128)
A, BETA, R_MAX = 3, 0.5, 2.0       # fixed: the answers, β and the box (the truth's and the learner's)
LOG_POINTS = 30


def random_instances(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
  """n instances: r* ~ U[0, r_max]^A and π_ref ~ Dirichlet(1/2) floored at 10⁻³ (so κ ≤ 10³),
  shapes (n, A) each."""
  r = rng.uniform(0.0, R_MAX, (n, A))
  return r, _floored(rng.dirichlet(np.full(A, 0.5), n))


def perturbed(rng: np.random.Generator, r: np.ndarray, pi: np.ndarray, copies: int):
  """`copies` perturbations of each instance: r* + N(0, (r_max/10)²) clipped to [0, r_max],
  log π_ref + N(0, 1/2²) renormalised and floored; shapes (n·copies, A)."""
  r = np.clip(np.repeat(r, copies, 0) + rng.normal(0.0, R_MAX / 10, (len(r) * copies, A)), 0.0,
              R_MAX)
  logits = np.log(np.repeat(pi, copies, 0)) + rng.normal(0.0, 0.5, (len(pi) * copies, A))
  return r, _floored(np.exp(logits) / np.exp(logits).sum(-1, keepdims=True))


def _floored(pi):
  pi = np.maximum(pi, 1e-3)
  return pi / pi.sum(-1, keepdims=True)


def slopes(r_stars, pi_refs, steps: int, seeds) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """Algorithm 1 with Proposition 3's α_t (κ of each instance, Assumption 1 at τ = 1) on every
  instance in one sweep over an instance axis (the instance's index is traced: one program);
  returns the within-run slope of log mean R(t) on log t over √T ≤ t ≤ T with its 95% bootstrap
  interval over seeds, (slope, low, high), each of shape (instances,)."""
  r_stars, pi_refs = jnp.asarray(r_stars, jnp.float32), jnp.asarray(pi_refs, jnp.float32)

  def build(instance):
    i = jnp.asarray(instance).astype(jnp.int32)
    env = rlhf.make_env(r_stars[i], pi_refs[i], BETA, R_MAX)
    return env, rlhf.algorithm1(schedules.proposition3(
        A, steps, BETA, R_MAX, kappa=rlhf.assumptions.kappa(env)))
  res = rlhf.sweep(build, {"instance": [float(i) for i in range(len(r_stars))]}, seeds=seeds,
                   steps=steps, record="log", log_points=LOG_POINTS)
  return results_lib.scaling_slope_ci(res.coords["step"], res.cumulative), res


def run(ctx: Context) -> tuple[str, str]:
  """Random instances, then perturbations of the steepest, then the steepest of both rounds
  re-run on fresh seeds to a longer horizon: the worst slope found beside (β+1)/(β+2)."""
  scale = FULL if ctx.full else QUICK
  rng = np.random.default_rng(0)
  bound = (BETA + 1) / (BETA + 2)
  r1, p1 = random_instances(rng, scale.candidates)
  s1, _ = slopes(r1, p1, scale.search_steps, scale.search_seeds)
  best = np.argsort(-s1[0])[:scale.keep]
  r2, p2 = perturbed(rng, r1[best], p1[best], scale.perturbations)
  s2, _ = slopes(r2, p2, scale.search_steps, scale.search_seeds)
  r_all, p_all = np.concatenate([r1, r2]), np.concatenate([p1, p2])
  s_all = np.concatenate([s1[0], s2[0]])
  final = np.argsort(-s_all)[:scale.finalists]
  fresh = list(range(10_000, 10_000 + scale.final_seeds))     # not the seeds that selected them
  s3, res = slopes(r_all[final], p_all[final], scale.final_steps, fresh)
  kappas = [float(rlhf.assumptions.kappa(rlhf.make_env(r_all[i], p_all[i], BETA, R_MAX)))
            for i in final]
  worst = int(np.argmax(s3[0]))
  lines = ["## Open question: the rate in T — a search for hard instances", "",
           "The paper's §6 asks whether the rate T^((β+1)/(β+2)) of Theorem 1 / Proposition 3 "
           "is tight. Here a search looks for instances on which Algorithm 1 (with Proposition "
           f"3's α_t, κ of each instance) has the steepest regret growth: A = {A}, one prompt, "
           f"β = {BETA:g}, r_max = {R_MAX:g} fixed; r* ~ U[0, r_max]^A and π_ref ~ "
           "Dirichlet(1/2) floored at 10⁻³ (κ up to 10³). Round 1: "
           f"{scale.candidates} random instances, T = {scale.search_steps:,}, "
           f"{scale.search_seeds} seeds, all in one sweep over an instance axis (vmapped: one "
           f"program). Round 2: the {scale.keep} steepest, each perturbed {scale.perturbations} "
           "times (r* + N(0, (r_max/10)²) clipped, log π_ref + N(0, 1/4)). Round 3: the "
           f"{scale.finalists} steepest of both rounds re-run on {scale.final_seeds} fresh seeds "
           f"to T = {scale.final_steps:,} (fresh seeds: the search's maximum is biased upward on "
           "the seeds that chose it). The slope is that of log mean R(t) on log t over "
           "√T ≤ t ≤ T (R(t) at log-spaced steps) with a 95% bootstrap interval over seeds. A "
           f"slope whose interval lies above (β+1)/(β+2) = {bound:.3f} would contradict the "
           "bound's rate at these horizons; one far below says the bound is loose on everything "
           "searched (the failing schemes' slopes ≈ 1 in the propositions' table show the fit "
           "sees linear regret).", "",
           "| round | instances | T | seeds | steepest slope | median slope | (β+1)/(β+2) |",
           "|---|---:|---:|---:|---:|---:|---:|"]
  for name, s, n, T, seeds in (("1: random", s1, scale.candidates, scale.search_steps,
                                 scale.search_seeds),
                                ("2: perturbed", s2, len(r2), scale.search_steps,
                                 scale.search_seeds),
                                ("3: finalists, fresh seeds", s3, scale.finalists,
                                 scale.final_steps, scale.final_seeds)):
    i = int(np.argmax(s[0]))
    lines.append(f"| {name} | {n} | {T:,} | {seeds} | **{s[0][i]:.3f}** [{s[1][i]:.3f}, "
                 f"{s[2][i]:.3f}] | {np.median(s[0]):.3f} | {bound:.3f} |")
  lines += ["", "The finalists (round 3):", "",
            "| r* | π_ref | κ | R(T) | slope [95%] |", "|---|---|---:|---:|---:|"]
  finals = res.cumulative[..., -1].mean(axis=-1)
  for j, i in enumerate(final):
    lines.append(f"| ({', '.join(f'{v:.3f}' for v in r_all[i])}) | "
                 f"({', '.join(f'{v:.4f}' for v in p_all[i])}) | {kappas[j]:.1f} | "
                 f"{finals[j]:.1f} | **{s3[0][j]:.3f}** [{s3[1][j]:.3f}, {s3[2][j]:.3f}] |")
  fig = Figure(figsize=(10, 4))
  ax1, ax2 = fig.subplots(1, 2)
  ax1.hist([s1[0], s2[0]], bins=20, label=["random", "perturbed"])
  ax1.axvline(bound, color="k", linestyle=":", label="(β+1)/(β+2)")
  ax1.set(xlabel=f"slope of log R(t) on log t, T = {scale.search_steps:,}", ylabel="instances",
          title="the search")
  ax1.legend(fontsize="small")
  t = res.coords["step"]
  for j in range(len(final)):
    ax2.plot(t, res.cumulative[j].mean(axis=0), label=f"finalist {j + 1}: slope {s3[0][j]:.2f}")
  ax2.plot(t, finals.max() * (t / t[-1]) ** bound, "k:", label="∝ t^((β+1)/(β+2))")
  ax2.set(xscale="log", yscale="log", xlabel="t", ylabel="mean R(t)", title="finalists")
  ax2.legend(fontsize="small")
  path = save(fig, ctx.figdir, "hard_instances.png")
  hi = s3[2][worst]
  verdict = (f"its interval lies above {bound:.3f}: the bound's rate is contradicted at these "
             "horizons" if s3[1][worst] > bound else
             f"its interval lies below {bound:.3f}: consistent with the bound, which is loose "
             "on every instance searched" if hi < bound else
             f"its interval contains {bound:.3f}: the search reaches the bound's rate")
  lines += ["", f"![slopes of the search and the finalists' R(t)]({path})", ""]
  summary = (f"Hard-instance search for the rate in T (A = {A}, β = {BETA:g}, "
             f"{scale.candidates} random + {len(r2)} perturbed instances at T = "
             f"{scale.search_steps:,}, finalists at T = {scale.final_steps:,} on fresh seeds): "
             f"the steepest slope of log R(t) on log t in the search is {s_all.max():.2f} (T = "
             f"{scale.search_steps:,}, on the seeds that chose it); on fresh seeds at T = "
             f"{scale.final_steps:,} the steepest finalist's is {s3[0][worst]:.2f} "
             f"[{s3[1][worst]:.2f}, {hi:.2f}] (r* = ({', '.join(f'{v:.2f}' for v in r_all[final[worst]])}), "
             f"κ = {kappas[worst]:.0f}) against (β+1)/(β+2) = {bound:.2f}; {verdict}.")
  return "\n".join(lines), summary
