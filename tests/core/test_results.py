"""Results on disk: the loader returns labelled arrays, summaries give mean/std/95% CI, plots
and the report are written; checkpoints detect truncation and corruption."""
import dataclasses
import json

import numpy as np
import pytest
import scipy.stats

from rbx.core import checkpoint, plots, report
from rbx.core import results as results_lib
from rbx.core.grid import Grid
from rbx.core.record import Recorder
from rbx.rlhf.analysis import paper_exponent


def fake_results(record="log"):
  """A finished-looking sweep over agent x beta, 5 seeds, R(t) ∝ t^((β+1)/(β+2))."""
  grid = Grid({"agent": ["algorithm1", "vpo"], "beta": [0.5, 1.0]})
  rng = np.random.default_rng(0)
  T = 400
  rec = Recorder(record, T, (2, 2, 5), log_points=30)
  betas = np.array([0.5, 1.0])[None, :, None, None]
  scale = np.array([1.0, 3.0])[:, None, None, None]
  t = np.arange(1, T + 1)
  cum = scale * t ** ((betas + 1) / (betas + 2)) * rng.uniform(0.9, 1.1, (2, 2, 5, 1))
  per_step = np.diff(cum, axis=-1, prepend=0.0).astype(np.float32)
  rec.add(0, slice(0, 5), 1, per_step[0])
  rec.add(1, slice(0, 5), 1, per_step[1])
  return results_lib.from_records(grid, np.arange(5), rec, rec.data)


def test_save_and_load_round_trip_with_named_axes(tmp_path):
  for record in ("steps", "log", "summary"):
    res = fake_results(record)
    d = tmp_path / record
    d.mkdir()
    res.save(d)
    (d / "config.toml").write_text('family = "rlhf"\n[env]\nname = "example1"\n')
    back = results_lib.load(d)
    assert back.axes == ("agent", "beta", "seed", "step")
    np.testing.assert_array_equal(back.coords["agent"], ["algorithm1", "vpo"])
    np.testing.assert_array_equal(back.cumulative, res.cumulative)
    assert (back.regret is not None) == (record == "steps")
    assert back.config["env"]["name"] == "example1"
    index = json.loads((d / "results.json").read_text())
    assert index["arrays"][back.regret is not None and "regret" or "cumulative"]["axes"] == list(back.axes)
    with np.load(d / "results.npz") as f:                     # readable without rbx
      np.testing.assert_array_equal(f["coord.beta"], [0.5, 1.0])
  sub = back.sel(agent="vpo", beta=1.0)
  assert sub.axes == ("seed", "step") and sub.final().shape == (5,)
  with pytest.raises(ValueError, match="did you mean 'beta'"):
    back.sel(btea=1.0)
  with pytest.raises(FileNotFoundError, match="not an rbx run directory"):
    results_lib.load(tmp_path)


def test_summary_mean_std_and_student_t_interval():
  res = fake_results()
  rows = res.summary()
  assert [(r["agent"], r["beta"]) for r in rows] == [
      ("algorithm1", 0.5), ("algorithm1", 1.0), ("vpo", 0.5), ("vpo", 1.0)]
  final = res.final()[1, 0]
  lo, hi = scipy.stats.t.interval(0.95, df=4, loc=final.mean(), scale=scipy.stats.sem(final))
  r = rows[2]
  assert r["n"] == 5 and r["mean"] == pytest.approx(final.mean())
  assert r["std"] == pytest.approx(final.std(ddof=1))
  assert (r["ci_low"], r["ci_high"]) == (pytest.approx(lo, rel=1e-4), pytest.approx(hi, rel=1e-4))
  for df in (1, 7, 29, 30, 31, 60, 500):
    assert results_lib.t_quantile_975(df) == pytest.approx(scipy.stats.t.ppf(0.975, df), abs=1e-3)


def test_fitted_slope_recovers_the_exponent_and_plots_and_report_are_written(tmp_path):
  res = dataclasses.replace(fake_results(), config={"family": "rlhf", "env": {"name": "example1"}})
  t = res.coords["step"]
  mean = res.cumulative.mean(axis=-2)
  for j, beta in enumerate((0.5, 1.0)):
    assert results_lib.scaling_slope(t, mean[0, j]) == pytest.approx((beta + 1) / (beta + 2), abs=0.01)
  assert paper_exponent(res, {"beta": 1.0}) == pytest.approx(2 / 3)
  reference = report.reference_exponent(res)           # the family's hook: rlhf's exponent
  assert reference({"beta": 1.0}) == pytest.approx(2 / 3)
  figures = plots.plot_all(res, tmp_path / "plots", reference)
  assert set(figures) == {"cumulative", "scaling", "heatmap"}
  for png, svg in figures.values():
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and b"<svg" in svg.read_bytes()[:2000]
  text = report.markdown(res, {k: v[0].relative_to(tmp_path) for k, v in figures.items()},
                         reference)
  assert "![cumulative regret](plots/cumulative.png)" in text and "(β+1)/(β+2)" in text
  assert "| vpo | 1.0 | 5 |" in text and "0.667" in text


def test_checkpoints_detect_truncation_and_corruption(tmp_path):
  path = tmp_path / "checkpoint.npz"
  arrays = {"a": np.arange(1000, dtype=np.float32), "b": np.ones((3, 4), np.int32)}
  checkpoint.save(path, arrays, {"t": 1})
  checkpoint.save(path, {**arrays, "a": arrays["a"] + 1}, {"t": 2})
  got, meta = checkpoint.load(path)
  assert meta == {"t": 2} and np.array_equal(got["a"], arrays["a"] + 1)
  assert checkpoint.load(checkpoint.previous(path))[1] == {"t": 1}
  assert not list(tmp_path.glob("*.tmp"))

  blob = path.read_bytes()
  path.write_bytes(blob[: len(blob) - 100])
  with pytest.raises(checkpoint.CheckpointError, match="truncated or corrupt"):
    checkpoint.load(path)
  # a flipped byte inside an array's data: the zip CRC or the checksum catches it
  i = blob.index(np.float32(500 + 1).tobytes())
  path.write_bytes(blob[:i] + bytes([blob[i] ^ 1]) + blob[i + 1:])
  with pytest.raises(checkpoint.CheckpointError, match="corrupt"):
    checkpoint.load(path)
  arrays_, meta_, problems = checkpoint.load_latest(path)
  assert meta_ == {"t": 1} and "corrupt" in problems[0]
  # a well-formed file whose contents were changed after writing fails the checksum
  np.savez(path, a=np.zeros(3), __meta__=np.frombuffer(b'{"t": 2, "sha256": "0"}', np.uint8))
  with pytest.raises(checkpoint.CheckpointError, match="fails its checksum"):
    checkpoint.load(path)
  checkpoint.previous(path).unlink()
  with pytest.raises(checkpoint.CheckpointError, match="no good checkpoint"):
    checkpoint.load_latest(path)


def test_exports_to_a_tidy_dataframe_and_an_xarray_dataset():
  for record in ("steps", "log"):
    res = fake_results(record)
    df = res.to_dataframe()
    assert list(df.columns[:4]) == ["agent", "beta", "seed", "step"]
    assert len(df) == res.cumulative.size and ("regret" in df) == (record == "steps")
    row = df[(df.agent == "vpo") & (df.beta == 1.0) & (df.seed == 3)].iloc[-1]
    assert row.cumulative == pytest.approx(res.sel(agent="vpo", beta=1.0, seed=3).final())
    ds = res.to_xarray()
    assert ds["cumulative"].dims == res.axes
    np.testing.assert_array_equal(ds["cumulative"].sel(agent="algorithm1", beta=0.5).values,
                                  res.sel(agent="algorithm1", beta=0.5).cumulative)
    assert list(ds["step"].values) == list(res.coords["step"])
