"""Per-step time of the rbx neural agents against a PyTorch reference loop (issue 3).

A Covertype-sized disjoint problem (d' = 54 features, K = 7 arms, m = 100, one hidden layer,
J = 100 training steps per round), at history sizes t = 100 and t = 2000, for 1 and 32
seeds in one program, with full-batch training (the reference's setting) and with
minibatches of `--batch-size` rows (stratified by block, see `rbx.neural.buffer`). rbx runs
the sweep driver's own program (what `neural.sweep` compiles): seeds split over the CPU
devices, `--seed-batch` of them vmapped at a time (1, the CPU default: each seed unbatched,
one after another). For each (agent, t, seeds, training) the history buffer — of one
capacity for every t, max(--history) + --steps, as in a run of that length — is pre-filled
with t rounds of random play and, after one warm-up chunk, `--repeats` chunks of `--steps`
rounds are timed (the median; compiled ahead, so compile time is excluded). The PyTorch reference (`neural_torch_reference.py`, in
its own process) runs full batch, one seed at a time.

Printed: seconds per seed-step for rbx and the reference, their ratio, and the floating-point
rate rbx reaches (an analytic count of the network's arithmetic on the rows it trains on)
against the machine's peak (a large float32 matmul measured here, and the nominal peak from
--peak-flops-per-cycle × cores × clock). Then the regret of full-batch and minibatch training
on a shared data set (`--regret-data`, Satimage: the offline stand-in for Covertype).

Usage: python -m benchmarks.throughput.neural_step_time [--history 100 2000] [--seeds 1 32]
       [--seed-batch 1 16] [--first-layer blocks|dense] [--matmul-precision float32|tf32|bf16]
       [--no-torch]
"""
from __future__ import annotations

import argparse
import os
import time
import warnings

import jax
from benchmarks import SHARED_DATASETS, timing
from benchmarks.reference.covertype_like import covertype_like

from rbx import data, neural            # one CPU device per core (rbx.core.devices)
from rbx.neural import network

SATIMAGE = str(SHARED_DATASETS / "satimage.csv.gz")

AGENTS = ["rbmle_ga", "rbmle_pc", "neural_ucb", "neural_ucb_exact", "neural_ts"]


def make_agent(name, args, **kw):
  base = name.removesuffix("_exact")
  products = dict(first_layer=args.first_layer, matmul_precision=args.matmul_precision)
  settings = (dict(width=args.width, train_steps=args.train_steps, eta=1e-3, lam=1e-3, nu=0.1)
              | {k: v for k, v in products.items() if v is not None} | kw)
  if name.endswith("_exact"):
    settings["precision"] = "exact"
  if base == "rbmle_ga" and args.arm_batch is not None:
    settings["arm_batch"] = args.arm_batch
  return neural.get(base, **settings)


def whole_run_table(env, args):
  """A whole run of `--whole-run` rounds from an empty history as a new user runs it:
  `neural.sweep` with its defaults (every device), beside one device and the reference's
  whole run; compile time excluded (the sweep's own timing)."""
  print(f"whole run of {args.whole_run} rounds, {max(args.seeds)} seeds, full batch:")
  for name in args.agents:
    agent = make_agent(name, args)
    per = {}
    for devices in (None, 1):
      res = neural.sweep(lambda: (env, agent), {}, seeds=max(args.seeds), steps=args.whole_run,
                         devices=devices)
      per[devices] = res.timing["run_seconds"] / res.timing["seed_steps"]
    ref = float("nan") if args.no_torch else timing.torch_seconds(name, args, 0, args.whole_run)
    print(f"  {name:<18} rbx {per[None] * 1e3:.2f} ms/seed-round ({jax.device_count()} devices), "
          f"{per[1] * 1e3:.2f} (1 device); torch {ref * 1e3:.1f} ms/round; "
          f"ratio {ref / per[None]:.1f} ({ref / per[1]:.1f} on 1 device)", flush=True)


def flops_per_seed_step(name, args, history, batch):
  """rbx's network arithmetic in one round: a training step on `rows` rows (the history, or
  ⌈B/K⌉ per block for minibatches) costs 2·rows·(m·d' + m) for the forward pass, twice that
  for the first layer (forward and weight gradient) and three times for the output layer.
  GA's index adds a forward pass over the history; exact Z⁻¹ adds its O(p²) products."""
  m, K = args.width, args.arms
  rows = history if batch is None else K * -(-batch // K)
  forward = lambda r: 2.0 * r * (m * args.dim + m)
  train = args.train_steps * (2 * 2.0 * rows * m * args.dim + 3 * 2.0 * rows * m)
  p = m * args.dim * K + m
  if name == "rbmle_ga":
    return K * (train + forward(history))
  extra = 3 * forward(K) + (6.0 * p * p + 2.0 * K * p * p if name.endswith("_exact") else 0.0)
  return train + extra


def nominal_peak(args):
  mhz = max(float(l.split(":")[1]) for l in open("/proc/cpuinfo") if l.startswith("cpu MHz"))
  return os.cpu_count() * args.peak_flops_per_cycle * mhz * 1e6


def regret_table(args):
  """Prints the regret of full-batch vs minibatch training on the shared data set (same seeds)
  and the wall time of each run (compile included), a row as each run ends."""
  ds = data.load(args.regret_data)
  env = neural.classification(ds.features, ds.labels)
  K = env.num_arms
  print(f"\nregret after {args.regret_steps} rounds on {os.path.basename(args.regret_data)} "
        f"(d'={env.dim}, K={K}; m={args.width}, J={args.regret_train_steps}, "
        f"eta={args.regret_eta}, {args.regret_seeds} seeds; uniform play: "
        f"{args.regret_steps * (K - 1) / K:.0f} in expectation):")
  for name in args.regret_agents:
    for batch in (None, args.batch_size):
      agent = make_agent(name, args, train_steps=args.regret_train_steps, batch_size=batch,
                         eta=args.regret_eta)
      start = time.perf_counter()
      final = neural.sweep(lambda: (env, agent), {}, seeds=args.regret_seeds,
                           steps=args.regret_steps).final()
      print(f"  {name:<12}{mode_name(batch):<8}{final.mean():9.1f} ± {final.std():<7.1f} "
            f"({time.perf_counter() - start:.0f} s)", flush=True)


def mode_name(batch):
  return "full" if batch is None else f"B={batch}"


def main():
  p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  p.add_argument("--agents", nargs="+", default=AGENTS, choices=AGENTS)
  p.add_argument("--history", nargs="+", type=int, default=[100, 2000])
  p.add_argument("--seeds", nargs="+", type=int, default=[1, 32])
  p.add_argument("--devices", nargs="+", type=int, default=[jax.device_count()],
                 help="split a multi-seed run's seeds over this many CPU devices (shard_map, "
                      "one core each)")
  p.add_argument("--seed-batch", nargs="+", type=int, default=[1],
                 help="seeds vmapped at once per device (the driver's seed_batch; 1: each seed "
                      "unbatched, in sequence, the CPU default of neural.sweep)")
  p.add_argument("--arm-batch", type=int, default=None,
                 help="GA's arm_batch (default: the agent's, 1 for full batch on a CPU)")
  p.add_argument("--steps", type=int, default=2, help="timed rounds per chunk")
  p.add_argument("--repeats", type=int, default=3,
                 help="rbx: timed chunks (median), after one warm-up chunk")
  p.add_argument("--torch-steps", type=int, default=3,
                 help="reference: median of this many timed rounds, after one warm-up round")
  p.add_argument("--width", type=int, default=100)
  p.add_argument("--train-steps", type=int, default=100)
  p.add_argument("--dim", type=int, default=54)
  p.add_argument("--arms", type=int, default=7)
  p.add_argument("--data", type=int, default=5000)
  p.add_argument("--exact-max-seeds", type=int, default=1,
                 help="Z⁻¹ is (p, p) per seed (5.7 GB at p = 37,900): larger seed counts skip it")
  p.add_argument("--first-layer", default=None, choices=network.FIRST_LAYERS,
                 help="the network's first-layer products (default: the device kind's)")
  p.add_argument("--matmul-precision", default=None, choices=network.MATMUL_PRECISIONS,
                 help="the network's products' precision (default: the device kind's)")
  p.add_argument("--no-torch", action="store_true")
  p.add_argument("--peak-flops-per-cycle", type=float, default=32.0,
                 help="float32 flops per cycle per core (AVX-512 or 2×AVX2 FMA: 32)")
  p.add_argument("--batch-size", type=int, default=64,
                 help="minibatch rows per step (⌈B/K⌉ per block); timed beside full batch")
  p.add_argument("--training", nargs="+", default=["full", "minibatch"],
                 choices=["full", "minibatch"])
  p.add_argument("--dataset", default=None,
                 help="time rbx on this data set (in ../shared/datasets) instead of the "
                      "synthetic one; no reference")
  p.add_argument("--whole-run", type=int, default=None,
                 help="instead of the table: a whole run of this many rounds (the largest "
                      "--seeds) with neural.sweep's defaults against the reference's")
  p.add_argument("--regret-data", default=SATIMAGE)
  p.add_argument("--regret-agents", nargs="*", default=["neural_ucb", "rbmle_pc"])
  p.add_argument("--regret-steps", type=int, default=1000)
  p.add_argument("--regret-seeds", type=int, default=4)
  p.add_argument("--regret-train-steps", type=int, default=100)
  p.add_argument("--regret-eta", type=float, default=1e-3)
  args = p.parse_args()
  warnings.filterwarnings("ignore", message="Some donated buffers were not usable")

  if args.dataset is None:
    env = neural.classification(*covertype_like(args.data, args.dim, args.arms), args.arms)
  else:
    ds = data.load(args.dataset, data_dir=SHARED_DATASETS)
    env = neural.classification(ds.features, ds.labels)
    args.dim, args.arms, args.no_torch = env.dim, env.num_arms, True
  if args.whole_run is not None:
    return whole_run_table(env, args)
  peak, nominal = timing.matmul_rate(2048), nominal_peak(args)
  capacity = max(args.history) + args.steps * (args.repeats + 1)
  batches = [None if mode == "full" else args.batch_size for mode in args.training]
  print(f"d'={args.dim} K={args.arms} m={args.width} L=2 J={args.train_steps}; "
        f"p={args.width * args.dim * args.arms + args.width}; buffer capacity {capacity}; "
        f"{os.cpu_count()} cores; peak: matmul {peak / 1e9:.0f} GFLOP/s measured, "
        f"{nominal / 1e9:.0f} GFLOP/s nominal")
  print(f"{'agent':<18}{'t':>6}{'seeds':>6}{'dev':>4}{'vmap':>5}{'training':>9}{'rbx s/seed-step':>17}"
        f"{'torch s/step':>14}{'ratio':>8}{'rbx GFLOP/s':>13}{'% of matmul':>13}")
  torch_cache = {}
  for name in args.agents:
    for t in args.history:
      for seeds in args.seeds:
        if name.endswith("_exact") and seeds > args.exact_max_seeds:
          continue
        if not args.no_torch and (name, t) not in torch_cache:
          torch_cache[name, t] = timing.torch_seconds(name, args, t)
        ref = torch_cache.get((name, t), float("nan"))
        for batch in batches:
          agent = make_agent(name, args, batch_size=batch)
          for dev in [1] if seeds == 1 else [d for d in args.devices if seeds % d == 0]:
            for vmap in sorted({min(b, seeds // dev) for b in args.seed_batch}):
              sec = timing.seed_step_seconds(env, agent, t, capacity, seeds, args.steps, args.repeats, dev, vmap)
              rate = flops_per_seed_step(name, args, t + args.steps / 2, batch) / sec
              print(f"{name:<18}{t:>6}{seeds:>6}{dev:>4}{vmap:>5}{mode_name(batch):>9}{sec:>17.4g}"
                    f"{ref:>14.4g}{ref / sec:>8.1f}{rate / 1e9:>13.1f}"
                    f"{100 * rate / peak:>12.0f}%", flush=True)
  if args.regret_agents:
    regret_table(args)


if __name__ == "__main__":
  main()
