"""Atomic, self-checking checkpoint files: named NumPy arrays plus JSON metadata in one npz.

`save` writes a temporary file, fsyncs it, moves the previous checkpoint to `PATH.prev` and
renames the new file into place (then fsyncs the directory: `rbx._io.atomic_write`), so a
crash at any moment leaves at least one complete checkpoint. The file holds a SHA-256 of every
array's name, dtype, shape and bytes and of the metadata; `load` recomputes it, so a
truncated or corrupted file raises `CheckpointError` instead of being used. `load_latest` falls
back to `PATH.prev` and says why.
"""
from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path

import numpy as np

from rbx._io import atomic_write

_META = "__meta__"


class CheckpointError(Exception):
  """A checkpoint is missing, truncated, corrupted or belongs to another sweep."""


def save(path: str | os.PathLike, arrays: dict[str, np.ndarray], meta: dict) -> None:
  """Atomically writes `arrays` (name -> array, no objects) and JSON-able `meta` to `path`."""
  path = Path(path)
  arrays = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
  meta = {**meta, "sha256": _digest(arrays, meta)}
  blob = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), np.uint8)
  with atomic_write(path, keep=previous(path)) as f:
    np.savez(f, **arrays, **{_META: blob})


def load(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict]:
  """(arrays, meta) of the checkpoint at `path`; raises `CheckpointError` saying what is wrong."""
  path = Path(path)
  if not path.exists():
    raise CheckpointError(f"{path} does not exist")
  try:
    with np.load(path, allow_pickle=False) as f:
      arrays = {k: f[k] for k in f.files}
  except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as e:
    raise CheckpointError(f"{path} is truncated or corrupt ({type(e).__name__}: {e})") from e
  if _META not in arrays:
    raise CheckpointError(f"{path} is not an rbx checkpoint (no metadata)")
  try:
    meta = json.loads(arrays.pop(_META).tobytes().decode())
  except (UnicodeDecodeError, json.JSONDecodeError) as e:
    raise CheckpointError(f"{path} has corrupt metadata ({e})") from e
  stored = meta.pop("sha256", None)
  if stored != _digest(arrays, meta):
    raise CheckpointError(f"{path} fails its checksum (stored {stored}): the file is corrupt")
  return arrays, meta


def load_latest(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict, list[str]]:
  """The newest good checkpoint of `path` or `previous(path)`, with a note per rejected file.

  Raises `CheckpointError` listing every problem when neither is good.
  """
  problems = []
  for candidate in (Path(path), previous(path)):
    try:
      arrays, meta = load(candidate)
      return arrays, meta, problems
    except CheckpointError as e:
      problems.append(str(e))
  raise CheckpointError("no good checkpoint: " + "; ".join(problems))


def previous(path: str | os.PathLike) -> Path:
  """Where `save` keeps the checkpoint before the newest one."""
  path = Path(path)
  return path.with_name(path.stem + ".prev" + path.suffix)


def _digest(arrays: dict[str, np.ndarray], meta: dict) -> str:
  h = hashlib.sha256(json.dumps(meta, sort_keys=True).encode())
  for name in sorted(arrays):
    a = np.ascontiguousarray(arrays[name])
    h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
    h.update(a.tobytes())
  return h.hexdigest()
