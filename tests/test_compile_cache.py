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


# `rbx demo` in a fresh process, counting the persistent cache's hits and misses (JAX's events).
DEMO = """
import json, sys
import jax
events = []
jax.monitoring.register_event_listener(lambda name, **kw: events.append(name))
from rbx import cli
from rbx.runs import demo
if "--no-compile-cache" in sys.argv:   # the off run: one of the demo's programs shows the switch
  demo.EXAMPLES, demo.AGENTS = dict(list(demo.EXAMPLES.items())[:1]), demo.AGENTS[:1]
status = cli.main(["demo", "--seeds", "2", "--steps", "3", "--no-progress"] + sys.argv[1:])
print(json.dumps({"hits": events.count("/jax/compilation_cache/cache_hits"),
                  "misses": events.count("/jax/compilation_cache/cache_misses")}))
sys.exit(status)
"""


@pytest.fixture(scope="module")
def demo_processes(tmp_path_factory):
  """`rbx demo` three times in fresh processes, as a user's who gave JAX no cache directory:
  into an empty cache, again from it, and with --no-compile-cache (one example and agent: one
  compiled program shows the switch). Returns {run: (stdout, stderr, its JSON counts, the
  cache's files after it)} and the two directories."""
  env = {k: v for k, v in subprocess_env().items() if k != "JAX_COMPILATION_CACHE_DIR"}
  tmp = tmp_path_factory.mktemp("demo-cache")
  cache, off = tmp / "cache", tmp / "off"
  runs = {}
  for run, directory, flags in (("cold", cache, []), ("warm", cache, []),
                                ("off", off, ["--no-compile-cache"])):
    out = subprocess.run([sys.executable, "-c", DEMO, *flags],
                         env={**env, "RBX_COMPILATION_CACHE": str(directory)},
                         capture_output=True, text=True, check=True)
    stored = sorted(p.name for p in cache.iterdir() if p.name.endswith("-cache"))
    runs[run] = (out.stdout, out.stderr, json.loads(out.stdout.splitlines()[-1]), stored)
  return runs, cache, off


@pytest.mark.slow
def test_rbx_demo_fills_the_cache_says_so_once_and_off_turns_it_off(demo_processes):
  runs, cache, off = demo_processes
  said = f"compiled programs are cached in {cache}"
  assert said in runs["cold"][1] and said not in runs["warm"][1]
  assert runs["cold"][3]                           # the first run's programs
  rows = {run: [line for line in out.splitlines() if line.startswith(("example1 ", "example2 "))]
          for run, (out, *_) in runs.items()}
  assert len(rows["cold"]) == 6 and rows["cold"] == rows["warm"]   # loaded programs compute the same
  assert not off.exists() and runs["off"][2]["hits"] == runs["off"][2]["misses"] == 0


@pytest.mark.slow
def test_a_second_python_process_loads_the_programs_from_the_cache(demo_processes):
  runs = demo_processes[0]
  first, second = runs["cold"][2], runs["warm"][2]
  stored = runs["cold"][3]
  assert first["hits"] == 0 and len(stored) >= 1
  # every stored program loads; one that compiled under the threshold is not kept: a miss both times
  assert second["hits"] == len(stored) and second["misses"] == first["misses"] - len(stored)
  assert runs["warm"][3] == stored


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
