"""rbx.data: every shared data set against MANIFEST.json, preprocessing, the data directory, and
clear errors for corrupt or malformed files."""
import gzip
import io
import json
from pathlib import Path

import numpy as np
import pytest

from rbx import data, neural

SHARED = Path(__file__).resolve().parents[3] / "shared" / "datasets"
MANIFEST = json.loads((SHARED / "MANIFEST.json").read_text()) if SHARED.is_dir() else {}
needs_shared = pytest.mark.skipif(not MANIFEST, reason=f"no shared data sets at {SHARED}")


@pytest.fixture(scope="session")
def shared_sets():
  return {name: data.load(name, data_dir=SHARED) for name in MANIFEST}


@pytest.mark.slow                     # the session fixture reads all of them, Covertype's 581k rows
@needs_shared
@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_shared_set_matches_manifest(shared_sets, name):
  entry, ds = MANIFEST[name], shared_sets[name]
  n = entry["rows"]
  assert ds.features.shape[0] == n and ds.labels.shape == (n,) and ds.features.dtype == np.float32
  assert ds.num_classes == entry["classes"]
  counts = dict(zip(ds.classes, np.bincount(ds.labels, minlength=ds.num_classes).tolist()))
  assert counts == entry["class_counts"]
  assert ds.features.shape[1] >= entry["features"]            # one-hot widens categoricals
  norms = np.linalg.norm(ds.features, axis=1)
  np.testing.assert_allclose(norms[norms > 0], 1.0, rtol=1e-5)
  assert np.isfinite(ds.features).all()
  env = neural.classification(ds.features, ds.labels)
  assert env.num_arms == entry["classes"]


@pytest.mark.slow
@needs_shared
def test_categoricals_are_one_hot_and_missing_is_a_category(shared_sets):
  adult = shared_sets["adult"]
  assert any(c.endswith("=?") for c in adult.columns)         # Adult's '?' is its own category
  mushroom = shared_sets["mushroom"]
  assert ((mushroom.features > 0).sum(1) == 22).all()           # 22 categorical columns, one 1 each
  np.testing.assert_allclose(mushroom.features[mushroom.features > 0], 22 ** -0.5, rtol=1e-6)
  assert len(mushroom.columns) == mushroom.features.shape[1]


@pytest.mark.slow
@needs_shared
def test_load_caches_and_finds_by_path_and_environment(monkeypatch, shared_sets):
  assert data.load("mushroom", data_dir=SHARED) is shared_sets["mushroom"]
  by_path = data.load(SHARED / "mushroom.csv.gz")
  assert by_path is shared_sets["mushroom"]
  monkeypatch.setenv(data.ENV_VAR, str(SHARED))
  assert data.find("mushroom") == SHARED / "mushroom.csv.gz"


def test_data_home_order(monkeypatch, tmp_path):
  monkeypatch.setenv(data.ENV_VAR, str(tmp_path / "env"))
  assert data.data_home(tmp_path / "kw") == tmp_path / "kw"
  assert data.data_home() == tmp_path / "env"
  monkeypatch.delenv(data.ENV_VAR)
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
  assert data.data_home() == tmp_path / "xdg" / "rbx" / "datasets"
  monkeypatch.delenv("XDG_CACHE_HOME")
  assert data.data_home() == Path.home() / ".cache" / "rbx" / "datasets"
  assert "shared" not in str(data.data_home())


def _write(path, text):
  path.write_bytes(gzip.compress(text.encode()))
  return path


def test_preprocessing_of_a_user_csv_with_its_own_label_column(tmp_path):
  path = tmp_path / "toy.csv"
  path.write_text("size,colour,kind\n3,red,10\n?,blue,2\n4,,10\n0,red,7\n")
  ds = data.load(path, label="kind")
  assert ds.classes == ("2", "7", "10") and ds.labels.tolist() == [2, 0, 2, 1]   # numeric order
  assert ds.columns == ("size", "colour=", "colour=blue", "colour=red")
  raw = np.array([[3, 0, 0, 1], [-1, 0, 1, 0], [4, 1, 0, 0], [0, 0, 0, 1]], np.float32)
  np.testing.assert_allclose(ds.features, raw / np.linalg.norm(raw, axis=1, keepdims=True),
                             rtol=1e-6)


@pytest.mark.parametrize("content,problem", [
    (b"label,a\n0,1\n" * 3, "gzip"),                                  # not gzip at all
    (gzip.compress(b"label,a\n0,1\n1,2\n")[:-12], "gzip"),              # truncated gzip
    (gzip.compress(b"a,b\n0,1\n1,2\n"), "no label column 'label'"),
    (gzip.compress(b"label,a,b\n0,1,2\n1,2\n"), "ragged rows: data row 2"),
    (gzip.compress(b"label,a\n1,1\n1,2\n"), "one class"),
    (gzip.compress(b"label,a\n"), "no data rows"),
    (gzip.compress(b""), "empty file"),
    (gzip.compress(b"label,a\n0,\xff\n1,2\n"), "UTF-8"),
])
def test_corrupt_files_raise_naming_file_and_problem(tmp_path, content, problem):
  path = tmp_path / "broken.csv.gz"
  path.write_bytes(content)
  with pytest.raises(ValueError, match=problem) as e:
    data.load("broken", data_dir=tmp_path)
  assert str(path) in str(e.value)


def test_missing_data_set_says_where_and_how(tmp_path):
  with pytest.raises(FileNotFoundError, match="rbx data download covertype") as e:
    data.load("covertype", data_dir=tmp_path)
  assert str(tmp_path / "covertype.csv.gz") in str(e.value)
  with pytest.raises(FileNotFoundError, match="does not exist"):
    data.load(tmp_path / "nope.csv.gz")


def test_write_csv_round_trips(tmp_path):
  buf = io.BytesIO()
  data.write_csv(buf, ["x", "label"], [["1.5", "a"], ["?", "b"]])
  path = tmp_path / "rt.csv.gz"
  path.write_bytes(buf.getvalue())
  ds = data.load(path)
  assert ds.classes == ("a", "b")
  np.testing.assert_allclose(ds.features[:, 0], [1.0, -1.0])
