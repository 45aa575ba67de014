import os
import shutil
import sys
import tempfile

# The tests import the shared helpers beside them (tests/helpers.py).
sys.path.insert(0, os.path.dirname(__file__))

# One persistent XLA compilation cache for the session, its subprocesses and notebook kernels
# (they inherit the environment; set before JAX is imported): a program that several tests
# rebuild (selm and xpo, the same sweep in two tests, a documented command) compiles once.
# A cache directory the user set is kept; ours is removed at the end.
_OWN_CACHE = None
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
  _OWN_CACHE = tempfile.mkdtemp(prefix="rbx-tests-xla-")
  os.environ["JAX_COMPILATION_CACHE_DIR"] = _OWN_CACHE
  os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")


# Most of the suite's time is XLA compiling small programs, and most of that is LLVM optimising
# the CPU code; the tests' programs run for seconds at most, so LLVM's lowest level wins
# (test_agents' greedy/selm and re-solve tests: 421 s -> 147 s side by side on a loaded 2-core
# machine). The HLO passes (fusion, hence the float rounding) are unchanged. Appended to the
# user's XLA_FLAGS unless they set a level; subprocesses and notebook kernels inherit it.
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
  os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                             " --xla_backend_optimization_level=0").strip()


def pytest_sessionfinish(session, exitstatus):
  if _OWN_CACHE is not None:
    shutil.rmtree(_OWN_CACHE, ignore_errors=True)
