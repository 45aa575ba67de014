"""A run directory's lock and status: one process runs it at a time, and a run that ended
any way but complete says how.

`hold(path)` takes an exclusive `fcntl.flock` on the lock file `path` (DIR/run.lock, or
run.p<i>.lock per process of a multi-process run) and writes who holds it (pid, host, since).
The kernel releases the lock when its process ends, however it ends, so a killed holder
leaves a lock file with its name in it but no lock: the next run takes it and is told.
`holder(path)` is whoever holds it now, or None.

metadata.json's status is "running" while a process runs the directory, then "complete",
"interrupted" (stopped by Ctrl-C/SIGTERM, its last checkpoint intact) or "failed" (with the
error's type, message and time under "error"); "running" with no process holding the lock
means the process was killed (SIGKILL, the out-of-memory killer). `describe` says which, and
suggests `rbx run --resume` only when a checkpoint is there to resume from.
"""
from __future__ import annotations

import datetime
import fcntl
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

COMPLETE, INTERRUPTED, RUNNING, FAILED = "complete", "interrupted", "running", "failed"
LOCK = "run.lock"
METADATA = "metadata.json"       # the status, with the run's settings (`rbx.runs.experiment`)


class LockedError(OSError):
  """The run directory is being run by another process."""


@contextmanager
def hold(path: str | os.PathLike) -> Iterator[dict | None]:
  """Holds the lock file `path` for the block; yields the holder recorded by a process that
  died holding it (its lock released by the kernel), or None.

  Raises:
    LockedError: another process holds it, naming its pid, host and start time.
  """
  path = Path(path)
  fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
  try:
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      raise LockedError(f"{path.parent} is being run by {_who(_read(fd))} (it holds {path}): "
                        "wait for it to end, or stop it, before running this directory") from None
    stale = _read(fd)
    _write(fd, {"pid": os.getpid(), "host": socket.gethostname(), "since": now()})
    try:
      yield stale
    finally:
      _write(fd, None)                    # cleared: a holder left in it is one that was killed
  finally:
    os.close(fd)                          # releases the lock


def holder(path: str | os.PathLike) -> dict | None:
  """{"pid", "host", "since"} of the process holding the lock file `path`, or None."""
  try:
    fd = os.open(path, os.O_RDONLY)
  except FileNotFoundError:
    return None
  try:
    try:
      fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
      return _read(fd) or {}
    return None
  finally:
    os.close(fd)


def describe(directory: str | os.PathLike) -> str:
  """Why the run in `directory` has no results (from its metadata.json), and what to do."""
  directory = Path(directory)
  try:
    metadata = json.loads((directory / METADATA).read_text())
  except FileNotFoundError:
    return f"{directory} is not an rbx run directory (no {METADATA})"
  status, error = metadata.get("status"), metadata.get("error") or {}
  resume = (f"; continue it from its last checkpoint with `rbx run --resume {directory}`"
            if any(directory.glob("checkpoint*.npz")) else
            "; it wrote no checkpoint, so there is nothing to resume: fix the cause and run the "
            "config again into a new directory")
  if status == FAILED:
    return (f"{directory} failed at {error.get('time')}: {error.get('type')}: "
            f"{error.get('message')}{resume}")
  if status == INTERRUPTED:
    return f"{directory} was interrupted at {metadata.get('finished')}{resume}"
  if status == RUNNING:
    held = [h for h in map(holder, sorted(directory.glob("run*.lock"))) if h is not None]
    if held:
      return (f"{directory} is still being run by {_who(held[0])} and has written no "
              "checkpoint yet: nothing to report until its first chunk ends")
    return (f"{directory} was killed while it ran (by SIGKILL or the out-of-memory killer, "
            f"say): its status still says 'running', but no process is running it{resume}")
  return f"{directory} has status {status!r}"


def now() -> str:
  """The time in UTC, ISO 8601 to the second."""
  return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _who(info: dict | None) -> str:
  if not info:
    return "another process"
  return f"pid {info.get('pid')} on host {info.get('host')} since {info.get('since')}"


def _read(fd: int) -> dict | None:
  os.lseek(fd, 0, os.SEEK_SET)
  text = os.read(fd, 4096).decode(errors="replace")
  try:
    return json.loads(text) if text.strip() else None
  except json.JSONDecodeError:
    return None


def _write(fd: int, info: dict | None) -> None:
  os.ftruncate(fd, 0)
  os.lseek(fd, 0, os.SEEK_SET)
  if info is not None:
    os.write(fd, json.dumps(info).encode())
