import os
import shutil
import sys
import tempfile

# The tests import the shared helpers beside them (tests/helpers.py, tests/xla_env.py).
sys.path.insert(0, os.path.dirname(__file__))
import xla_env  # noqa: E402  (jax-free: nothing here imports jax before the environment is set)

# One persistent XLA compilation cache for the session, its pytest-xdist workers, subprocesses
# and notebook kernels (they inherit the environment of the process that loads this file first;
# set before JAX is imported): a program that several tests rebuild (selm and xpo, the same
# sweep in two tests, a documented command) compiles once, on whichever worker comes first.
# A cache directory the user set is kept; ours is removed at the end.
_OWN_CACHE = None
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
  _OWN_CACHE = tempfile.mkdtemp(prefix="rbx-tests-xla-")
  os.environ["JAX_COMPILATION_CACHE_DIR"] = _OWN_CACHE
  os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")


# Most of the suite's time is XLA compiling small programs; the tests' programs run for seconds
# at most, so the cheapest code generation wins: LLVM's lowest level and XLA's CPU element
# emitters instead of its newer fusion emitters. Together they compile an Algorithm 1 rollout
# in 0.58× the defaults' time and run a BootstrappedNN sweep 5× slower (benchmarks/profiles/xla_flags.py;
# the whole suite 1,865 s with level 0 alone, 1,338 s with both, consecutive loaded runs). They
# change the generated code, not which ops are fused: results agree to float32 rounding, but 2
# and 4 devices no longer bit for bit (test_sharding's check drops level 0 in its child).
# Appended to the user's XLA_FLAGS unless they set either, only where the tests run on the CPU
# and only those the installed jaxlib knows (XLA aborts on a flag it does not: xla_env.py);
# subprocesses (helpers.subprocess_env) and notebook kernels inherit them.
if xla_env.runs_on_cpu():
  xla_env.add_flags(xla_env.CPU_CODE_GENERATION)

# JAX gives every op of a program its whole Python traceback as its location, and XLA carries
# that metadata through the compile; one frame an op (the innermost user frame) compiles less
# (CHANGELOG: what it saved, measured). No test reads a program's locations; kept where the
# user set it; subprocesses and notebook kernels inherit it.
os.environ.setdefault("JAX_INCLUDE_FULL_TRACEBACKS_IN_LOCATIONS", "0")

# On an accelerator the pytest-xdist workers share it: each takes memory as it needs it instead
# of JAX's default 75% of the device at start.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

def pytest_sessionfinish(session, exitstatus):
  if _OWN_CACHE is not None:
    shutil.rmtree(_OWN_CACHE, ignore_errors=True)
