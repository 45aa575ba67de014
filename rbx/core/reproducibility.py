"""What a seed's bits depend on: the config, the seed, the device kind and the versions.

A sweep's programs are the same for every seed of a config on one kind of device (the batch
width is fixed by `rbx.core.batching`, every batch full), so seed s's trajectory is the same
bits in a run of any size, any slice, alone or by `simulate` (docs/reproducibility.md). What
can still change them is recorded in a run's metadata.json as "bits" (`conditions`), and
`rbx merge` refuses slices whose "bits" differ:

- the device kind: for a CPU its model and instruction-set lines (XLA:CPU compiles for the
  vector units it finds), for an accelerator `device_kind` ("NVIDIA H100 80GB HBM3");
- whether the seeds ran over one device or several (one device compiles without XLA's SPMD
  partitioner and rounds some operations differently; rbx's default CPU path always uses ≥ 2);
- the seed batch, and whether the user set it;
- the versions of rbx (a digest of its source, `source_digest`), jax and jaxlib, and XLA_FLAGS.
"""
from __future__ import annotations

import functools
import hashlib
import os
import platform
from pathlib import Path

import jax
import jaxlib

CPU_LINES = ("model name", "flags", "CPU implementer", "CPU part", "Features")


@functools.cache
def source_digest() -> str:
  """The first 16 hex digits of a SHA-256 over rbx's own .py files (path and bytes, sorted):
  the rbx revision that ran, also where no git checkout is at hand (an installed wheel)."""
  root = Path(__file__).resolve().parents[1]
  h = hashlib.sha256()
  for path in sorted(root.rglob("*.py")):
    h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
  return h.hexdigest()[:16]


@functools.cache
def cpu_digest() -> str:
  """A digest of the host CPU's model and instruction-set lines of /proc/cpuinfo (x86's model
  name and flags, Arm's part and Features), or `platform.processor()` where there is none."""
  try:
    info = Path("/proc/cpuinfo").read_text().splitlines()
    lines = [next(l for l in info if l.startswith(k)) for k in CPU_LINES
             if any(l.startswith(k) for l in info)]
  except OSError:
    lines = [platform.processor()]
  return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def device_kind(device=None) -> str:
  """The kind of `device` (default JAX's first): "cpu <digest>" (`cpu_digest`) or the
  platform and `device_kind` of an accelerator ("gpu NVIDIA H100 80GB HBM3")."""
  device = device or jax.local_devices()[0]
  if device.platform == "cpu":
    return f"cpu {cpu_digest()}"
  return f"{device.platform} {device.device_kind}"


def conditions(seed_batch: int, seed_batch_reason: str, devices_used: int, device=None) -> dict:
  """A run's "bits": everything besides the config and the seed that its trajectories depend on
  (see the module docstring); equal for two runs ⇒ the same seed, the same bits."""
  return {"device_kind": device_kind(device),
          "sharded": devices_used > 1,
          "seed_batch": int(seed_batch),
          "seed_batch_rule": "set by the user" if seed_batch_reason == "set by the user"
                             else "default",
          "rbx": source_digest(), "jax": jax.__version__, "jaxlib": jaxlib.__version__,
          "xla_flags": " ".join(sorted(os.environ.get("XLA_FLAGS", "").split()))}
