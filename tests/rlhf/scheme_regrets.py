"""Every registered RLHF agent's regret on one small instance, recorded to guard refactors of
the scheme table (`rbx.rlhf.schemes`) bit for bit (tests/rlhf/test_schemes.py).

    python tests/rlhf/scheme_regrets.py     # rewrites scheme_regrets.npz

The recording runs under the test suite's XLA flags (tests/xla_env.py, as tests/conftest.py
sets them) on one CPU device, and stores them with the jax version and the host CPU (XLA:CPU
compiles for its instruction set): the test compares bit for bit only under the same flags,
platform, version and CPU, and elsewhere to 1% (the linear agents' iterative solves amplify
float32 rounding: 0.2% on linear_greedy between two x86-64 hosts).
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import xla_env  # noqa: E402

RECORDING = Path(__file__).with_name("scheme_regrets.npz")
SEEDS, STEPS = 2, 8


def regrets() -> dict:
  """{agent name: regret (seeds, steps)} of every registered rlhf agent with its defaults on
  a 3-prompt, 4-answer contextual instance (d = 3) — the sequence agents on a 3-prompt
  sequence instance of 4 answers (V = 2, L = 2, d = 3) — one CPU device, seed batch 2."""
  import jax
  from rbx import rlhf
  from rbx.rlhf import sequences
  env = rlhf.random_contextual(jax.random.key(3), 3, 4, 3, beta=0.5, r_max=2.0)
  tokens = sequences.random_sequences(jax.random.key(3), 3, 2, 2, 3, beta=0.5, r_max=2.0)
  out = {}
  for name in rlhf.FAMILY.agents:
    on = tokens if name.startswith("sequence/") else env
    res = rlhf.sweep(lambda: (on, rlhf.get(name)), {}, seeds=SEEDS, steps=STEPS, devices=1,
                     seed_batch=SEEDS, progress=False)
    out[name] = res.regret.reshape(SEEDS, STEPS)
  return out


def conditions() -> dict:
  """What a bit-for-bit comparison needs to be the same."""
  import jax
  from rbx.core.reproducibility import cpu_digest
  return {"jax": jax.__version__, "platform": jax.default_backend(), "cpu": cpu_digest(),
          "xla_flags": " ".join(sorted(os.environ.get("XLA_FLAGS", "").split()))}


if __name__ == "__main__":
  import numpy as np
  xla_env.add_flags(xla_env.CPU_CODE_GENERATION)
  os.environ["RBX_NUM_CPU_DEVICES"] = "1"
  np.savez(RECORDING, **regrets(), **{f"_{k}": v for k, v in conditions().items()})
  print(f"wrote {RECORDING}")
