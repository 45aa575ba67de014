"""rbx.data: every shared data set against MANIFEST.json, preprocessing, the data directory,
clear errors for corrupt or malformed files, and bad cells in numeric columns (never a silent
type flip)."""
import gzip
import io
import json
from pathlib import Path

import numpy as np
import pytest

from rbx import data, neural
from rbx.runs import config
from rbx.data import cache

SHARED = Path(__file__).resolve().parents[3] / "shared" / "datasets"
MANIFEST = json.loads((SHARED / "MANIFEST.json").read_text()) if SHARED.is_dir() else {}
needs_shared = pytest.mark.skipif(not MANIFEST, reason=f"no shared data sets at {SHARED}")


@pytest.fixture(scope="session")
def shared_sets(tmp_path_factory):
  with pytest.MonkeyPatch.context() as m:               # the parse, not a cache from elsewhere
    m.setenv(cache.ENV_VAR, str(tmp_path_factory.mktemp("cache")))
    yield {name: data.load(name, data_dir=SHARED) for name in MANIFEST}


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


def _gz(content: bytes) -> bytes:
  """`content` gzipped with no timestamp: the same bytes in every process, so the test
  parameters below, and pytest-xdist's workers' collections, agree."""
  return gzip.compress(content, mtime=0)


def _write(path, text):
  path.write_bytes(_gz(text.encode()))
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
    (b"label,a\n0,1\n" * 3, "gzip"),
    (_gz(b"label,a\n0,1\n1,2\n")[:-12], "gzip"),
    (_gz(b"a,b\n0,1\n1,2\n"), "no label column 'label'"),
    (_gz(b"label,a,b\n0,1,2\n1,2\n"), "ragged rows: data row 2"),
    (_gz(b"label,a\n1,1\n1,2\n"), "one class"),
    (_gz(b"label,a\n"), "no data rows"),
    (_gz(b""), "empty file"),
    (_gz(b"label,a\n0,\xff\n1,2\n"), "UTF-8"),
], ids=["not-gzip", "truncated", "no-label", "ragged", "one-class", "no-rows", "empty", "not-utf8"])
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
  (tmp_path / "mnist5k.csv").write_text("x,label\n1,0\n")
  with pytest.raises(FileNotFoundError, match=r"\(did you mean 'mnist5k'\?\).*rbx data download "
                     "mnist"):                  # a downloadable name beside a local near-miss
    data.load("mnist", data_dir=tmp_path)


def test_write_csv_round_trips(tmp_path):
  buf = io.BytesIO()
  data.write_csv(buf, ["x", "label"], [["1.5", "a"], ["?", "b"]])
  path = tmp_path / "rt.csv.gz"
  path.write_bytes(buf.getvalue())
  ds = data.load(path)
  assert ds.classes == ("a", "b")
  np.testing.assert_allclose(ds.features[:, 0], [1.0, -1.0])


def _numbers_with_strays(tmp_path):
  """Column b is numeric but for an 'x' (data row 2) and an 'inf' (data row 4)."""
  path = tmp_path / "strays.csv"
  path.write_text("a,b,colour,label\n1,2,red,p\n2,x,blue,q\n3,nan,red,p\n4,inf,blue,q\n5,,red,q\n")
  return path


def test_a_stray_non_number_in_a_numeric_column_is_reported_not_a_type_flip(tmp_path):
  path = _numbers_with_strays(tmp_path)
  with pytest.raises(ValueError) as e:
    data.load(path)
  message = str(e.value)
  for part in (str(path), "column 'b'", "2 of its 5 cells", "data row 2, 'x'",
               "bad_cells='missing'", "bad_cells='categorical'", "bad_cells_by_column={'b':",
               "[env]"):
    assert part in message, part
  assert "'a'" not in message and "'colour'" not in message      # numeric and categorical: fine


def test_bad_cells_make_missing_values_or_a_categorical_column(tmp_path):
  path = _numbers_with_strays(tmp_path)
  missing = data.load(path, bad_cells="missing", cache=False)
  assert missing.columns == ("a", "b", "colour=blue", "colour=red")
  raw = np.array([[1, 2, 0, 1], [2, -1, 1, 0], [3, -1, 0, 1], [4, -1, 1, 0], [5, -1, 0, 1]])
  np.testing.assert_allclose(missing.features, raw / np.linalg.norm(raw, axis=1, keepdims=True),
                             rtol=1e-6)                  # x, inf bad; nan and "" missing: all −1
  categorical = data.load(path, bad_cells="categorical", cache=False)
  assert categorical.columns[1:6] == ("b=", "b=2", "b=inf", "b=nan", "b=x")
  per_column = data.load(path, bad_cells_by_column={"b": "categorical"}, cache=False)
  assert per_column.columns == categorical.columns
  mixed = data.load(path, bad_cells="categorical", bad_cells_by_column={"b": "missing"},
                    cache=False)
  assert mixed.columns == missing.columns


def test_bad_cells_options_are_checked(tmp_path):
  path = _numbers_with_strays(tmp_path)
  with pytest.raises(ValueError, match=r"bad_cells='drop' is not one of \['error', 'missing',"):
    data.load(path, bad_cells="drop")
  with pytest.raises(ValueError, match=r"bad_cells_by_column\['b'\]='skip' is not one of"):
    data.load(path, bad_cells_by_column={"b": "skip"})
  with pytest.raises(ValueError, match=r"names 'B', not a feature column .* \(did you mean 'b'"):
    data.load(path, bad_cells_by_column={"B": "missing"})


def test_a_missing_label_column_names_the_option_to_choose_it(tmp_path):
  path = _write(tmp_path / "nolabel.csv.gz", "a,class\n0,1\n1,2\n")
  with pytest.raises(ValueError, match=r"no label column 'label'; the columns are \['a', 'class'\]"
                                       r"\. Name the class column with label=") as e:
    data.load(path)
  assert 'label = "..." in the [env] table' in str(e.value)


def test_a_config_sets_bad_cells_in_its_env_table(tmp_path):
  path = _numbers_with_strays(tmp_path)
  head = (f'family = "neural"\nseeds = 1\nsteps = 5\n[env]\nname = "classification"\n'
          f'dataset = "{path}"\n')
  agent = '\n[agent]\nname = "lin_ucb"\n'
  assert config.loads(head + 'bad_cells = "missing"' + agent).build()[0].num_arms == 2
  table = '[env.bad_cells_by_column]\nb = "categorical"'
  assert config.loads(head + agent + table).build()[0].num_arms == 2
  with pytest.raises(config.ConfigError, match="bad_cells='x' is not one of"):
    config.loads(head + 'bad_cells = "x"' + agent)
  assert config.DATASET["bad_cells_by_column"].kind == "table"
