"""What the test suite's XLA flags (tests/conftest.py) buy and cost: compile and run time of a
compile-heavy and a run-heavy program, and whether 2 and 4 devices still agree bit for bit.

    python -m benchmarks.profiles.xla_flags [--repeats 2]

Each flag set runs in its own Python (XLA reads XLA_FLAGS once), `--repeats` times, with no
compilation cache; the machine may be shared, so compare the rows of one run. The programs:
- compile-heavy: `rlhf.simulate` of Algorithm 1 on Example 2 (κ = 500, T = 200), the exact
  solver inside every step — compile and run seconds;
- run-heavy: `neural.sweep` of BootstrappedNN (its defaults: ten networks trained every round)
  on `neural.synthetic("linear", dim=5, num_arms=4)`, 2 seeds, T = 300 — compile and run s;
- the device-count promise (docs/reproducibility.md): Algorithm 1 on Example 2 (κ = 100),
  α ∈ {0.3, 3}, 16 seeds in batches of 4 on 2 and on 4 host devices, T = 30 — the largest
  |regret difference| (0 is the promise).
The defaults row is the control: XLA's code generation as users get it.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

FLAG_SETS = {
    "defaults": "",
    "level 0": "--xla_backend_optimization_level=0",
    "element emitters": "--xla_cpu_use_fusion_emitters=false",
    "both (the suite)": "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false",
    "level 1 + element emitters": "--xla_backend_optimization_level=1 "
                                  "--xla_cpu_use_fusion_emitters=false",
}

CHILD = """
import json, time
import jax, numpy as np
import rbx
from rbx import core, neural, rlhf
assert jax.local_device_count() == 4
out = {}
run = jax.jit(lambda k: core.rollout(rlhf.example2(500.0, 0.1, 7.0), rlhf.algorithm1(3.0), k, 200))
t = time.perf_counter(); compiled = run.lower(jax.random.key(0)).compile()
out["rollout compile s"] = time.perf_counter() - t
t = time.perf_counter(); jax.block_until_ready(compiled(jax.random.key(0)))
out["rollout run s"] = time.perf_counter() - t
env = neural.synthetic("linear", dim=5, num_arms=4, noise=0.1, seed=0)
res = neural.sweep(lambda: (env, neural.get("bootstrapped_nn")), {}, seeds=2, steps=300, devices=1,
                   progress=False)
out["BootstrappedNN compile s"] = res.timing["compile_seconds"]
out["BootstrappedNN run s"] = res.timing["run_seconds"]
build = lambda alpha: (rlhf.example2(100.0, 0.5, 6.0), rlhf.algorithm1(alpha))
two, four = (rbx.sweep(build, {"alpha": [0.3, 3.0]}, 16, 30, devices=n, seed_batch=4,
                       progress=False).regret for n in (2, 4))
out["2 vs 4 devices max |diff|"] = float(np.abs(two - four).max())
print(json.dumps(out))
"""


def measure(flags: str) -> dict:
  """One child Python's figures under `flags` (plus 4 host devices)."""
  env = {k: v for k, v in os.environ.items()
         if k not in ("JAX_COMPILATION_CACHE_DIR", "JAX_NUM_CPU_DEVICES", "RBX_NUM_CPU_DEVICES")}
  env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count=4".strip()
  env["RBX_COMPILATION_CACHE"] = "off"       # cold compiles (rbx.core.compile_cache)
  out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                       check=True)
  return json.loads(out.stdout.splitlines()[-1])


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--repeats", type=int, default=2)
  args = parser.parse_args(argv)
  rows = {name: [measure(flags) for _ in range(args.repeats)] for name, flags in FLAG_SETS.items()}
  columns = list(next(iter(rows.values()))[0])
  base = rows["defaults"]
  print("| flags | " + " | ".join(columns) + " | rollout compile × defaults |")
  print("|---|" + "---:|" * (len(columns) + 1))
  for name, runs in rows.items():
    cells = [" / ".join(f"{r[c]:.3g}" for r in runs) for c in columns]
    ratio = min(r["rollout compile s"] for r in runs) / min(r["rollout compile s"] for r in base)
    print(f"| {name} | " + " | ".join(cells) + f" | {ratio:.2f} |")
  print(f"(each cell: the {args.repeats} repeats; the ratio compares the best of each)")


if __name__ == "__main__":
  main()
