"""rbx's dueling baselines (`rbx.rlhf.learners.dueling`) against duelpy 1.0.0, the library users
already run: the same preference matrix, the same T, S seeds each; and the speed side by side.

    pip install '.[duelpy]'
    python -m benchmarks.reference.duelpy_dueling                 # 64 seeds, T = 2,000, K = 5
    python -m benchmarks.reference.duelpy_dueling --speed-seeds 1024
    python -m benchmarks.reference.duelpy_dueling --speed-only --speed-seeds 1024 --seed-batches default 16

duelpy 1.0.0 (2021) uses `np.float`, removed in NumPy 1.24: it runs in rbx's environment with
the alias `np.float = float` set before it is imported (`import_duelpy`), nothing else changed.

*The check.* One prompt, K answers, r* drawn by `rbx.rlhf.random_instance`; duelpy gets the
Bradley–Terry matrix P_ij = σ(r*_i − r*_j) (float64) through `MatrixFeedback`, its answers
relabelled by a permutation drawn per seed (duelpy breaks some ties by the lowest index,
which would favour a Condorcet winner at index 0), and its own `WeakRegret` and
`StrongRegret` metrics score each duel; rbx records its `weak_regret` and `strong_regret`
(`rbx.rlhf.dueling`, the same definitions). For each agent and regret, the Welch interval
(95%) of the difference of the two means of the cumulative regret R(T), rbx minus duelpy, is
printed twice: against duelpy as shipped, and against duelpy with the differences from its
paper that `DIFFERENCES` names set to the paper's text (`paper_classes`: subclasses that
override only those methods). "agrees" when the first interval holds 0; "explained" when
only the second does.

*The speed.* Seed-steps per second: rbx's sweep of `--speed-seeds` seeds (one compiled
program; its run seconds, and its wall seconds with the compile), at each of
`--seed-batches` (default: the default seed batch), against duelpy's Python loop over the
check's seeds (`--speed-only`: over `--seeds` seeds, without the check), on the same machine
in one run.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from rbx.core import stats

AGENTS = {"rucb": "RelativeUCB", "rmed1": "Rmed1", "double_ts": "DoubleThompsonSampling",
          "rcs": "RelativeConfidenceSampling"}
"""rbx's name -> duelpy's class (`duelpy.algorithms`), each with its default options."""

DIFFERENCES = {
    "rucb": "duelpy 1.0.0 records c as the winner of every duel (it tests `duel(c, d) < 0` on "
            "a bool); it excludes c from d = argmax_j u_jc always (paper line 13: only from "
            "ties, so c duels itself once every u_jc < 1/2), clips u at 1, and sets B = {c} "
            "when C = ∅ (paper: B ← B ∩ C = ∅)",
    "rmed1": "duelpy's opponent set is np.argwhere(μ̂_l· ≤ 1/2)[0], the first such arm only, "
             "and its I_i sums over that set (the paper, eq. (3): over {j : μ̂_ij ≤ 1/2}); "
             "î* ties uniform in both",
    "double_ts": "duelpy's second candidate maximises θ_{a1 i} over l_{a1 i} ≤ 1/2 (row a1: "
                 "the arm a1 most likely beats) where the paper's lines 10–13 take column a1, "
                 "θ_{i a1} over l_{i a1} ≤ 1/2 (the arm most likely to beat a1)",
    "rcs": "duelpy breaks ties in d = argmax_j u_jc and in the least-chosen champion by the "
           "lowest index (np.argmax/argmin) where rbx breaks them uniformly, and clips u at 1",
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


def paper_classes(duelpy) -> dict:
  """rbx's name -> a subclass of duelpy's class whose overridden methods follow the paper's
  text where `DIFFERENCES` says duelpy departs from it (written here from the papers; the
  rest is duelpy's)."""
  algorithms = duelpy.algorithms

  def upper(algorithm):
    """U of the paper: μ̂ + √(α ln t / n), 1 where n = 0 (not clipped), u_ii = 1/2."""
    wins = algorithm.preference_estimate.wins
    n = wins + wins.T
    with np.errstate(divide="ignore", invalid="ignore"):
      u = np.where(n > 0, wins / n + np.sqrt(algorithm.exploratory_constant
                                             * np.log(algorithm.time_step) / n), 1.0)
    np.fill_diagonal(u, 0.5)
    return u

  class RUCB(algorithms.RelativeUCB):
    def step(self) -> None:
      self.time_step += 1
      u = upper(self)
      arms = {i for i in range(len(u)) if (u[i] >= 0.5).all()}
      if self.hypothesized_arm not in arms:
        self.hypothesized_arm = None                        # B ← B ∩ C
      c = (self._select_potential_winner(arms) if arms
           else self.random_state.randint(len(u)))
      ties = np.flatnonzero(u[:, c] == u[:, c].max())
      d = self.random_state.choice(ties[ties != c] if len(ties) > 1 else ties)
      self.preference_estimate.enter_sample(c, d, self.wrapped_feedback.duel(c, d))

  class DoubleTS(algorithms.DoubleThompsonSampling):
    def _choose_second_candidate(self, champion: int) -> int:
      lower = self.preference_estimate.get_lower_estimate_matrix().preferences[:, champion]
      theta = self.preference_estimate.sample_preference_matrix(
          self.random_state).preferences[:, champion].copy()
      theta[champion] = 0.5
      return int(np.argmax(np.where(lower <= 0.5, theta, -np.inf)))

  class RMED1(algorithms.Rmed1):
    def _get_candidate_target(self, arm_i: int) -> int:
      mu = self.preference_estimate.get_mean_estimate_matrix().preferences
      self.best_arm = self._get_best_arm()
      opponents = set(np.flatnonzero(mu[arm_i] <= 0.5).tolist()) - {arm_i}
      if not opponents or self.best_arm in opponents:
        return self.best_arm
      row = np.where(np.arange(len(mu)) == arm_i, np.inf, mu[arm_i])
      return int(self.random_state.choice(np.flatnonzero(row == row.min())))

    def _get_arm_empirical_divergence(self, arm_i: int) -> float:
      mu = self.preference_estimate.get_mean_estimate_matrix().preferences[arm_i]
      total = 0.0
      for j, p in enumerate(mu):
        if j != arm_i and p <= 0.5:
          kl = sum(q * np.log(2 * q) for q in (p, 1 - p) if q > 0)
          total += self.preference_estimate.get_num_samples(arm_i, j) * kl
      return total

  class RCS(algorithms.RelativeConfidenceSampling):
    def _run_simulated_tournament(self) -> int:
      theta = self.preference_estimate.sample_preference_matrix(self.random_state)
      champion = theta.get_condorcet_winner()
      if champion is None:
        counts = self._champion_chosen_frequency
        champion = self.random_state.choice(np.flatnonzero(counts == counts.min()))
      self._champion_chosen_frequency[champion] += 1
      return champion

    def _select_challenger_for(self, champion: int) -> int:
      u = upper(self)[:, champion]
      return int(self.random_state.choice(np.flatnonzero(u == u.max())))

  return {"rucb": RUCB, "rmed1": RMED1, "double_ts": DoubleTS, "rcs": RCS}


def preference_matrix(r_star: np.ndarray) -> np.ndarray:
  """P_ij = σ(r*_i − r*_j), float64 (K, K)."""
  r = np.asarray(r_star, np.float64)
  return 1.0 / (1.0 + np.exp(-(r[:, None] - r[None, :])))


def duelpy_run(name: str, P: np.ndarray, steps: int, seed: int, paper: bool = False
               ) -> tuple[np.ndarray, np.ndarray]:
  """One seed of duelpy's `AGENTS[name]` (with `paper`, `paper_classes`' subclass) on P, its
  answers relabelled by a permutation drawn from the seed, for `steps` duels: (weak, strong)
  regret per duel, (steps,) each, scored by duelpy's own metrics."""
  duelpy = import_duelpy()
  rng = np.random.RandomState(seed)
  order = rng.permutation(len(P))
  P = P[np.ix_(order, order)]
  metrics = duelpy.stats.metrics
  feedback = duelpy.util.feedback_decorators.MetricKeepingFeedbackMechanism(
      duelpy.feedback.MatrixFeedback(P, random_state=rng),
      metrics={"weak": metrics.WeakRegret(P), "strong": metrics.StrongRegret(P)})
  cls = paper_classes(duelpy)[name] if paper else getattr(duelpy.algorithms, AGENTS[name])
  algorithm = cls(feedback_mechanism=feedback, time_horizon=steps, random_state=rng)
  algorithm.run()
  return np.asarray(feedback.results["weak"]), np.asarray(feedback.results["strong"])


def duelpy_sweep(name: str, P: np.ndarray, steps: int, seeds: int, paper: bool = False):
  """(weak R(T) per seed, strong R(T) per seed, seconds) of duelpy's loop over `seeds` seeds."""
  begin = time.perf_counter()
  runs = [duelpy_run(name, P, steps, s, paper) for s in range(seeds)]
  seconds = time.perf_counter() - begin
  return (np.array([w.sum() for w, _ in runs]), np.array([s.sum() for _, s in runs]), seconds)


def rbx_sweep(names, env, steps: int, seeds: int, seed_batch: int | None = None):
  """rbx's sweep of the agents `names` on `env`: its `Results` (axes agent, seed, step)."""
  from rbx import rlhf
  return rlhf.sweep(lambda agent: (env, rlhf.get(agent)), {"agent": list(names)}, seeds=seeds,
                    steps=steps, progress=False, record="summary", seed_batch=seed_batch)



def instance(arms: int, seed: int):
  """The check's environment: one prompt, `arms` answers, r* ~ U[0, 2]^K (β = 0.5)."""
  import jax
  from rbx import rlhf
  return rlhf.random_instance(jax.random.key(seed), 1, arms, beta=0.5, r_max=2.0)


def compare(names, arms: int = 5, steps: int = 2000, seeds: int = 64, instance_seed: int = 0,
            level: float = 0.95):
  """Rows of the check (module docstring), two per agent (weak, strong): {agent, regret,
  rbx, duelpy, diff, low, high, agrees} against duelpy as shipped, {paper, paper_diff,
  paper_low, paper_high, explained} against `paper_classes`', and duelpy_seconds and
  duelpy_seed_steps, the shipped loop's seconds and seed-steps over the seeds."""
  env = instance(arms, instance_seed)
  P = preference_matrix(np.asarray(env.r_star[0]))
  res = rbx_sweep(names, env, steps, seeds)
  rows = []
  for name in names:
    weak, strong, seconds = duelpy_sweep(name, P, steps, seeds)
    paper = duelpy_sweep(name, P, steps, seeds, paper=True)
    for k, regret in enumerate(("weak_regret", "strong_regret")):
      ours = res.metric(regret).sel(agent=name).final()
      shipped = (weak, strong)[k]
      diff, low, high = stats.welch(ours, shipped, level)
      p_diff, p_low, p_high = stats.welch(ours, paper[k], level)
      rows.append(dict(agent=name, regret=regret, rbx=float(ours.mean()),
                       duelpy=float(shipped.mean()), diff=diff, low=low, high=high,
                       agrees=bool(low <= 0.0 <= high), paper=float(paper[k].mean()),
                       paper_diff=p_diff, paper_low=p_low, paper_high=p_high,
                       explained=bool(p_low <= 0.0 <= p_high), duelpy_seconds=seconds,
                       duelpy_seed_steps=seeds * steps))
  return rows


def speed(names, arms: int, steps: int, seeds: int, duelpy_rows, instance_seed: int = 0,
          seed_batches=(None,)):
  """Rows {agent, seed_batch, seed_batch_reason, rbx_seed_steps_per_s,
  rbx_wall_seed_steps_per_s, duelpy_seed_steps_per_s, ratio}: rbx's sweep of `seeds` seeds,
  one agent a program, at each of `seed_batches` (None: the default, `rbx.core.batching`),
  side by side, against duelpy's loop (`duelpy_rows`' seconds)."""
  env = instance(arms, instance_seed)
  out = []
  for name in names:
    row = next(r for r in duelpy_rows if r["agent"] == name)
    theirs = row["duelpy_seed_steps"] / row["duelpy_seconds"]
    for batch in seed_batches:
      begin = time.perf_counter()
      res = rbx_sweep([name], env, steps, seeds, seed_batch=batch)
      wall = time.perf_counter() - begin
      ours = res.timing["seed_steps"] / res.timing["run_seconds"]
      out.append(dict(agent=name, seed_batch=res.timing["seed_batch"],
                      seed_batch_reason=res.timing["seed_batch_reason"],
                      rbx_seed_steps_per_s=ours, rbx_wall_seed_steps_per_s=seeds * steps / wall,
                      duelpy_seed_steps_per_s=theirs, ratio=ours / theirs))
  return out


def duelpy_speed(names, arms: int, steps: int, seeds: int, instance_seed: int = 0):
  """Rows {agent, duelpy_seconds, duelpy_seed_steps} of duelpy's loop as shipped over `seeds`
  seeds, without the check (`--speed-only`)."""
  P = preference_matrix(np.asarray(instance(arms, instance_seed).r_star[0]))
  return [dict(agent=name, duelpy_seconds=duelpy_sweep(name, P, steps, seeds)[2],
               duelpy_seed_steps=seeds * steps) for name in names]


def _batch(text: str) -> int | None:
  """A --seed-batches entry: a positive int, or "default" (None)."""
  return None if text == "default" else int(text)


def main(argv=None) -> None:
  p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  p.add_argument("--agents", nargs="+", default=list(AGENTS), choices=list(AGENTS))
  p.add_argument("--arms", type=int, default=5)
  p.add_argument("--steps", type=int, default=2000)
  p.add_argument("--seeds", type=int, default=64)
  p.add_argument("--instance-seed", type=int, default=0)
  p.add_argument("--speed-seeds", type=int, default=0,
                 help="also time rbx's sweep of this many seeds against duelpy's loop")
  p.add_argument("--speed-only", action="store_true",
                 help="skip the check: time duelpy's loop over --seeds seeds, then rbx's sweep")
  p.add_argument("--seed-batches", nargs="+", type=_batch, default=[None],
                 metavar="B", help="time rbx's sweep at each of these seed batches side by side "
                 "(\"default\": the default rule's; default: only that)")
  args = p.parse_args(argv)
  if args.speed_only:
    if not args.speed_seeds:
      p.error("--speed-only needs --speed-seeds")
    _print_speed(args, duelpy_speed(args.agents, args.arms, args.steps, args.seeds,
                                    args.instance_seed))
    return
  rows = compare(args.agents, args.arms, args.steps, args.seeds, args.instance_seed)
  print(f"K = {args.arms}, T = {args.steps}, {args.seeds} seeds each; mean R(T); rbx − duelpy "
        "with its 95% Welch interval, against duelpy as shipped and with the named "
        "differences set to the paper's text")
  print(f"{'agent':>10} {'regret':>14} {'rbx':>8} {'duelpy':>8} {'rbx − duelpy':>24} "
        f"{'paper':>8} {'rbx − paper':>24}")
  for r in rows:
    verdict = ("agrees" if r["agrees"] else "explained" if r["explained"] else "DIFFERS")
    print(f"{r['agent']:>10} {r['regret']:>14} {r['rbx']:8.2f} {r['duelpy']:8.2f} "
          f"{r['diff']:7.2f} [{r['low']:7.2f}, {r['high']:7.2f}] {r['paper']:8.2f} "
          f"{r['paper_diff']:7.2f} [{r['paper_low']:7.2f}, {r['paper_high']:7.2f}]  {verdict}")
  print("\nnamed differences (duelpy 1.0.0's code vs the paper's text):")
  for name in dict.fromkeys(r["agent"] for r in rows):
    print(f"  {name}: {DIFFERENCES[name]}")
  if args.speed_seeds:
    _print_speed(args, rows[::2])


def _print_speed(args, duelpy_rows) -> None:
  print(f"\nspeed: K = {args.arms}, T = {args.steps}; rbx {args.speed_seeds} seeds (one program "
        f"an agent and seed batch) vs duelpy's loop over {args.seeds} seeds, seed-steps/s")
  for r in speed(args.agents, args.arms, args.steps, args.speed_seeds, duelpy_rows,
                 args.instance_seed, args.seed_batches):
    print(f"{r['agent']:>10} batch {r['seed_batch']:>4} rbx {r['rbx_seed_steps_per_s']:12,.0f} "
          f"(with compile {r['rbx_wall_seed_steps_per_s']:12,.0f})  duelpy "
          f"{r['duelpy_seed_steps_per_s']:9,.0f}  ratio {r['ratio']:8,.0f}x  "
          f"({r['seed_batch_reason']})")


if __name__ == "__main__":
  main()
