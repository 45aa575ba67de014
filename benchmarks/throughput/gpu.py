"""Every figure of rbx on one accelerator in one command, within about 5 minutes on one GPU.

Rows: Algorithm 1 (one prompt, A = 10, 50, 200, 1,000), linear_algorithm1, linear_xpo and
online_dpo (|X| = 10⁴, A = 10, d = 16), and the sequence agents on the log-linear policy
(|X| = 64, V^L = 4,096 and 65,536, the enumeration's seconds apart), each at rbx's default seed
batch and at the best of a small list (the CPU rule's batch and all of a device's seeds),
compile seconds beside run seconds; the README's hello world's compile seconds in fresh processes with the compile pool
at its default and at one thread; `rbx demo`'s wall time; a neural round (NeuralUCB on
Covertype's shape, m = 100, J = 100) at the device's default products and three others,
beside the PyTorch loop of `neural_torch_reference.py` on the same GPU; and the Table-1 program's cost (`table1.py --estimate`'s
model) for every data set and algorithm, on synthetic data of each data set's shape (the
data sets do not travel to the device machine). Each sweep stops after the chunk that passes
its time budget, so a slow setting reports the steps it ran; a row whose budget is gone is
"skipped". Seed-steps/s count run time only (compile is its own column).

    python -m benchmarks.throughput.gpu [--tiny] [--budget SECONDS] [--out benchmarks/results/gpu.md]

`--tiny` shrinks every size for a CPU (most of its time is compiling, which no budget bounds).
"""
from __future__ import annotations

import argparse
import importlib.util
import math
import time
from pathlib import Path
from types import SimpleNamespace

import jax

from benchmarks import ROOT, timing
from benchmarks.reference.covertype_like import covertype_like
from benchmarks.reproduction import table1
from benchmarks.throughput import compile_time, sequence_throughput
from rbx import neural, rlhf
from rbx.core import compile_cache
from rbx.runs import demo
from rbx.rlhf import registry as rlhf_registry, sequences

# Each data set's (rows, features, classes), from shared/datasets/MANIFEST.json.
SHAPES = {"adult": (48842, 14, 2), "covertype": (581012, 54, 7), "magic": (19020, 10, 2),
          "mnist5k": (5000, 784, 10), "mushroom": (8124, 22, 2), "shuttle": (58000, 9, 7)}
# Seed-batch rows: label -> (agent, |X|, A, d (None: tabular), seeds, steps, chunk) per scale.
SWEEPS = {
    "full": {
        "Algorithm 1, one prompt, A = 10": ("algorithm1", 1, 10, None, 4096, 200, 50),
        "Algorithm 1, one prompt, A = 50": ("algorithm1", 1, 50, None, 1024, 40, 10),
        "Algorithm 1, one prompt, A = 200": ("algorithm1", 1, 200, None, 256, 20, 5),
        "Algorithm 1, one prompt, A = 1,000": ("algorithm1", 1, 1000, None, 64, 20, 5),
        "linear_algorithm1, |X| = 10⁴, A = 10, d = 16": ("linear_algorithm1", 10 ** 4, 10, 16,
                                                         256, 40, 10),
        "linear_xpo, |X| = 10⁴, A = 10, d = 16": ("linear_xpo", 10 ** 4, 10, 16, 256, 40, 10),
        "online_dpo, |X| = 10⁴, A = 10, d = 16": ("online_dpo", 10 ** 4, 10, 16, 256, 40, 10),
    },
    "tiny": {   # the four Algorithm 1 rows one program: a cache directory compiles it once
        **{f"Algorithm 1, one prompt, A = {A}": ("algorithm1", 1, 5, None, 8, 4, 2)
           for A in ("10", "50", "200", "1,000")},
        "linear_algorithm1, |X| = 10⁴, A = 10, d = 16": ("linear_algorithm1", 20, 4, 3, 8, 4, 2),
        "linear_xpo, |X| = 10⁴, A = 10, d = 16": ("linear_xpo", 20, 4, 3, 8, 4, 2),
        "online_dpo, |X| = 10⁴, A = 10, d = 16": ("online_dpo", 20, 4, 3, 8, 4, 2),
    },
}
# Sequence rows (rbx.rlhf.sequences, log-linear policy, d = 16): label -> (agent, |X|, V, L,
# seeds, steps, chunk) per scale; the enumeration's seconds are a row of their own per size.
SEQUENCE_SWEEPS = {
    "full": {**{f"{agent}, V^L = {V ** L:,}": (agent, 64, V, L, 256, 20, 5)
                for V, L in ((8, 4), (16, 4))
                for agent in ("sequence_dpo", "sequence_xpo", "sequence_vpo",
                              "sequence_algorithm1")},
             **{f"{agent}, tokens, V = L = 32": (agent, 64, 32, 32, 256, 20, 5)
                for agent in ("sequence_dpo", "sequence_algorithm1")}},
    "tiny": {f"{agent}, V^L = 8": (agent, 4, 2, 3, 4, 4, 2)
             for agent in ("sequence_dpo", "sequence_algorithm1")},
}
# hello world (seeds, steps; at full size it is compile_time.HELLO's, in fresh processes), demo
# (seeds, steps), neural round (history t, width m, J, rows), Table 1 (rows at most, m, J,
# seeds, tuning seeds)
SIZES = {"full": dict(demo=(demo.SEEDS, demo.STEPS), neural=(2000, 100, 100, 5000),
                      table1=(None, 100, 100, 10, 10)),
         "tiny": dict(hello=(4, 10), demo=(2, 5), neural=(10, 4, 1, 50),
                      table1=(40, 4, 1, 1, 1))}
# Shares of --budget per section; a row's budget is its section's share over its rows.
SHARES = {"sweeps": 0.35, "sequences": 0.15, "neural": 0.15, "table1": 0.35}   # hello world and demo: unbudgeted
HEAD = ("| figure | setting | seed batch | compile s | run s | value | unit |\n"
        "|---|---|---|---:|---:|---:|---|\n")


def row(figure, setting, batch="", compile_s=math.nan, run_s=math.nan, value=math.nan,
        unit="") -> str:
  """One Markdown line; NaN cells are "—"."""
  num = lambda v, f: "—" if isinstance(v, float) and math.isnan(v) else format(v, f)
  return (f"| {figure} | {setting} | {batch} | {num(compile_s, '.1f')} | {num(run_s, '.2f')} | "
          f"{num(value, ',.4g')} | {unit} |\n")


def sweep_rows(label, spec, seconds) -> str:
  """`batch_rows` of a `SWEEPS` row."""
  agent, X, A, d, seeds, steps, chunk = spec
  key = jax.random.key(0)
  env = (rlhf.random_instance(key, X, A, 0.5, 2.0, 1.0) if d is None
         else rlhf.random_contextual(key, X, A, d, 0.5, 4.0))
  setting = f"{agent}, |X| = {X:,}, A = {A}" + (f", d = {d}" if d else "")
  return batch_rows(label, env, rlhf.get(agent), setting, seeds, steps, chunk, seconds)


def sequence_rows(specs: dict, seconds) -> str:
  """Per (|X|, V, L): the environment's seconds to build (`random_sequences`, a second build,
  its operations compiled; enumerated up to 65,536 answers, token arrays beyond), then
  `batch_rows` of each agent on the log-linear policy."""
  lines, envs = "", {}
  for label, (agent, X, V, L, seeds, steps, chunk) in specs.items():
    if (X, V, L) not in envs:
      enumerated = V ** L <= sequences.MAX_ANSWERS
      envs[X, V, L], seconds_built = sequence_throughput.build(X, V, L, 16, enumerated)
      what = f"enumeration, V^L = {V ** L:,}" if enumerated else f"tokens, V^L = {V}^{L}"
      lines += row(f"sequence {what}", f"|X| = {X}, V = {V}, L = {L}, d = 16",
                   value=seconds_built, unit="s to build")
    lines += batch_rows(label, envs[X, V, L], rlhf.get(agent, policy="loglinear"),
                        f"{agent}, log-linear, |X| = {X}, V = {V}, L = {L}", seeds, steps, chunk,
                        seconds)
  return lines


def batch_rows(label, env, agent, setting, seeds, steps, chunk, seconds) -> str:
  """The default seed batch's row and the best of it, the CPU rule's batch and all of a
  device's seeds (each batch as the driver runs it, at most a device's seeds: one sweep per
  distinct program)."""
  build = lambda: (env, agent)
  setting += f", {seeds:,} seeds × ≤ {steps} steps"
  end = time.perf_counter() + seconds
  timed = lambda budget, **options: timing.sweep(build, {}, seeds, steps, budget, chunk=chunk,
                                                 record="summary", **options)
  default = timed(seconds / 3)
  per_device = math.ceil(seeds / jax.local_device_count())
  tried = {min(default["seed_batch"], per_device): default}
  for batch in sorted({min(rlhf_registry.cpu_seed_batch(env), per_device), per_device}
                      - set(tried)):
    left = end - time.perf_counter()
    if left > 0:
      tried[batch] = timed(left / 2, seed_batch=batch)
  best = max(tried, key=lambda b: tried[b]["seed_steps_per_second"])
  lines = ""
  for what, t in ((f"default ({default['seed_batch_reason']})", default),
                  (f"best of {sorted(tried)}", tried[best])):
    rate = t["seed_steps_per_second"] if t["seed_steps"] else math.nan
    lines += row(label, f"{setting}; {what}", min(t["seed_batch"], per_device), t["compile_seconds"],
                 t["run_seconds"], rate, "seed-steps/s")
  return lines


def hello_row(seeds, steps) -> str:
  """The README's first sweep (Algorithm 1 and XPO on Example 2)."""
  env = rlhf.example2(kappa=500.0, beta=0.1, r_max=7.0)
  t = timing.sweep(lambda agent: (env, rlhf.get(agent, alpha=3.0)),
                   {"agent": ["algorithm1", "xpo"]}, seeds, steps)
  return row("README hello world", f"2 agents × {seeds} seeds × {steps} steps", t["seed_batch"],
             t["compile_seconds"], t["run_seconds"], t["seed_steps_per_second"], "seed-steps/s")


def hello_thread_rows() -> str:
  """The hello world's compile seconds in fresh processes, the driver's compile pool at its
  default and at one thread (`compile_time.hello`): whether compiling programs side by side
  pays on this device's host."""
  return "".join(
      row("README hello world, fresh process", f"64 seeds × 500 steps, compile threads {which}",
          compile_s=compile_time.hello(ROOT, threads), value=math.nan)
      for which, threads in (("default", None), ("1", 1)))


def demo_row(seeds, steps) -> str:
  """`rbx demo`'s wall time (its function, output discarded)."""
  start = time.perf_counter()
  demo.run(seeds=seeds, steps=steps, echo=lambda s: None, progress=False)
  wall = time.perf_counter() - start
  return row("rbx demo", f"{seeds} seeds × {steps} steps", value=wall, unit="s wall")


# The neural products' settings compared (first_layer, matmul_precision); None: the default.
PRODUCTS = [None, ("blocks", "float32"), ("dense", "tf32"), ("dense", "bf16")]


def neural_rows(history, width, train_steps, rows, seconds) -> str:
  """One NeuralUCB round (diagonal Z, full batch) at history t on Covertype's shape: rbx's
  sweep program with 1 seed at the device's default products and the other `PRODUCTS`,
  beside the PyTorch reference loop on the same device."""
  X, y = covertype_like(rows, 54, 7)
  env = neural.classification(X, y)
  setting = f"NeuralUCB diag, t = {history:,}, m = {width}, J = {train_steps}, 1 seed"
  end = time.perf_counter() + seconds
  lines = ""
  for products in PRODUCTS:
    figure = "neural round, rbx" + ("" if products is None else
                                    ", first_layer={}, matmul_precision={}".format(*products))
    if products is not None and time.perf_counter() > end:
      lines += row(figure, "skipped: time budget")
      continue
    kwargs = {} if products is None else dict(zip(("first_layer", "matmul_precision"), products))
    agent = neural.get("neural_ucb", width=width, train_steps=train_steps, eta=1e-3, lam=1e-3,
                       nu=0.1, **kwargs)
    ours = timing.seed_step_seconds(env, agent, history, history + 4, seeds=1, steps=1, repeats=3, devices=1)
    which = "the device's default products" if products is None else "set"
    lines += row(figure, f"{setting}, {which}", 1, value=ours, unit="s a round")
  if importlib.util.find_spec("torch") is None:
    return lines + row("neural round, PyTorch loop", "torch not installed")
  if time.perf_counter() > end:
    return lines + row("neural round, PyTorch loop", "skipped: time budget")
  args = SimpleNamespace(torch_steps=3, width=width, train_steps=train_steps, dim=54, arms=7,
                         data=rows, torch_device="auto")
  theirs = timing.torch_seconds("neural_ucb", args, history)
  return lines + row("neural round, PyTorch loop", f"{setting}, PyTorch on CUDA where it sees "
                     "a GPU, else the CPU", value=theirs, unit="s a round")


def table1_rows(most_rows, width, train_steps, seeds, tune, seconds) -> str:
  """The Table-1 program's estimated cost per data set and algorithm (`table1.round_seconds`,
  one round timed after a warm-up), on synthetic data of each data set's shape."""
  args = table1.parse(["--estimate", "--estimate-rounds", "1", "--estimate-check", "0",
                       "--width", str(width), "--train-steps", str(train_steps),
                       "--seeds", str(seeds), "--tune-seeds", str(tune)])
  tune_seeds, evaluate = table1.seed_split(args)
  end = time.perf_counter() + seconds
  lines = ""
  for ds, (rows, dim, classes) in SHAPES.items():
    rows = rows if most_rows is None else min(rows, most_rows)
    env = neural.classification(*covertype_like(rows, dim, classes, seed=1))
    steps = table1.rounds(args, ds, rows)
    for name in table1.names(args):
      n = len(evaluate if name == "bootstrapped_nn" else tune_seeds + evaluate)
      figure = f"Table 1 estimate, {ds}, {table1.label(name)}"
      if time.perf_counter() > end:
        lines += row(figure, "skipped: time budget")
        continue
      per_round, at = table1.round_seconds(env, name, args, steps, n)
      lines += row(figure, f"{rows:,} × {dim} synthetic, T = {steps:,}, {n} seeds × "
                   f"{1 if name == 'bootstrapped_nn' else len(args.nu)} ν, a round at t = {at:,}",
                   value=per_round * steps / 3600, unit="hours")
  return lines


def main(argv=None) -> str:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--tiny", action="store_true", help="toy sizes, for a CPU")
  p.add_argument("--budget", type=float, default=None,
                 help="seconds for the whole table (default 270; --tiny 60)")
  p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "gpu.md"))
  args = p.parse_args(argv)
  compile_cache.use(False)     # its compile seconds are compiles, not loads from the disk cache
  scale = "tiny" if args.tiny else "full"
  budget = args.budget or (60.0 if args.tiny else 270.0)
  sizes = SIZES[scale]
  begin = time.perf_counter()
  devices = jax.devices()
  text = (f"{len(devices)} × {devices[0].device_kind} ({jax.default_backend()}), jax "
          f"{jax.__version__}, scale {scale}, budget {budget:.0f} s\n\n" + HEAD)
  sweeps = SWEEPS[scale]
  for label, spec in sweeps.items():
    text += sweep_rows(label, spec, budget * SHARES["sweeps"] / len(sweeps))
    print(text.splitlines()[-1], flush=True)
  text += sequence_rows(SEQUENCE_SWEEPS[scale], budget * SHARES["sequences"]
                        / len(SEQUENCE_SWEEPS[scale]))
  # the hello world at full size in fresh processes (compile pool on and off), else in this one
  text += hello_row(*sizes["hello"]) if args.tiny else hello_thread_rows()
  text += demo_row(*sizes["demo"])
  text += neural_rows(*sizes["neural"], budget * SHARES["neural"])
  text += table1_rows(*sizes["table1"], budget * SHARES["table1"])
  text += f"\nWall time {time.perf_counter() - begin:.0f} s.\n"
  print(text)
  Path(args.out).parent.mkdir(parents=True, exist_ok=True)
  Path(args.out).write_text(text)
  return text


if __name__ == "__main__":
  main()
