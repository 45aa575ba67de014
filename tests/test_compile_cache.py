"""The persistent compilation cache of the command line and of `rbx.sweep`
(`rbx.core.compile_cache`: the directory, the off switch, a second process loading what the
first compiled) and the driver's compile pool setting."""
import json
import os
import subprocess
import sys

import jax
import pytest
from helpers import subprocess_env

import rbx
from rbx import rlhf
from rbx.core import compile_cache, driver


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
  assert compile_cache.directory(enabled, environ, jax_dir) == want


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


def _tiny_sweep():
  """Two seeds of Algorithm 1 on Example 1 for 3 steps, with a small solver."""
  env = rlhf.example1(p=0.0, beta=0.5, r_max=4.0)
  solver = rlhf.SolverConfig(starts=2, iterations=2, line_search=2, keep=2)
  return rbx.sweep(lambda: (env, rlhf.get("algorithm1", alpha=3.0, solver=solver)), {}, 2, 3,
                   progress=False)


@pytest.fixture
def no_jax_cache(monkeypatch):
  """This process as a user's who gave JAX no cache directory (the suite gives it one,
  tests/conftest.py), put back afterwards."""
  given = jax.config.jax_compilation_cache_dir
  monkeypatch.setattr(compile_cache, "_enabled", True)
  monkeypatch.setattr(compile_cache, "_ours", None)
  jax.config.update("jax_compilation_cache_dir", None)
  yield
  from jax.experimental.compilation_cache import compilation_cache
  compilation_cache.reset_cache()
  jax.config.update("jax_compilation_cache_dir", given)


def test_a_sweep_turns_the_cache_on_once_and_the_off_switch_keeps_it_off(no_jax_cache, tmp_path,
                                                                         monkeypatch, capsys):
  cache = tmp_path / "cache"
  monkeypatch.setenv("RBX_COMPILATION_CACHE", str(cache))
  _tiny_sweep()
  assert cache.is_dir() and jax.config.jax_compilation_cache_dir == str(cache)
  assert capsys.readouterr().err.count(f"compiled programs are cached in {cache}") == 1
  assert compile_cache.use() == str(cache)   # what the next sweep calls first
  assert "compiled programs are cached" not in capsys.readouterr().err     # said once
  compile_cache.use(False)                   # --no-compile-cache: off for the later sweeps
  _tiny_sweep()
  assert jax.config.jax_compilation_cache_dir is None
  compile_cache.use(True)
  monkeypatch.setenv("RBX_COMPILATION_CACHE", "off")
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
  assert compile_cache.use() is None
  assert jax.config.jax_compilation_cache_dir is None and not (tmp_path / "xdg").exists()


def test_a_directory_the_user_gave_jax_is_kept(no_jax_cache, tmp_path, monkeypatch):
  jax.config.update("jax_compilation_cache_dir", str(tmp_path / "mine"))
  monkeypatch.setenv("RBX_COMPILATION_CACHE", str(tmp_path / "rbx"))
  assert compile_cache.use() == compile_cache.use(False) == str(tmp_path / "mine")
  assert jax.config.jax_compilation_cache_dir == str(tmp_path / "mine")
  assert not (tmp_path / "rbx").exists()


SWEEP = """
import json
import jax
events = []
jax.monitoring.register_event_listener(lambda name, **kw: events.append(name))
from rbx import rlhf
env = rlhf.example1(p=0.0, beta=0.5, r_max=4.0)
res = rlhf.sweep(lambda agent: (env, rlhf.get(agent, alpha=3.0)), {"agent": ["algorithm1"]},
                 seeds=2, steps=20, progress=False)
print(json.dumps({"hits": events.count("/jax/compilation_cache/cache_hits"),
                  "misses": events.count("/jax/compilation_cache/cache_misses"),
                  "compile_seconds": res.timing["compile_seconds"],
                  "regret": res.regret.tolist()}))
"""


@pytest.mark.slow
def test_a_second_python_process_loads_the_sweeps_programs_from_the_cache(tmp_path):
  env = {k: v for k, v in subprocess_env().items()
         if k not in ("JAX_COMPILATION_CACHE_DIR", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS")}
  cache = tmp_path / "cache"

  def run(setting):
    out = subprocess.run([sys.executable, "-c", SWEEP], env={**env, "RBX_COMPILATION_CACHE": setting},
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])

  first = run(str(cache))
  stored = sorted(p.name for p in cache.iterdir() if p.name.endswith("-cache"))
  assert first["hits"] == 0 and len(stored) >= 1        # a program that compiled in < 0.5 s
  second = run(str(cache))                               # is not kept: a miss both times
  assert second["hits"] == len(stored) and second["misses"] == first["misses"] - len(stored)
  assert sorted(p.name for p in cache.iterdir() if p.name.endswith("-cache")) == stored
  assert second["regret"] == first["regret"]
  off = run("off")
  assert off["hits"] == off["misses"] == 0
  print(f"compile seconds: cold {first['compile_seconds']:.2f}, from the cache "
        f"{second['compile_seconds']:.2f}, off {off['compile_seconds']:.2f}")
