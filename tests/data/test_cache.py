"""rbx.data.cache and the fast parse: a second load reads the cache, a changed file or option
parses again, a corrupt cache file is rebuilt, a read-only data directory falls back to the
per-user cache, and pandas' parse equals the `csv` module's."""
import os
import sys

import numpy as np
import pytest

from rbx import data
from rbx.data import cache, loader

MIXED = ("id, size ,colour,flag,score,label\n"
         "1,3,red,True,0.5,01\n"
         "2, 4 ,blue,False,1e-3,1\n"
         "\n"
         "3,?,,True,NaN,2\n"
         "4,x,red,False,-2.25,01\n"
         "5,7,green,True,inf,10\n")
"""Ints, padded cells, a blank line, missing markers, booleans, floats, bad cells (x, inf) and
classes '01' and '1' that only strings tell apart."""


@pytest.fixture(autouse=True)
def fresh(monkeypatch, tmp_path):
  """No cache from elsewhere: the per-user cache in tmp_path, the in-memory cache empty."""
  monkeypatch.delenv(cache.ENV_VAR, raising=False)
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
  loader._CACHE.clear()
  yield
  loader._CACHE.clear()


def _toy(tmp_path, rows=((1, 2, "a"), (3, 4, "b"), (5, 6, "a"))):
  path = tmp_path / "toy.csv"
  path.write_text("u,v,label\n" + "".join(f"{u},{v},{y}\n" for u, v, y in rows))
  return path


def _parses(monkeypatch):
  """Counts `read_columns` calls (the CSV parses)."""
  calls = []
  parse = loader.read_columns
  monkeypatch.setattr(loader, "read_columns", lambda *a: calls.append(a) or parse(*a))
  return calls


def _same(a, b):
  assert (a.name, a.classes, a.columns, a.path) == (b.name, b.classes, b.columns, b.path)
  np.testing.assert_array_equal(a.features, b.features)
  np.testing.assert_array_equal(a.labels, b.labels)
  assert a.features.dtype == b.features.dtype and a.labels.dtype == b.labels.dtype


def test_a_second_load_reads_the_cache_not_the_csv(tmp_path, monkeypatch):
  path = _toy(tmp_path)
  first = data.load(path)
  assert len(list((tmp_path / ".rbx-cache").glob("toy.*.npz"))) == 1
  loader._CACHE.clear()                                   # as a new process
  monkeypatch.setattr(loader, "read_columns", lambda *a: pytest.fail("parsed the CSV again"))
  _same(data.load(path), first)
  assert data.load(path) is data.load(path)               # and then from memory
  assert not list(tmp_path.glob(".rbx-cache/*.part"))     # no temporary file left


def test_a_changed_file_or_option_is_parsed_again(tmp_path, monkeypatch):
  path = _toy(tmp_path)
  calls = _parses(monkeypatch)
  data.load(path)
  stat = path.stat()
  _toy(tmp_path, rows=((9, 2, "a"), (3, 4, "b"), (5, 6, "a")))   # same size ...
  os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))        # ... and time: the hash tells
  loader._CACHE.clear()
  changed = data.load(path)
  assert len(calls) == 2 and changed.features[0, 0] == pytest.approx(9 / np.hypot(9, 2))
  assert len(list((tmp_path / ".rbx-cache").glob("toy.*.npz"))) == 1    # overwritten in place
  data.load(path, bad_cells="missing")
  data.load(path, label="u")
  assert len(calls) == 4
  assert len(list((tmp_path / ".rbx-cache").glob("toy.*.npz"))) == 3
  loader._CACHE.clear()
  data.load(path, bad_cells="missing")
  assert len(calls) == 4                                  # each option set has its own file


@pytest.mark.parametrize("damage", [b"", b"not a zip file", "truncated", "wrong digest"])
def test_a_corrupt_cache_file_is_ignored_and_rebuilt(tmp_path, monkeypatch, damage):
  path = _toy(tmp_path)
  first = data.load(path)
  [stored] = (tmp_path / ".rbx-cache").glob("toy.*.npz")
  good = stored.read_bytes()
  if damage == "truncated":
    stored.write_bytes(good[:len(good) // 2])
  elif damage == "wrong digest":                          # another file's arrays
    (tmp_path / "other").mkdir()
    other = data.load(_toy(tmp_path / "other", rows=((1, 1, "a"), (2, 2, "b"))), cache=False)
    cache.Entry.of(path, loader.Options())._replace(digest="0" * 64).write(other)
  else:
    stored.write_bytes(damage)
  assert stored.read_bytes() != good
  loader._CACHE.clear()
  calls = _parses(monkeypatch)
  _same(data.load(path), first)
  assert len(calls) == 1                                  # parsed again ...
  _same(cache.Entry.of(path, loader.Options()).read(), first)    # ... and its cache rebuilt


@pytest.mark.parametrize("blocked", ["no write bits", "cannot be made"])
def test_a_read_only_data_directory_uses_the_per_user_cache(tmp_path, monkeypatch, blocked):
  directory = tmp_path / "data"
  directory.mkdir()
  path = _toy(directory)
  if blocked == "no write bits":
    directory.chmod(0o555)                                # (root could write all the same)
  else:
    (directory / ".rbx-cache").write_text("")            # a file: mkdir fails
  try:
    first = data.load(path)
    assert len(list((tmp_path / "xdg" / "rbx" / "preprocessed").glob("toy.*.npz"))) == 1
    assert not (directory / ".rbx-cache").is_dir()          # nothing written there
    loader._CACHE.clear()
    monkeypatch.setattr(loader, "read_columns", lambda *a: pytest.fail("parsed the CSV again"))
    _same(data.load(path), first)
  finally:
    directory.chmod(0o755)


def test_rbx_cache_dir_and_cache_false(tmp_path, monkeypatch):
  monkeypatch.setenv(cache.ENV_VAR, str(tmp_path / "mine"))
  path = _toy(tmp_path)
  data.load(path, cache=False)
  assert not (tmp_path / "mine").exists() and not (tmp_path / ".rbx-cache").exists()
  data.load(path)
  assert len(list((tmp_path / "mine").glob("toy.*.npz"))) == 1
  assert not (tmp_path / ".rbx-cache").exists()


@pytest.mark.parametrize("options", [{"bad_cells": "missing"}, {"bad_cells": "categorical"},
                                     {"bad_cells_by_column": {"size": "missing",
                                                              "score": "categorical"}}])
def test_the_fast_parse_equals_the_pure_parse_on_a_mixed_csv(tmp_path, options):
  pytest.importorskip("pandas")
  path = tmp_path / "mixed.csv"
  path.write_text(MIXED)
  header, columns = loader.read_columns(path)
  assert [c.dtype.kind for c in columns] == ["f", "U", "U", "U", "U", "U"]   # pandas read it
  fast = loader.preprocess_columns(header, columns, loader.Options.of(**options), path)
  _same(fast, loader.preprocess(*loader.read_csv(path), path=path, **options))
  assert fast.classes == ("01", "1", "2", "10") and fast.labels.tolist() == [0, 1, 2, 0, 3]
  assert header == ["id", "size", "colour", "flag", "score", "label"]


@pytest.mark.parametrize("text", [MIXED.replace("red", '"r,ed"'),      # quotes: csv reads it
                                  MIXED + "6,3\n", MIXED + "   \n"])   # a short row, spaces
def test_the_pure_parse_reads_what_the_fast_one_declines(tmp_path, monkeypatch, text):
  path = tmp_path / "odd.csv"
  path.write_text(text)
  if text.endswith("6,3\n"):
    with pytest.raises(ValueError, match="ragged rows: data row 6 has 2 fields"):
      data.load(path, bad_cells="missing")
    return
  fast = data.load(path, bad_cells="missing", cache=False)
  monkeypatch.setitem(sys.modules, "pandas", None)                # no pandas: the pure path
  _same(data.load(path, bad_cells="missing", cache=False), fast)
