"""The command line's compilation cache (`rbx.cli.cache_directory`, `compile_cache`) and the
driver's compile pool setting."""
import os
import subprocess
import sys

import pytest
from helpers import subprocess_env

from rbx import cli
from rbx.core import driver


@pytest.mark.parametrize("enabled, environ, jax_dir, want", [
    (True, {}, None, os.path.join(os.path.expanduser("~"), ".cache", "rbx", "jax")),
    (True, {"XDG_CACHE_HOME": "/x"}, None, "/x/rbx/jax"),
    (True, {"RBX_COMPILATION_CACHE": "/y/c"}, None, "/y/c"),
    (True, {"RBX_COMPILATION_CACHE": "off"}, None, None),
    (True, {"RBX_COMPILATION_CACHE": "0"}, None, None),
    (False, {}, None, None),                                   # --no-compile-cache
    (False, {"RBX_COMPILATION_CACHE": "/y/c"}, "/mine", "/mine"),   # the user's JAX setting
])
def test_the_cache_directory(enabled, environ, jax_dir, want):
  assert cli.cache_directory(enabled, environ, jax_dir) == want


def test_compile_threads_come_from_the_environment_else_the_device(monkeypatch):
  monkeypatch.delenv("RBX_COMPILE_THREADS", raising=False)
  assert driver._compile_workers("cpu") == 1
  assert 1 <= driver._compile_workers("gpu") <= 8
  monkeypatch.setenv("RBX_COMPILE_THREADS", "3")
  assert driver._compile_workers("cpu") == driver._compile_workers("gpu") == 3
  monkeypatch.setenv("RBX_COMPILE_THREADS", "none")
  with pytest.raises(ValueError, match="RBX_COMPILE_THREADS"):
    driver._compile_workers("cpu")


@pytest.mark.slow
def test_rbx_demo_fills_the_cache_says_so_once_and_off_turns_it_off(tmp_path):
  env = {k: v for k, v in subprocess_env().items() if k != "JAX_COMPILATION_CACHE_DIR"}
  demo = [sys.executable, "-m", "rbx.cli", "demo", "--seeds", "2", "--steps", "3",
          "--no-progress"]
  cache = tmp_path / "cache"
  runs = [subprocess.run(demo, env={**env, "RBX_COMPILATION_CACHE": str(cache)},
                         capture_output=True, text=True, check=True) for _ in range(2)]
  said = f"compiled programs are cached in {cache}"
  assert said in runs[0].stderr and said not in runs[1].stderr
  assert any(cache.iterdir())                      # the first run's programs
  rows = [[line for line in r.stdout.splitlines() if line.startswith(("example1 ", "example2 "))]
          for r in runs]
  assert len(rows[0]) == 6 and rows[0] == rows[1]  # the loaded programs compute the same
  off = tmp_path / "off"
  subprocess.run(demo + ["--no-compile-cache"], env={**env, "RBX_COMPILATION_CACHE": str(off)},
                 capture_output=True, text=True, check=True)
  assert not off.exists()
