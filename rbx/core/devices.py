"""Sharding the seed axis over local devices, and splitting seeds over hosts.

CPU devices: `use_every_core`, run when `rbx` is imported, gives JAX one CPU device per core
(or `RBX_NUM_CPU_DEVICES` = N devices; 1 turns it off), so that sweeps use every core by
default; a count the user set for JAX is kept, and so is a backend already started. A sweep
whose program calls CPU LAPACK kernels runs on one device (`rbx.core.driver.NeedsOneDevice`).

One host: `seed_mesh(n)` is a 1-D `jax.sharding.Mesh` named "seed" over n local devices;
the driver runs each chunk under `jax.shard_map` with the seeds (and every leaf of the
carried state, shape (G, S, ...)) split as `P(None, "seed")`, so each device steps its own
seeds and no data moves between devices. With one device the driver runs unsharded: XLA
compiles that program without its SPMD partitioner and rounds some operations differently,
while any two or more devices agree bit for bit — hence at least 2 CPU devices by default
(docs/reproducibility.md).

Many hosts: after `initialize` (`jax.distributed.initialize`), process p runs the seeds
`process_slice(seeds)` on its local devices only, and `gather` reassembles every process's
records with `process_allgather` (over Gloo on CPU, NCCL/ICI elsewhere).
"""
from __future__ import annotations

import math
import os

import jax
import numpy as np
from jax.sharding import AxisType, Mesh


def use_every_core() -> int | None:
  """Sets `jax_num_cpu_devices` from `RBX_NUM_CPU_DEVICES` ("all", the default: the cores this
  process may run on; or a count, 1 for JAX's single CPU device) unless the user chose a count
  for JAX itself (JAX_NUM_CPU_DEVICES, `jax_num_cpu_devices`, XLA_FLAGS'
  --xla_force_host_platform_device_count) or JAX's backend has started (its devices stay).
  jaxlib 0.10's CPU LAPACK kernels (LU and Cholesky factorisations above about 100 × 100, e.g.
  `jnp.linalg.solve` in a user's agent) deadlock when two devices call them at once; the sweep
  finds such calls in its program before running it and then uses one device (with a warning),
  so the default is safe. Returns the count set, or None.

  Raises:
    ValueError: `RBX_NUM_CPU_DEVICES` is neither "all" nor a positive integer.
  """
  wanted = os.environ.get("RBX_NUM_CPU_DEVICES", "all")
  if (jax.config.jax_num_cpu_devices >= 0
      or "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", "")):
    return None
  if wanted.strip().lower() == "all":
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    n = max(2, cores or 1)          # ≥ 2: every default CPU run is split over devices alike
                                    # (one device compiles otherwise; docs/reproducibility.md)
  elif wanted.strip().isdigit() and int(wanted) >= 1:
    n = int(wanted)
  else:
    raise ValueError(f"RBX_NUM_CPU_DEVICES must be \"all\" or a positive integer, got {wanted!r}")
  try:
    jax.config.update("jax_num_cpu_devices", n)
  except RuntimeError:                      # the backend has started: keep its devices
    return None
  return n


def seed_mesh(num_devices: int | None = None) -> Mesh | None:
  """A mesh ("seed",) over the first `num_devices` local devices (default all of them, however
  few the seeds: a seed's program must not depend on their number); None for one."""
  local = jax.local_devices()
  n = len(local) if num_devices is None else num_devices
  if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= len(local):
    raise ValueError(f"devices must be an integer in [1, {len(local)}] (the local devices), got {n!r}")
  if n == 1:
    return None
  return jax.make_mesh((n,), ("seed",), axis_types=(AxisType.Explicit,), devices=local[:n])


def initialize(coordinator: str | None = None, num_processes: int | None = None,
               process_id: int | None = None) -> None:
  """`jax.distributed.initialize`; with no arguments JAX reads a cluster launcher's
  environment (SLURM, Open MPI, Kubernetes/TPU), otherwise all three must be given."""
  jax.distributed.initialize(coordinator_address=coordinator, num_processes=num_processes,
                             process_id=process_id)


def process_slice(seeds: np.ndarray) -> np.ndarray:
  """This process's contiguous share of `seeds`: ⌈S / P⌉ seeds (the last may have fewer)."""
  per = math.ceil(seeds.size / jax.process_count())
  p = jax.process_index()
  return seeds[p * per:(p + 1) * per]


def gather(local: np.ndarray, num_seeds: int, axis: int) -> np.ndarray:
  """Every process's `local` records (seed axis `axis`, from `process_slice`) joined in seed order."""
  if jax.process_count() == 1:
    return local
  from jax.experimental import multihost_utils
  per = math.ceil(num_seeds / jax.process_count())
  pad = [(0, 0)] * local.ndim
  pad[axis] = (0, per - local.shape[axis])
  stacked = multihost_utils.process_allgather(np.pad(local, pad, constant_values=np.nan))
  joined = np.concatenate(list(stacked), axis=axis)
  return np.take(joined, np.arange(num_seeds), axis=axis)
