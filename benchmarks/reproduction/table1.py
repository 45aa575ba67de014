"""The NeuralRBMLE paper's Tables 1–2 protocol (section 6, Appendix F), and its likelihood
comparison and α(t) = t^n ablation, on the shared data sets.

Protocol (Appendix F): classification data as K-armed bandits (disjoint encoding, reward 1
for the true class); the seven algorithms of Table 1; ν tuned over {1, 0.1, 10⁻³, 10⁻⁵} with
the best ν (lowest mean final regret) per algorithm and data set — here on `--tune-seeds`
seeds of their own (default: as many as --seeds), the table reporting the other seeds, so
that tuning does not pick the luckiest seeds' noise (0: tune on the reported seeds, which
costs half as much and is what Appendix F appears to do); λ = 0.001 (1 for LinRBMLE);
one hidden layer of width m = 100, J = 100 gradient steps per round, η = 0.001, α(t) = ν√t;
diagonal Z⁻¹; BootstrappedNN with q = 10 networks and p = 0.8; 10 seeds; T = 15000 rounds
(Mushroom: 8,000; at most the number of rows). Each (data set, algorithm) is one jitted
program over the ν grid and the seeds (`rbx.neural.sweep`). The defaults are the paper's
protocol on all six data sets, meant for an accelerator; `--estimate` prints its cost on the
machine at hand from timed rounds of the same program first, checked against a short measured
run (see `estimate`), e.g. `python -m benchmarks.reproduction.table1 --estimate`.

Run from the repository root, e.g. the reduced run of benchmarks/README.md:

    python -m benchmarks.reproduction.table1 --steps 2000 --steps-for mnist5k=500 --seeds 3 --width 32 \\
        --train-steps 10 --eta 0.01 --batch-size 32 --out benchmarks/results/table1.md

`--likelihoods` adds NeuralRBMLE-GA with the Gaussian, Bernoulli and mixture likelihoods
(section 6), `--alpha-exponents 0 0.25 0.5 1 2` the ablation α(t) = t^n (ν = 1; the paper runs
it on MNIST). `--data-dir` defaults to ../shared/datasets beside the repository.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

from benchmarks import SHARED_DATASETS, timing
from rbx import data, neural
from rbx.neural import training

DATASETS = ("adult", "covertype", "magic", "mnist5k", "mushroom", "shuttle")
PAPER_COLUMNS = {"adult": "Adult", "covertype": "Covertype", "magic": "MagicTelescope",
                 "mnist5k": "MNIST", "mushroom": "Mushroom", "shuttle": "Shuttle"}
ALGORITHMS = {          # agent name -> the paper's name; all but BootstrappedNN tune ν
    "rbmle_ga": "NeuralRBMLE-GA", "rbmle_pc": "NeuralRBMLE-PC", "neural_ucb": "NeuralUCB",
    "neural_ts": "NeuralTS", "deep_fpl": "DeepFPL", "bootstrapped_nn": "BootstrappedNN",
    "lin_rbmle": "LinRBMLE",
}
REFERENCE_FORM = {"neural_ucb": "NeuralUCB (reference form)",
                  "neural_ts": "NeuralTS (reference form)"}   # --reference-form's extra rows
NU_GRID = (1.0, 0.1, 1e-3, 1e-5)
PAPER_ROUNDS = {"mushroom": 8000}     # T where the paper's is not 15,000 (all 8,124 rows is more)

# Appendix H, Tables 1 and 2 (T = 15000, 10 seeds; columns Adult, Covertype, MagicTelescope,
# MNIST, Mushroom, Shuttle — our mnist5k, the first 5,000 rows, stands in for MNIST).
PAPER_MEAN = {
    "rbmle_ga": (3125.2, 4328.1, 3342.9, 1557.8, 313.1, 335.2),
    "rbmle_pc": (3200.6, 4824.9, 3630.2, 2197.7, 580.4, 817.7),
    "neural_ucb": (3154.9, 4697.7, 3555.2, 2079.5, 583.8, 555.0),
    "neural_ts": (3179.0, 4813.3, 3567.1, 2585.7, 594.5, 577.7),
    "deep_fpl": (3174.9, 5207.3, 3559.2, 4473.0, 600.1, 1622.9),
    "bootstrapped_nn": (3351.4, 5265.3, 3929.7, 6437.1, 805.1, 1323.9),
    "lin_rbmle": (3121.9, 4929.8, 3885.0, 11851.9, 656.0, 3193.7),
}
PAPER_STD = {
    "rbmle_ga": (28.05, 50.97, 32.91, 29.80, 19.60, 11.50),
    "rbmle_pc": (115.96, 88.91, 137.96, 82.28, 57.91, 48.37),
    "neural_ucb": (42.21, 62.67, 97.44, 86.48, 40.74, 79.00),
    "neural_ts": (36.67, 87.34, 125.69, 179.94, 44.46, 75.92),
    "deep_fpl": (39.58, 536.48, 93.77, 1255.68, 43.25, 824.98),
    "bootstrapped_nn": (133.52, 126.23, 55.25, 630.02, 64.31, 311.51),
    "lin_rbmle": (24.97, 99.99, 27.20, 279.36, 20.23, 71.27),
}


def rounds(args, ds_name: str, rows: int) -> int:
  """T of a data set: --steps-for's, else --steps, at most the rows and the paper's T."""
  return min(args.steps_for.get(ds_name, args.steps), rows, PAPER_ROUNDS.get(ds_name, rows))


def names(args) -> list[str]:
  """The table's rows: the algorithms, then (--reference-form) NeuralUCB/NeuralTS with the
  public implementation's σ (`form="reference"`), as "<name>_reference"."""
  extra = [f"{n}_reference" for n in REFERENCE_FORM if n in args.algorithms]
  return list(args.algorithms) + (extra if args.reference_form else [])


def label(name: str) -> str:
  """A row's name in the tables."""
  base = name.removesuffix("_reference")
  return REFERENCE_FORM[base] if name != base else ALGORITHMS[name]


def agent_kwargs(name: str, args) -> dict:
  """Appendix F's settings for one algorithm (network settings from the command line)."""
  if name.endswith("_reference"):
    return agent_kwargs(name.removesuffix("_reference"), args) | {"form": "reference"}
  if name == "lin_rbmle":
    return dict(lam=1.0)
  kw = dict(lam=args.lam, eta=args.eta, width=args.width, train_steps=args.train_steps,
            batch_size=args.batch_size, depth=2, procedure=args.procedure)
  if name in ("rbmle_pc", "neural_ucb", "neural_ts"):
    kw["precision"] = "diag"                              # Appendix F's diagonal Z⁻¹
  return kw


def build(env, name: str, kwargs: dict):
  """The sweep's `build` of one table row: `build(nu) -> (env, agent)` (BootstrappedNN: no ν)."""
  if name == "bootstrapped_nn":
    return lambda: (env, neural.get(name, **kwargs))
  return lambda nu: (env, neural.get(name.removesuffix("_reference"), nu=nu, **kwargs))


def final_regret(env, name: str, kwargs: dict, nus, seeds, steps: int):
  """Final cumulative regret of `name` for every ν (or one run without ν) and seed in `seeds`
  (a count or a list), shape (len(nus), seeds), and the sweep's timing."""
  grid = {} if name == "bootstrapped_nn" else {"nu": list(nus)}
  res = neural.sweep(build(env, name, kwargs), grid, seeds, steps)
  final = res.final()
  return (final[None] if name == "bootstrapped_nn" else final), res.timing


def seed_split(args) -> tuple[list[int], list[int]]:
  """(tuning seeds, evaluation seeds): ν is chosen on seeds 0..tune−1 and the table reports
  seeds tune..tune+seeds−1, so that the reported regret and rank are not the minimum of noisy
  estimates taken over the same seeds; --tune-seeds 0 tunes on the evaluation seeds."""
  tune = list(range(args.tune_seeds))
  return tune, list(range(args.tune_seeds, args.tune_seeds + args.seeds))


def pick(final: np.ndarray, tune: int) -> tuple[int, np.ndarray]:
  """The best ν (lowest mean final regret on the first `tune` seeds; all seeds when 0) and
  the final regrets of the other seeds at it: final (ν, seeds) -> (index, (seeds − tune,))."""
  best = int(np.argmin(final[:, :tune].mean(1) if tune else final.mean(1)))
  return best, final[best, tune:]


def table(args) -> tuple[str, dict]:
  """Runs the protocol; returns the Markdown tables and the raw results."""
  results = {}
  tune, evaluate = seed_split(args)
  for ds_name in args.datasets:
    ds = data.load(ds_name, data_dir=args.data_dir)
    env = neural.classification(ds.features, ds.labels)
    steps = rounds(args, ds_name, ds.features.shape[0])
    for name in names(args):
      no_nu = name == "bootstrapped_nn"
      final, timing = final_regret(env, name, agent_kwargs(name, args), args.nu,
                                   evaluate if no_nu else tune + evaluate, steps)
      best, finals = pick(final, 0 if no_nu else len(tune))
      results[ds_name, name] = dict(
          mean=float(finals.mean()), std=float(finals.std()), steps=steps,
          nu=None if no_nu else args.nu[best], all=final.mean(1).tolist(),
          finals=np.asarray(finals))
      _log(f"{ds_name:9s} {name:16s} T={steps} best nu={results[ds_name, name]['nu']}"
           f" regret {finals.mean():8.1f} ± {finals.std():6.1f}"
           f"  (compile {timing['compile_seconds']:.0f} s, run {timing['run_seconds']:.0f} s)")
  return markdown(results, args), results


def markdown(results: dict, args) -> str:
  """Tables 1 and 2 side by side with the paper's numbers, the best ν, and rank agreement."""
  cols = [d for d in DATASETS if d in args.datasets]
  head = "| algorithm | " + " | ".join(
      f"{d} (paper: {PAPER_COLUMNS[d]})" for d in cols) + " |\n|---|" + "---:|" * len(cols) + "\n"
  out = []
  for title, field, paper in (("Mean final cumulative regret", "mean", PAPER_MEAN),
                              ("Standard deviation of the final cumulative regret", "std",
                               PAPER_STD)):
    out.append(f"{title}, ours (paper's Table {1 if field == 'mean' else 2}, T = 15000):\n\n"
               + head)
    for name in names(args):
      cells = [f"{results[d, name][field]:.1f} "
               f"({paper[name.removesuffix('_reference')][DATASETS.index(d)]})" for d in cols]
      out.append(f"| {label(name)} | " + " | ".join(cells) + " |\n")
    out.append("\n")
  out.append("Best ν and rounds T per data set:\n\n" + head)
  for name in names(args):
    cells = [_nu(results[d, name]["nu"]) + f" (T={results[d, name]['steps']})" for d in cols]
    out.append(f"| {label(name)} | " + " | ".join(cells) + " |\n")
  if len(args.algorithms) > 2:
    rankings = [("", list(args.algorithms))]
    if args.reference_form:
      rankings.append((", NeuralUCB/TS in reference form", [
          f"{n}_reference" if n in REFERENCE_FORM else n for n in args.algorithms]))
    for what, rows in rankings:
      out.append(f"| Kendall τ of our ranking with the paper's{what} (p; seed range) | "
                 + " | ".join(kendall_text(results, d, rows) for d in cols) + " |\n")
    tune = ("ν tuned on the evaluation seeds themselves (--tune-seeds 0)" if not args.tune_seeds
            else f"ν tuned on {args.tune_seeds} other seeds")
    out.append(f"\nKendall τ: {tune}; p: Kendall's exact test of no association (two-sided, "
               f"given our means; asymptotic where values tie); seed range: the 2.5th–97.5th percentiles of τ over bootstrap "
               f"resamples of each algorithm's {args.seeds} evaluation seeds — a spread of τ "
               f"under seed noise, not a calibrated 95% interval (with a few seeds it is too "
               f"narrow, and τ at the means need not lie inside it).\n")
  return "".join(out)


def kendall(results: dict, ds: str, rows: list[str], boots: int = 1000, seed: int = 0):
  """Kendall's τ between our ranking of the algorithms `rows` by mean final regret on `ds`
  and the paper's; the p-value of Kendall's exact test of no association (two-sided; the
  asymptotic test where means or the paper's values tie); and the
  2.5th and 97.5th percentiles of τ over bootstrap resamples of each algorithm's seeds.
  Returns (τ, p, low, high)."""
  paper = [PAPER_MEAN[n.removesuffix("_reference")][DATASETS.index(ds)] for n in rows]
  finals = [results[ds, n]["finals"] for n in rows]
  rng = np.random.default_rng(seed)
  draws = [np.array([f[rng.integers(0, f.size, f.size)].mean() for _ in range(boots)])
           for f in finals]                                   # (algorithm, boots)
  taus = [_kendall([d[b] for d in draws], paper) for b in range(boots)]
  means = [f.mean() for f in finals]
  if len(rows) <= 2:
    p = 1.0
  elif len(set(means)) < len(means) or len(set(paper)) < len(paper):
    p = stats.kendalltau(means, paper, method="asymptotic").pvalue   # exact assumes no ties
  else:
    p = stats.kendalltau(means, paper, method="exact").pvalue
  return (_kendall(means, paper), float(p), *np.percentile(taus, [2.5, 97.5]))


def kendall_text(results: dict, ds: str, rows: list[str]) -> str:
  """"+0.62 (p 0.07; −0.05…+0.81)": τ, its exact p and its seed range (`kendall`)."""
  tau, p, low, high = kendall(results, ds, rows)
  return f"{tau:+.2f} (p {p:.2g}; {low:+.2f}…{high:+.2f})"


def estimate(args) -> str:
  """The protocol's cost on this machine from timed rounds of the program `table` runs.

  For each data set and row, the sweep that `table` runs — the ν grid vmapped, its tuning and
  evaluation seeds over the devices `neural.sweep` uses, its default seed batch — is compiled
  with a history pre-filled with t rows of random play, and the median of `--estimate-rounds`
  rounds after a warm-up round is timed (`benchmarks.timing.seed_step_seconds`; compile
  excluded). Each procedure has its own cost model (`model`): with `procedure="steps"` or
  "neuralts", full-batch training is O(t) a round, so a run of T costs T rounds at t = T/2
  (minibatches: the same round at every t); with "neuralucb" a round makes at most `max_updates` per-row updates and
  exactly that many once t ≥ max_updates (the first pass alone reaches the cap), and a round of
  the program lasts as long as its slowest run, so T rounds at t = max_updates — an upper bound
  for the rounds before. With `--estimate-check R` (> 0), every row's model is checked against
  a measured run of R rounds of the same sweep (`neural.sweep`, compile excluded): the table
  prints measured / estimated for R rounds.
  """
  rows, total = [], 0.0
  tune, evaluate = seed_split(args)
  for ds_name in args.datasets:
    ds = data.load(ds_name, data_dir=args.data_dir)
    env = neural.classification(ds.features, ds.labels)
    steps = rounds(args, ds_name, ds.features.shape[0])
    for name in names(args):
      seeds = evaluate if name == "bootstrapped_nn" else tune + evaluate
      seconds, at = round_seconds(env, name, args, steps, len(seeds))
      total += seconds * steps
      check = ""
      if args.estimate_check:
        R = min(args.estimate_check, steps)
        predicted = R * round_seconds(env, name, args, R, len(seeds))[0]
        grid = {} if name == "bootstrapped_nn" else {"nu": list(args.nu)}
        measured = neural.sweep(build(env, name, agent_kwargs(name, args)), grid, seeds,
                                R).timing["run_seconds"]
        check = f" {measured:.1f} / {predicted:.1f} = {measured / predicted:.2f} |"
      rows.append(f"| {ds_name} | {label(name)} | {steps} | {len(seeds)} | {at} | "
                  f"{seconds:.3f} | {seconds * steps / 3600:.2f} |{check}\n")
      _log(rows[-1].strip())
  batch = "full batch" if args.batch_size is None else f"minibatches of {args.batch_size}"
  check_head = (f" run of {args.estimate_check} rounds: measured / estimated (s) |"
                if args.estimate_check else "")
  return (f"Estimated cost (m = {args.width}, J = {args.train_steps}, {batch}, procedure "
          f"{args.procedure}; the median of {args.estimate_rounds} rounds of the table's "
          f"program, at the t of each procedure's cost model):\n\n"
          f"| data set | algorithm | T | seeds | timed at t | s per round, all runs | hours |"
          f"{check_head}\n|---|---|---:|---:|---:|---:|---:|{'---:|' if check_head else ''}\n"
          + "".join(rows) + f"| total | | | | | | **{total / 3600:.1f}** |\n")


def model(args, steps: int) -> tuple[int, int]:
  """(t, capacity): the history at which one round, times T = `steps`, is a run's cost under
  the procedure's cost model (see `estimate`), and a buffer that holds it and the timed
  rounds."""
  timed = args.estimate_rounds + 1
  if args.procedure == "neuralucb":
    cap = training.settings().max_updates
    return cap, max(steps, cap + timed)
  return max(steps // 2, 1), max(steps, steps // 2 + timed)


def round_seconds(env, name: str, args, steps: int, seeds: int) -> tuple[float, int]:
  """Seconds of one round of the table's program (every ν and seed) at the history of the
  cost model for a run of `steps` rounds, and that history."""
  history, capacity = model(args, steps)
  grid = None if name == "bootstrapped_nn" else {"nu": list(args.nu)}
  make = build(env, name, agent_kwargs(name, args))
  agent = make()[1] if grid is None else (lambda nu: make(nu)[1])
  per = timing.seed_step_seconds(env, agent, history=history, capacity=capacity, seeds=seeds,
                                 steps=1, repeats=args.estimate_rounds, devices=None,
                                 seed_batch=None, grid=grid)
  return per * seeds * (1 if grid is None else len(args.nu)), history


def variants(args) -> str:
  """The likelihood comparison and the α(t) = t^n ablation of section 6 for NeuralRBMLE-GA."""
  out = []
  kwargs = agent_kwargs("rbmle_ga", args)
  for ds_name in args.variant_datasets:
    ds = data.load(ds_name, data_dir=args.data_dir)
    env = neural.classification(ds.features, ds.labels)
    steps = min(args.steps, ds.features.shape[0])
    if args.likelihoods:
      res = neural.sweep(lambda likelihood, nu: (env, neural.rbmle_ga(
          nu=nu, likelihood=likelihood, **kwargs)), {"likelihood": ["gaussian", "bernoulli",
                                                                    "mixture"],
                                                     "nu": list(args.nu)}, args.seeds, steps)
      final = res.final()                                           # (likelihood, nu, seed)
      out.append(f"NeuralRBMLE-GA by likelihood on {ds_name} (T = {steps}, best ν):\n\n"
                 "| likelihood | best ν | final regret |\n|---|---:|---:|\n")
      for lik, f in zip(res.coords["likelihood"], final):
        b = int(np.argmin(f.mean(1)))
        out.append(f"| {lik} | {args.nu[b]:g} | {f[b].mean():.1f} ± {f[b].std():.1f} |\n")
      out.append("\n")
    if args.alpha_exponents:
      res = neural.sweep(lambda n: (env, neural.rbmle_ga(nu=1.0, n=n, **kwargs)),
                         {"n": list(args.alpha_exponents)}, args.seeds, steps)
      out.append(f"NeuralRBMLE-GA with α(t) = t^n on {ds_name} (T = {steps}):\n\n"
                 "| n | final regret |\n|---:|---:|\n")
      for n, f in zip(args.alpha_exponents, res.final()):
        out.append(f"| {n:g} | {f.mean():.1f} ± {f.std():.1f} |\n")
      out.append("\n")
  return "".join(out)


def _nu(nu) -> str:
  return "—" if nu is None else f"{nu:g}"


def _kendall(a, b) -> float:
  """Kendall's τ between two score lists (ties count zero)."""
  a, b = np.asarray(a), np.asarray(b)
  i, j = np.triu_indices(len(a), 1)
  s = np.sign(a[i] - a[j]) * np.sign(b[i] - b[j])
  return float(s.sum() / len(s))


def _log(msg: str) -> None:
  print(msg, file=sys.stderr, flush=True)


def parse(argv=None):
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--steps", type=int, default=15000, help="rounds T (at most the rows)")
  p.add_argument("--steps-for", nargs="*", default=[], metavar="NAME=T",
                 help="rounds for particular data sets, e.g. mnist5k=500")
  p.add_argument("--seeds", type=int, default=10)
  p.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
  p.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS), choices=ALGORITHMS)
  p.add_argument("--nu", nargs="+", type=float, default=list(NU_GRID), help="the ν grid")
  p.add_argument("--width", type=int, default=100, help="m")
  p.add_argument("--train-steps", type=int, default=100, help="J")
  p.add_argument("--eta", type=float, default=1e-3)
  p.add_argument("--lam", type=float, default=1e-3, help="λ of the neural agents")
  p.add_argument("--batch-size", type=int, default=None, help="minibatch size (default: full)")
  p.add_argument("--procedure", default="steps", choices=training.PROCEDURES,
                 help="the networks' training: J steps, the public NeuralUCB code's per-row "
                      "SGD (neuralucb; no --batch-size) or the public NeuralTS code's J "
                      "full-batch steps on the MSE (neuralts) (rbx.neural.training)")
  p.add_argument("--tune-seeds", type=int, default=None,
                 help="seeds on which ν is tuned, other than the evaluation seeds (default: "
                      "as many as --seeds; 0: tune on the evaluation seeds, as Appendix F)")
  p.add_argument("--reference-form", action="store_true",
                 help="also NeuralUCB and NeuralTS with the public implementation's σ "
                      "(form=\"reference\": ν inside the root, no 1/m)")
  p.add_argument("--likelihoods", action="store_true",
                 help="also NeuralRBMLE-GA with the Gaussian, Bernoulli and mixture likelihoods")
  p.add_argument("--alpha-exponents", nargs="*", type=float, default=[],
                 help="also NeuralRBMLE-GA with α(t) = t^n for these n")
  p.add_argument("--variant-datasets", nargs="+", default=["mnist5k"], choices=DATASETS,
                 help="data sets of --likelihoods and --alpha-exponents")
  p.add_argument("--no-table", action="store_true", help="skip the Tables 1-2 runs")
  p.add_argument("--estimate", action="store_true",
                 help="only estimate the protocol's cost from timed rounds (see `estimate`)")
  p.add_argument("--estimate-rounds", type=int, default=3,
                 help="rounds timed by --estimate (median, after a warm-up round)")
  p.add_argument("--estimate-check", type=int, default=200,
                 help="--estimate: check each estimate against a measured run of this many "
                      "rounds (0: no check)")
  p.add_argument("--data-dir", default=str(SHARED_DATASETS))
  p.add_argument("--out", default=None, help="also write the Markdown here")
  args = p.parse_args(argv)
  if args.procedure == "neuralucb" and args.batch_size is not None:
    p.error("--procedure neuralucb trains one row per update: leave out --batch-size")
  if args.tune_seeds is None:
    args.tune_seeds = args.seeds
  try:
    args.steps_for = {k: int(v) for k, v in (item.split("=") for item in args.steps_for)}
  except ValueError:
    p.error(f"--steps-for takes NAME=T pairs, got {args.steps_for}")
  return args


def main(argv=None) -> str:
  args = parse(argv)
  start = time.perf_counter()
  if args.estimate:
    text = estimate(args)
    print(text)
    return text
  text = "" if args.no_table else table(args)[0] + "\n"
  if args.likelihoods or args.alpha_exponents:
    text += variants(args)
  text += f"Wall time {time.perf_counter() - start:.0f} s.\n"
  print(text)
  if args.out:
    Path(args.out).write_text(text)
  return text


if __name__ == "__main__":
  main()
