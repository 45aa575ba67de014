"""rbx's dueling baselines (`rbx.rlhf.learners.dueling`) against duelpy 1.0.0, the library users
already run: the same preference matrix, the same T, S seeds each; and the speed side by side.

    pip install '.[duelpy]'
    python -m benchmarks.reference.duelpy_dueling                 # 64 seeds, T = 2,000, K = 5
    python -m benchmarks.reference.duelpy_dueling --speed-seeds 1024

duelpy 1.0.0 (2021) uses `np.float`, removed in NumPy 1.24: it runs in rbx's environment with
the alias `np.float = float` set before it is imported (`import_duelpy`), nothing else changed.

*The check.* One prompt, K answers, r* drawn by `rbx.rlhf.random_instance`; duelpy gets the
Bradley–Terry matrix P_ij = σ(r*_i − r*_j) (float64) through `MatrixFeedback`, and its own
`WeakRegret` and `StrongRegret` metrics score each duel; rbx records its `weak_regret` and
`strong_regret` (`rbx.rlhf.dueling`, the same definitions). For each agent and regret, the
Welch interval (95%) of the difference of the two means of the cumulative regret R(T) — rbx
minus duelpy — is printed; "agrees" when it holds 0, else the differences in the algorithm's
text that `DIFFERENCES` names for that agent explain it.

*The speed.* Seed-steps per second: rbx's sweep of `--speed-seeds` seeds (one compiled
program; its run seconds, and its wall seconds with the compile) against duelpy's Python
loop over the check's seeds, on the same machine in one run.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

AGENTS = {"rucb": "RelativeUCB", "rmed1": "Rmed1", "double_ts": "DoubleThompsonSampling",
          "rcs": "RelativeConfidenceSampling"}
"""rbx's name -> duelpy's class (`duelpy.algorithms`), each with its default options."""

DIFFERENCES = {
    "rucb": "duelpy excludes c from d = argmax_j u_jc always (paper line 13: only from ties, so "
            "c duels itself once every u_jc < 1/2) and sets B = {c} when C = ∅ (paper: "
            "B ← B ∩ C = ∅)",
    "rmed1": "duelpy's opponent set is np.argwhere(μ̂_l· ≤ 1/2)[0], the first such arm only, "
             "and its I_i sums over that set (the paper, eq. (3): over {j : μ̂_ij ≤ 1/2}); "
             "î* ties uniform in both",
    "double_ts": "duelpy's second candidate maximises θ_{a1 i} over l_{a1 i} ≤ 1/2 (row a1: "
                 "the arm a1 most likely beats) where the paper's lines 10–13 take column a1, "
                 "θ_{i a1} over l_{i a1} ≤ 1/2 (the arm most likely to beat a1)",
    "rcs": "duelpy breaks ties in d = argmax_j u_jc and in the least-chosen champion by the "
           "lowest index (np.argmax/argmin) where rbx breaks them uniformly",
}
"""The differences between duelpy 1.0.0's code and the papers' algorithms (which rbx follows)."""


def import_duelpy():
  """duelpy's modules, with NumPy's removed alias `np.float` restored first."""
  if not hasattr(np, "float"):
    np.float = float          # duelpy 1.0.0 annotates with np.float (removed in NumPy 1.24)
  import duelpy.algorithms
  import duelpy.feedback
  import duelpy.stats.metrics
  import duelpy.util.feedback_decorators
  return duelpy


def preference_matrix(r_star: np.ndarray) -> np.ndarray:
  """P_ij = σ(r*_i − r*_j), float64 (K, K)."""
  r = np.asarray(r_star, np.float64)
  return 1.0 / (1.0 + np.exp(-(r[:, None] - r[None, :])))


def duelpy_run(name: str, P: np.ndarray, steps: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
  """One seed of duelpy's `AGENTS[name]` on P for `steps` duels: (weak, strong) regret per
  duel, (steps,) each, scored by duelpy's own metrics."""
  duelpy = import_duelpy()
  rng = np.random.RandomState(seed)
  metrics = duelpy.stats.metrics
  feedback = duelpy.util.feedback_decorators.MetricKeepingFeedbackMechanism(
      duelpy.feedback.MatrixFeedback(P, random_state=rng),
      metrics={"weak": metrics.WeakRegret(P), "strong": metrics.StrongRegret(P)})
  algorithm = getattr(duelpy.algorithms, AGENTS[name])(
      feedback_mechanism=feedback, time_horizon=steps, random_state=rng)
  algorithm.run()
  return np.asarray(feedback.results["weak"]), np.asarray(feedback.results["strong"])


def duelpy_sweep(name: str, P: np.ndarray, steps: int, seeds: int):
  """(weak R(T) per seed, strong R(T) per seed, seconds) of duelpy's loop over `seeds` seeds."""
  begin = time.perf_counter()
  runs = [duelpy_run(name, P, steps, s) for s in range(seeds)]
  seconds = time.perf_counter() - begin
  return (np.array([w.sum() for w, _ in runs]), np.array([s.sum() for _, s in runs]), seconds)


def rbx_sweep(names, env, steps: int, seeds: int, seed_batch: int | None = None):
  """rbx's sweep of the agents `names` on `env`: its `Results` (axes agent, seed, step)."""
  from rbx import rlhf
  return rlhf.sweep(lambda agent: (env, rlhf.get(agent)), {"agent": list(names)}, seeds=seeds,
                    steps=steps, progress=False, record="summary", seed_batch=seed_batch)


def welch(a: np.ndarray, b: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
  """(mean(a) − mean(b), the Welch interval's ends) at `level`."""
  va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
  df = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
  half = stats.t.ppf(0.5 + level / 2, df) * np.sqrt(va + vb)
  diff = float(a.mean() - b.mean())
  return diff, diff - half, diff + half


def instance(arms: int, seed: int):
  """The check's environment: one prompt, `arms` answers, r* ~ U[0, 2]^K (β = 0.5)."""
  import jax
  from rbx import rlhf
  return rlhf.random_instance(jax.random.key(seed), 1, arms, beta=0.5, r_max=2.0)


def compare(names, arms: int = 5, steps: int = 2000, seeds: int = 64, instance_seed: int = 0):
  """Rows {agent, regret, rbx, duelpy, diff, low, high, agrees, duelpy_seconds} of the check
  (module docstring), two per agent (weak, strong)."""
  env = instance(arms, instance_seed)
  P = preference_matrix(np.asarray(env.r_star[0]))
  res = rbx_sweep(names, env, steps, seeds)
  rows = []
  for name in names:
    weak, strong, seconds = duelpy_sweep(name, P, steps, seeds)
    for regret, theirs in (("weak_regret", weak), ("strong_regret", strong)):
      ours = res.metric(regret).sel(agent=name).final()
      diff, low, high = welch(ours, theirs)
      rows.append(dict(agent=name, regret=regret, rbx=float(ours.mean()),
                       duelpy=float(theirs.mean()), diff=diff, low=low, high=high,
                       agrees=bool(low <= 0.0 <= high), duelpy_seconds=seconds))
  return rows


def speed(names, arms: int, steps: int, seeds: int, duelpy_rows):
  """Rows {agent, rbx_seed_steps_per_s, rbx_wall_seed_steps_per_s, duelpy_seed_steps_per_s,
  ratio}: rbx's sweep of `seeds` seeds, one agent a program, against duelpy's loop (the
  check's seconds)."""
  env = instance(arms, 0)
  out = []
  for name in names:
    begin = time.perf_counter()
    res = rbx_sweep([name], env, steps, seeds, seed_batch=seeds)
    wall = time.perf_counter() - begin
    ours = res.timing["seed_steps"] / res.timing["run_seconds"]
    row = next(r for r in duelpy_rows if r["agent"] == name)
    theirs = row["duelpy_seed_steps"] / row["duelpy_seconds"]
    out.append(dict(agent=name, rbx_seed_steps_per_s=ours,
                    rbx_wall_seed_steps_per_s=seeds * steps / wall,
                    duelpy_seed_steps_per_s=theirs, ratio=ours / theirs))
  return out


def main(argv=None) -> None:
  p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  p.add_argument("--agents", nargs="+", default=list(AGENTS), choices=list(AGENTS))
  p.add_argument("--arms", type=int, default=5)
  p.add_argument("--steps", type=int, default=2000)
  p.add_argument("--seeds", type=int, default=64)
  p.add_argument("--instance-seed", type=int, default=0)
  p.add_argument("--speed-seeds", type=int, default=0,
                 help="also time rbx's sweep of this many seeds against duelpy's loop")
  args = p.parse_args(argv)
  rows = compare(args.agents, args.arms, args.steps, args.seeds, args.instance_seed)
  print(f"K = {args.arms}, T = {args.steps}, {args.seeds} seeds each; R(T) means, rbx − duelpy "
        "with its 95% Welch interval")
  print(f"{'agent':>10} {'regret':>14} {'rbx':>9} {'duelpy':>9} {'diff':>8} {'interval':>20}")
  for r in rows:
    print(f"{r['agent']:>10} {r['regret']:>14} {r['rbx']:9.2f} {r['duelpy']:9.2f} "
          f"{r['diff']:8.2f} [{r['low']:8.2f}, {r['high']:8.2f}] "
          f"{'agrees' if r['agrees'] else 'differs: ' + DIFFERENCES[r['agent']]}")
  if args.speed_seeds:
    for r in rows:
      r["duelpy_seed_steps"] = args.seeds * args.steps
    print(f"\nspeed: rbx {args.speed_seeds} seeds (one program) vs duelpy's loop over "
          f"{args.seeds} seeds, seed-steps/s")
    for r in speed(args.agents, args.arms, args.steps, args.speed_seeds, rows[::2]):
      print(f"{r['agent']:>10} rbx {r['rbx_seed_steps_per_s']:12,.0f} (with compile "
            f"{r['rbx_wall_seed_steps_per_s']:12,.0f})  duelpy {r['duelpy_seed_steps_per_s']:9,.0f}"
            f"  ratio {r['ratio']:8,.0f}x")


if __name__ == "__main__":
  main()
