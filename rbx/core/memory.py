"""The memory a sweep needs, estimated from its sizes before anything is allocated, against
what the machine has free.

With C static combinations, G numeric grid points, S seeds, R recorded steps, m named
per-step metrics recorded beside the regret (`rbx.core.protocol.add_metrics`, e.g. the RLHF
environments' weak and strong dueling regrets: m = 2), B seeds per work unit (`seed_block`,
at most this process's seeds), c steps per chunk, s bytes of carried state per seed and grid
point (the largest combination's), n devices and a seed batch of b:

  host   = (1+m)·C·G·S·R·w · k    the records of the regret and of each metric (w = 4 bytes
                                 for record "steps", else 8), k = 2 when checkpoints are
                                 written (one copy while a file is written)
         + (1+m)·C·G·S·8 + S·8   their sums so far, the seeds
         + G·B·(s + 12·(1+m)·c)  a unit's state copied out for a checkpoint; a chunk's regret
                                 and metrics and their float64 running sums
  device = G·⌈B/n⌉·(s + 4·(1+m)·c) + G·b·s   per device: a unit's state and a chunk's regret
                                             and metrics, and at least the state of the seed
                                             batch being stepped

Each metric is kept as the regret is (`rbx.core.record`), so with m = 2 the records are three
times the regret's alone. The host has its MemAvailable of /proc/meminfo (else
`os.sysconf`); an accelerator the `bytes_limit` less `bytes_in_use` of its `memory_stats()`.
On a CPU the devices' arrays live in host memory, so both parts count against the host's.
Arrays an agent makes inside a step are not counted: the estimate is a floor, and `check`
refuses only a sweep above it.
"""
from __future__ import annotations

import math
import os
from typing import NamedTuple


class Estimate(NamedTuple):
  """Bytes a sweep needs: `host` and `device` (per device) in total, and each part's bytes
  with what it is."""
  host: int
  device: int
  host_parts: list[tuple[str, int]]
  device_parts: list[tuple[str, int]]


def estimate(*, combos: int, points: int, seeds: int, recorded: int, record: str, block: int,
             chunk: int, state: int, devices: int, seed_batch: int,
             checkpoint: bool, metrics: int = 0) -> Estimate:
  """The bytes of a sweep of these sizes (see the module docstring); `record` is "steps",
  "log" or "summary", `recorded` the number of steps it keeps, `metrics` the number of named
  per-step metrics recorded beside the regret."""
  width = 4 if record == "steps" else 8
  copies = 2 if checkpoint else 1
  C, G, S, kept = combos, points, seeds, 1 + metrics
  what = "the regret" + (f" and {metrics} metric(s)" if metrics else "")
  host_parts = [
      (f"the records of {what} ({kept} x {C * G} grid point(s) x {S:,} seeds x {recorded:,} "
       f"step(s) x {width} bytes"
       + (", twice while a checkpoint is written)" if copies == 2 else ")"),
       kept * C * G * S * recorded * width * copies),
      (f"the sums so far and the seeds (({kept} x {C * G} + 1) x {S:,} x 8 bytes)",
       (kept * C * G + 1) * S * 8),
      (f"a chunk on the host ({G} x {block:,} seeds x ({state} bytes of state + 12 x {kept} x "
       f"{chunk:,} steps))", G * block * (state + 12 * kept * chunk)),
  ]
  per_device = math.ceil(block / devices)
  device_parts = [
      (f"a unit's state and a chunk's records ({G} x {per_device:,} seeds x ({state} + 4 x "
       f"{kept} x {chunk:,}) bytes)", G * per_device * (state + 4 * kept * chunk)),
      (f"a seed batch's state ({G} x {min(seed_batch, per_device)} x {state} bytes)",
       G * min(seed_batch, per_device) * state),
  ]
  return Estimate(sum(b for _, b in host_parts), sum(b for _, b in device_parts),
                  host_parts, device_parts)


def host_available() -> tuple[int | None, str]:
  """(free host bytes or None, where the figure comes from)."""
  try:
    with open("/proc/meminfo") as f:
      for line in f:
        if line.startswith("MemAvailable:"):
          return int(line.split()[1]) * 1024, "MemAvailable in /proc/meminfo"
  except OSError:
    pass
  try:
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "os.sysconf"
  except (ValueError, OSError, AttributeError):
    return None, "unknown"


def device_available(devices) -> tuple[int | None, str]:
  """(the least free bytes over `devices` or None when they share host memory (a CPU) or do
  not say, the device)."""
  free = []
  for d in devices:
    stats = d.memory_stats()
    if stats and "bytes_limit" in stats:
      free.append((stats["bytes_limit"] - stats.get("bytes_in_use", 0), str(d)))
  return min(free) if free else (None, "")


def device_total(devices) -> int | None:
  """The least memory (`memory_stats()` bytes_limit) over `devices`, or None when they share
  host memory (a CPU) or do not say: fixed for a device kind, unlike the free memory."""
  totals = [s["bytes_limit"] for s in (d.memory_stats() for d in devices)
            if s and "bytes_limit" in s]
  return min(totals) if totals else None


def check(need: Estimate, devices) -> None:
  """Raises ValueError stating the estimate, the limit and the fix when `need` does not fit
  on the host or on each of `devices` (the JAX devices the sweep runs on)."""
  device_free, device = device_available(devices)
  host_free, source = host_available()
  on_host = [] if device_free is not None else [
      (f"{what} x {len(devices)} CPU device(s)", b * len(devices))
      for what, b in need.device_parts]
  host_parts = need.host_parts + on_host
  host_need = sum(b for _, b in host_parts)
  if host_free is not None and host_need > host_free:
    raise ValueError(
        f"this sweep needs about {show(host_need)} of host memory but {show(host_free)} is "
        f"available ({source}): {_parts(host_parts)}. Use fewer seeds (or several sweeps over "
        "parts of them), record = \"log\" or \"summary\" (R(t) at log_points steps, or R(T) "
        "only), or a smaller seed_block")
  if device_free is not None and need.device > device_free:
    raise ValueError(
        f"this sweep needs about {show(need.device)} per device but {device} has "
        f"{show(device_free)} free (memory_stats bytes_limit - bytes_in_use): "
        f"{_parts(need.device_parts)}. Set a smaller seed_block (seeds whose state is held at "
        "once), a smaller chunk, seed_batch or fewer grid points")


def show(n: int, exact: bool = True) -> str:
  """Bytes as "1.5 GiB (1,610,612,736 bytes)" (without the parenthesis unless `exact`)."""
  for unit, size in (("TiB", 2 ** 40), ("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
    if n >= size:
      return f"{n / size:,.1f} {unit}" + (f" ({n:,} bytes)" if exact else "")
  return f"{n:,} bytes"


def _parts(parts: list[tuple[str, int]]) -> str:
  """The parts of at least 1% of the total, largest first."""
  total = sum(b for _, b in parts)
  big = sorted((p for p in parts if p[1] >= total / 100), key=lambda p: -p[1])
  return ", ".join(f"{what} {show(b, exact=False)}" for what, b in big)
