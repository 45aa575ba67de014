"""`import rbx` gives JAX one CPU device per core with RBX_NUM_CPU_DEVICES=all unless the user
chose a count or JAX has started; default sweeps shard over them (at most one device per seed) with the one-device
results."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
OURS = ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES", "RBX_NUM_CPU_DEVICES")


def _python(script, **env):
  clean = {k: v for k, v in os.environ.items() if k not in OURS}
  return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=ROOT,
                        env={**clean, **env}, capture_output=True, text=True, timeout=600)


def _count(before="", **env):
  out = _python(f"import jax\n{before}\nimport rbx\nprint(jax.local_device_count())", **env)
  assert out.returncode == 0, out.stderr[-2000:]
  return int(out.stdout.split()[-1])


def test_one_cpu_device_per_core_when_asked():
  # not by default: see rbx.core.devices.use_every_core (a LAPACK deadlock with several)
  assert _count() == 1
  assert _count(RBX_NUM_CPU_DEVICES="all") == len(os.sched_getaffinity(0))
  assert _count(RBX_NUM_CPU_DEVICES="3") == 3


def test_a_count_the_user_set_for_jax_is_kept():
  assert _count(JAX_NUM_CPU_DEVICES="1", RBX_NUM_CPU_DEVICES="3") == 1
  assert _count(XLA_FLAGS="--xla_force_host_platform_device_count=4") == 4
  assert _count("jax.config.update('jax_num_cpu_devices', 2)", RBX_NUM_CPU_DEVICES="3") == 2


def test_a_backend_already_started_keeps_its_devices():
  assert _count("jax.numpy.ones(1).block_until_ready()", RBX_NUM_CPU_DEVICES="3") == 1


def test_a_bad_override_is_named():
  out = _python("import rbx", RBX_NUM_CPU_DEVICES="many")
  assert out.returncode != 0 and "RBX_NUM_CPU_DEVICES must be \"all\" or a positive integer" in out.stderr


@pytest.mark.slow
def test_default_sweeps_shard_over_every_device_with_one_device_results():
  # 5 seeds over 3 devices: padded to 6; 1 seed: one device, no padding
  out = _python("""
      import jax
      import numpy as np
      import rbx
      from rbx.core import devices
      from helpers import example1_sweep
      from rbx import config
      assert jax.local_device_count() == 3
      assert devices.seed_mesh(None, 5).shape == {"seed": 3} and devices.seed_mesh(None, 1) is None
      c = config.loads(example1_sweep(5, 6, 4))
      run = lambda seeds, **kw: rbx.sweep(c.build, c.grid, seeds, c.steps, **{**c.sweep_options(), **kw})
      alone = run(5, devices=1).regret
      assert np.array_equal(run(5, devices=None).regret, alone)
      assert np.array_equal(run(1, devices=None).regret, alone[:, :1])
      print("identical")
  """, RBX_NUM_CPU_DEVICES="3", PYTHONPATH=str(ROOT / "tests"))
  assert out.returncode == 0 and "identical" in out.stdout, out.stderr[-3000:]
