"""JAX's persistent compilation cache, one setting for `rbx run`, `rbx demo` and `rbx.sweep`:
a second run of the same programs — another command, a restarted notebook, a script run
again — loads them from disk instead of compiling them (on a GPU compiling is most of a
short run).

Where (`directory`): a cache directory the user gave JAX (`JAX_COMPILATION_CACHE_DIR` or
`jax.config.update("jax_compilation_cache_dir", ...)`) as it is; else `$RBX_COMPILATION_CACHE`
(a path) or `$XDG_CACHE_HOME/rbx/jax` (default `~/.cache/rbx/jax`), said once on stderr when
the directory is made. The off switch: `RBX_COMPILATION_CACHE=off` (or 0, false, no), which
the command line's `--no-compile-cache` is, and from Python `use(False)`; both leave a
directory the user gave JAX alone. Programs that compile in under 0.5 s are not kept
(`JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS` sets another threshold).

Every sweep calls `use()` before it compiles (`rbx.core.sweep.run`); it costs a few
dictionary reads once the cache is set.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping

import jax

ENV = "RBX_COMPILATION_CACHE"
OFF = ("0", "off", "false", "no")
MIN_COMPILE_SECONDS = 0.5
_MIN_ENV = "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"

_enabled = True          # this process's choice: `use(False)` turns it off for later sweeps
_ours: str | None = None  # the directory this module gave JAX (not one the user gave it)


def _stderr(text: str) -> None:
  print(text, file=sys.stderr)


def use(enabled: bool | None = None, echo: Callable[[str], None] = _stderr) -> str | None:
  """Turns on the persistent compilation cache for this process (`directory`); returns the
  directory in use, or None. `enabled`: True or False decides for this process, later
  sweeps included (False: `--no-compile-cache`); None (a sweep's call) keeps what was decided
  (default on). `echo` says where, once: when the directory is made."""
  global _enabled, _ours
  if enabled is not None:
    _enabled = bool(enabled)
  current = jax.config.jax_compilation_cache_dir
  path = directory(_enabled, os.environ, None if current == _ours else current)
  if path == current:
    return path
  if path is None:                          # turned off after this module had turned it on
    _set(None)
    return None
  if not os.path.isdir(path):
    os.makedirs(path, exist_ok=True)
    echo(f"rbx: compiled programs are cached in {path} for later runs ({ENV}=off, "
         "--no-compile-cache on the command line, turns it off)")
  _set(path)
  if _MIN_ENV not in os.environ:
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
  return path


def _set(path: str | None) -> None:
  """Gives JAX the cache directory `path` (None: none), dropping a cache JAX has opened."""
  global _ours
  from jax.experimental.compilation_cache import compilation_cache
  if _ours is not None:                     # JAX opens its cache once: let it open the new one
    compilation_cache.reset_cache()
  jax.config.update("jax_compilation_cache_dir", path)
  _ours = path


def directory(enabled: bool, environ: Mapping[str, str], jax_directory: str | None) -> str | None:
  """The compilation cache directory: a directory the user gave JAX (`jax_directory`:
  `JAX_COMPILATION_CACHE_DIR` or `jax_compilation_cache_dir`) as it is; else None when
  `enabled` is False or `RBX_COMPILATION_CACHE` is "off" (or 0, false, no); else
  `RBX_COMPILATION_CACHE` (a path) or `$XDG_CACHE_HOME/rbx/jax` (default `~/.cache/rbx/jax`)."""
  if jax_directory:
    return jax_directory
  setting = environ.get(ENV, "").strip()
  if not enabled or setting.lower() in OFF:
    return None
  if setting:
    return os.path.expanduser(setting)
  base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
  return os.path.join(base, "rbx", "jax")
