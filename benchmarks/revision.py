"""Another git revision's rbx, whole, for a benchmark's `--baseline REV`: the revision checked out
(`git worktree`) into a temporary directory, and Python run on it in a fresh process, its `rbx`
from that tree and `benchmarks` from this one. No module of the revision is imported by
today's paths, so moving modules here breaks no comparison."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from benchmarks import ROOT

ENV = "RBX_BENCHMARK_REVISION"
THIS = "this tree"


def head() -> str:
  """This repository's HEAD as a short hash, "with uncommitted changes" where tracked files
  differ from it; "unknown" outside git."""
  git = lambda *args: subprocess.run(["git", *args], cwd=ROOT, text=True, capture_output=True,
                                     check=True).stdout.strip()
  try:
    commit = git("rev-parse", "--short", "HEAD")
    dirty = git("status", "--porcelain", "--untracked-files=no")
  except (OSError, subprocess.CalledProcessError):
    return "unknown"
  return commit + (" with uncommitted changes" if dirty else "")


def name() -> str:
  """The revision this process runs on: the one `python` was given, else "this tree"."""
  return os.environ.get(ENV, THIS)


def python(tree: Path, revision: str, *args: str) -> str:
  """The standard output of `python ARGS` in a fresh process whose `rbx` is `tree`'s and whose
  `benchmarks` is this tree's (`name()` there is `revision`), with the compile cache off."""
  with tempfile.TemporaryDirectory() as shim:
    (Path(shim) / "benchmarks").symlink_to(ROOT / "benchmarks")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([shim, str(tree)]), ENV: revision,
           "RBX_COMPILATION_CACHE": "off"}
    return subprocess.run([sys.executable, *args], cwd=shim, env=env, check=True,
                          capture_output=True, text=True).stdout


@contextlib.contextmanager
def checkout(revision: str) -> Iterator[Callable[..., str]]:
  """`python` on git `revision`'s tree, checked out (a detached worktree of this repository) in
  a temporary directory for the block and removed after it."""
  git = lambda *args: subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True)
  with tempfile.TemporaryDirectory() as tmp:
    tree = Path(tmp) / "tree"
    git("worktree", "add", "--detach", str(tree), revision)
    try:
      yield lambda *args: python(tree, revision, *args)
    finally:
      git("worktree", "remove", "--force", str(tree))
