"""Seeds are seeds: seed s's trajectory is the same bits in a run of many seeds, in two slices,
alone, and by `simulate`, for one agent of every policy class of both families
(benchmarks/reproducibility/seeds.py), in a child process on 2 devices under the suite's XLA
flags (every run there is on the same 2 devices; what the suite's level 0 breaks is equality
between device counts, which tests/core/test_sharding.py checks at level 1)."""
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import subprocess_env

ROOT = Path(__file__).parents[2]


def _seeds_script(*args):
  out = subprocess.run(
      [sys.executable, "-m", "benchmarks.reproducibility.seeds", "--steps", "6", "--seed-batch",
       "4", *args], cwd=ROOT, capture_output=True, text=True, timeout=1200,
      env=subprocess_env())
  assert out.returncode == 0, out.stdout + out.stderr[-3000:]
  assert "2 cpu device(s)" in out.stdout and "DIFFERS" not in out.stdout, out.stdout
  return out.stdout


@pytest.mark.slow
def test_a_seeds_bits_do_not_depend_on_how_the_sweep_is_cut():
  # 16 seeds in batches of 4 on 2 devices (2 batches a device); slices of 5 and 11 seeds (the
  # padding fills 1 and 2 batches; seed 5 moves from the 6th place to the 1st), each looked-at
  # seed alone (1 batch, padded) and by simulate; the tabular class on a contextual instance,
  # whose rounds draw their prompt too (Example 2's one prompt draws none)
  classes = ["xpo@contextual", "linear/algorithm1", "practical/xpo", "sequence/algorithm1",
             "rbmle_ga"]
  assert "0 of 5 agents differ" in _seeds_script("--seeds", "16", "--cut", "5", "--agents",
                                                 *classes)


def test_the_default_seed_batch_does_not_depend_on_the_number_of_seeds():
  import rbx
  from rbx import rlhf
  build = lambda: (rlhf.example2(100, 0.5, 6.0), rlhf.get("algorithm1"))
  batches = {rbx.sweep(build, {}, seeds, 2, progress=False).timing["seed_batch"]
             for seeds in (1, 5, 130)}
  assert batches == {16}
