"""XLA flags for the test processes, decided without importing jax (conftest sets them before
JAX initialises; tests/helpers.py's `subprocess_env` passes them on to child processes).

XLA aborts the process on an XLA_FLAGS entry it does not know ("Unknown flag in XLA_FLAGS"),
and flags come and go between jaxlib releases, so a flag is added only where the installed
jaxlib knows it: its name appears as a C string in one of jaxlib's shared libraries, where
XLA's flag table holds the names it parses (`known_flag`).
"""
import importlib.util
import mmap
import os
from pathlib import Path

# The cheapest code generation for the suite's small CPU programs (see conftest.py).
CPU_CODE_GENERATION = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false")


def level_1(flags: str) -> str:
  """`flags` (an XLA_FLAGS value) with LLVM's level 1 in place of the suite's level 0, where it
  is set: with the element emitters, level 1 keeps 2 and 4 devices bit for bit equal (level 0
  does not), runs as fast as XLA's defaults and compiles in 0.6x their time
  (benchmarks/profiles/xla_flags.py) — for children that check bits across device counts,
  and for run-bound ones."""
  level = "--xla_backend_optimization_level"
  return " ".join(f"{level}=1" if f == f"{level}=0" else f for f in flags.split())


def jaxlib_libraries() -> list[Path]:
  """The shared libraries (.so) of the installed jaxlib, largest first (XLA's is the largest);
  [] when jaxlib is not installed."""
  spec = importlib.util.find_spec("jaxlib")
  if spec is None or not spec.submodule_search_locations:
    return []
  found = [p for d in spec.submodule_search_locations for p in Path(d).rglob("*.so*")
           if p.is_file()]
  return sorted(found, key=lambda p: -p.stat().st_size)


def known_flag(flag: str, libraries: list[Path] | None = None) -> bool:
  """Whether `flag` ("--xla_name=value", "--xla_name" or "xla_name") is a NUL-terminated
  string in `libraries` (default `jaxlib_libraries()`), as flag names are in XLA's table. A
  name found only inside a longer string (a message, a protobuf descriptor) does not count,
  so an unknown flag is not added by mistake; one missed costs speed only."""
  name = flag.lstrip("-").split("=")[0].encode()
  needle = b"\0" + name + b"\0"
  for path in jaxlib_libraries() if libraries is None else libraries:
    with open(path, "rb") as f:
      if os.fstat(f.fileno()).st_size == 0:
        continue
      with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        if m.find(needle) >= 0:
          return True
  return False


def runs_on_cpu(environ=os.environ) -> bool:
  """False when JAX_PLATFORMS puts another platform first (the CPU flags would not matter);
  True otherwise, including when it is unset (detecting an accelerator needs jax)."""
  platforms = [p.strip() for p in environ.get("JAX_PLATFORMS", "").split(",") if p.strip()]
  return not platforms or platforms[0] == "cpu"


def add_flags(flags, environ=os.environ) -> list[str]:
  """Appends to `environ["XLA_FLAGS"]` each of `flags` that the user did not set (by name)
  and the installed jaxlib knows (`known_flag`); returns those added."""
  added = []
  for flag in flags:
    name = flag.split("=")[0]
    if name not in environ.get("XLA_FLAGS", "") and known_flag(flag):
      environ["XLA_FLAGS"] = (environ.get("XLA_FLAGS", "") + " " + flag).strip()
      added.append(flag)
  return added
