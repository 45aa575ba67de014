"""`import rbx` gives JAX one CPU device per core (RBX_NUM_CPU_DEVICES: a count, 1 = off) unless
the user chose a count or JAX has started; default sweeps shard over them (at most one device
per seed) with the one-device results, and a program that calls CPU LAPACK runs on one."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import CPU_ONLY, subprocess_env

pytestmark = CPU_ONLY
ROOT = Path(__file__).parents[2]


def _python(script, **env):
  return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=ROOT,
                        env=subprocess_env(**env), capture_output=True, text=True, timeout=600)


def _count(before="", **env):
  out = _python(f"import jax\n{before}\nimport rbx\nprint(jax.local_device_count())", **env)
  assert out.returncode == 0, out.stderr[-2000:]
  return int(out.stdout.split()[-1])


def test_one_cpu_device_per_core_by_default():
  assert _count() == len(os.sched_getaffinity(0))
  assert _count(RBX_NUM_CPU_DEVICES="all") == len(os.sched_getaffinity(0))
  assert _count(RBX_NUM_CPU_DEVICES="3") == 3
  assert _count(RBX_NUM_CPU_DEVICES="1") == 1


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
def test_default_sweeps_shard_over_every_device_with_two_devices_results():
  # 5 seeds over 3 devices, padded to a batch on each, as over 2; 1 seed: on all 3 devices too
  out = _python("""
      import jax
      import numpy as np
      import rbx
      from rbx.core import devices
      from helpers import example1_sweep
      from rbx.runs import config
      assert jax.local_device_count() == 3
      assert devices.seed_mesh().shape == {"seed": 3} and devices.seed_mesh(1) is None
      c = config.loads(example1_sweep(5, 4, 4))  # one chunk: a program per seed count
      run = lambda seeds, **kw: rbx.sweep(c.build, c.grid, seeds, c.steps, **{**c.sweep_options(), **kw})
      alone = run(5, devices=2).regret
      assert np.array_equal(run(5, devices=None).regret, alone)
      assert np.array_equal(run(1, devices=None).regret, alone[:, :1])
      print("identical")
  """, RBX_NUM_CPU_DEVICES="3", PYTHONPATH=str(ROOT / "tests"))
  assert out.returncode == 0 and "identical" in out.stdout, out.stderr[-3000:]


def test_a_program_that_calls_cpu_lapack_runs_on_one_device():
  # jaxlib 0.10's CPU LAPACK kernels deadlock when several CPU devices call them at once
  # (rbx.core.driver.NeedsOneDevice): the sweep finds the calls in the lowered program and
  # runs on one device, with a warning and the one-device results. (Small matrices here, which
  # do not deadlock, so a regression fails the assertions instead of hanging.)
  out = _python("""
      import warnings
      import jax, jax.numpy as jnp, numpy as np
      import rbx
      from rbx import core, neural
      assert jax.local_device_count() == 2
      def ridge_greedy():
        def act(key, state, obs, spec):
          theta = jnp.linalg.solve(state[0][obs.block], state[1][obs.block][..., None])[..., 0]
          return state, jnp.argmax(jnp.sum(theta * obs.x, axis=1))
        def update(key, state, obs, arm, reward, spec):
          x, b = obs.x[arm], obs.block[arm]
          return state[0].at[b].add(jnp.outer(x, x)), state[1].at[b].add(reward * x)
        init = lambda key, spec, horizon: (jnp.broadcast_to(jnp.eye(spec.dim), (spec.num_blocks, spec.dim, spec.dim)),
                                           jnp.zeros((spec.num_blocks, spec.dim)))
        return core.Agent("ridge_greedy", init, act, update)
      env = neural.synthetic("linear", dim=4, num_arms=2)
      run = lambda devices: rbx.sweep(lambda: (env, ridge_greedy()), {}, seeds=4, steps=5,
                                      devices=devices, progress=False).regret
      with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        many = run(None)
      assert any("lapack_" in str(w.message) and "one CPU device" in str(w.message) for w in caught)
      assert np.array_equal(many, run(1))
      print("one device")
  """, RBX_NUM_CPU_DEVICES="2")
  assert out.returncode == 0 and "one device" in out.stdout, out.stderr[-3000:]
