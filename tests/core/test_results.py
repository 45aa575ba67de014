"""Results on disk: the loader returns labelled arrays, summaries give mean/std/95% CI, plots
and the report are written (readable labels, CI bands only from 3 seeds, the paper's exponent
only for its schedule, partial runs labelled, --out for a read-only run); checkpoints detect
truncation and corruption."""
import dataclasses
import errno
import json
import os
import tempfile

import numpy as np
import pytest
import scipy.stats

import rbx

from matplotlib.figure import Figure

from rbx import cli
from rbx.core import grid as grid_lib
from rbx.core import plots
from rbx.core import results as results_lib
from rbx.core.grid import Grid
from rbx.core.record import Recorder
from rbx.rlhf.analysis import paper_exponent
from rbx.runs import checkpoint, report, store


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
    rbx.save(res, d)
    (d / "config.toml").write_text('family = "rlhf"\n[env]\nname = "example1"\n')
    back = store.load(d)
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
    store.load(tmp_path)


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


PROPOSITION3 = {"family": "rlhf", "title": "Fake sweep", "steps": 400,
                "env": {"name": "random_instance"},
                "agent": {"schedule": "proposition3", "schedule_kappa": 1.0}}


def test_fitted_slope_recovers_the_exponent_and_plots_and_report_are_written(tmp_path):
  res = dataclasses.replace(fake_results(), config=PROPOSITION3)
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
  assert "| vpo | 1 | 5 |" in text and "0.667" in text


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


def test_the_paper_exponent_only_beside_runs_of_its_schedule():
  res = fake_results()
  constant = dataclasses.replace(res, config={**PROPOSITION3, "agent": {"alpha": 3.0}})
  assert paper_exponent(constant, {"beta": 0.5}) is None            # constant α: no claim
  assert paper_exponent(constant, {"beta": 0.5, "schedule": "proposition3"}) == pytest.approx(0.6)
  appendix_e = dataclasses.replace(res, config={**PROPOSITION3,
                                                "agent": {"schedule": "appendix_e"}})
  assert paper_exponent(appendix_e, {"beta": 1.0}) == pytest.approx(3 / 5)
  default_beta = dataclasses.replace(res, config=PROPOSITION3,     # β the env's default
                                     metadata={"effective": {"env": {"beta": 0.5}}})
  assert paper_exponent(default_beta, {"agent": "vpo"}) == pytest.approx(0.6)
  neural = dataclasses.replace(res, config={"family": "neural", "env": {"name": "synthetic"}})
  for run in (constant, neural):
    text = report.markdown(run, {"scaling": "plots/scaling.png"}, report.reference_exponent(run))
    assert "## Regret against T" in text and "paper" not in text and "—" not in text
  text = report.markdown(dataclasses.replace(res, config=PROPOSITION3), {"scaling": "s.png"},
                         report.reference_exponent(dataclasses.replace(res, config=PROPOSITION3)))
  assert "| slope | paper exponent |" in text and "| 0.600 |" in text


def test_plots_read_like_a_paper_figure():
  res = dataclasses.replace(fake_results(), config=PROPOSITION3)
  assert plots.label({"agent": "algorithm1", "alpha": 3.0, "r_max": 4.0}) == (
      "Algorithm 1, α = 3, r_max = 4")
  assert plots.label({"agent": "neural_ucb", "nu": 0.1}) == "NeuralUCB, ν = 0.1"
  assert plots.cumulative(res).axes[0].get_title().endswith(
      "cumulative regret, median and 10–90% range over 5 seeds")        # the default band
  ax = plots.cumulative(res, log=True, band="ci").axes[0]
  assert ax.get_title() == ("Fake sweep\nκ = 1, α_t: proposition3\ncumulative regret, mean "
                            "and 95% CI over 5 seeds")         # lines as wide as the axes
  # a colour per agent, a line style per β, and a legend of each
  assert [t.get_text() for t in ax.get_legend().get_texts()] == ["Algorithm 1", "VPO", "β = 0.5",
                                                                 "β = 1"]
  assert [(l.get_color(), l.get_linestyle()) for l in ax.lines if l.get_linewidth() > 1] == [
      ("C0", "-"), ("C0", "--"), ("C1", "-"), ("C1", "--")]
  assert ax.get_yscale() == "log" and len(ax.collections) == 4       # a CI band per line
  edges = [l for l in ax.lines if l.get_linewidth() < 1]             # each edged in its style
  assert [(l.get_color(), l.get_linestyle()) for l in edges[:4]] == [("C0", "-")] * 2 + [
      ("C0", "--")] * 2
  one_beta = dataclasses.replace(res.sel(beta=0.5), config={       # one exponent: said once
      **PROPOSITION3, "env": {"name": "random_instance", "beta": 0.5}})
  ax = plots.scaling(one_beta, reference=report.reference_exponent(one_beta)).axes[0]
  legend = [t.get_text() for t in ax.get_legend().get_texts()]
  assert legend == ["Algorithm 1: slope 0.60", "VPO: slope 0.60",
                    "dashed: the paper's exponent 0.60"]
  legend = [t.get_text() for t in plots.scaling(res, reference=report.reference_exponent(res))
            .axes[0].get_legend().get_texts()]
  assert legend[0] == "Algorithm 1, β = 0.5: slope 0.60 (paper 0.60)"   # exponents differ
  assert legend[-1] == "dashed: the paper's exponent"
  fig = plots.heatmap(res)
  texts = {t.get_text(): t.get_color() for t in fig.axes[0].texts}
  final = res.final().mean(-1)
  assert texts[f"{final.min():.1f}"] == "white" and texts[f"{final.max():.1f}"] == "black"
  assert sorted(texts) == sorted(f"{v:.1f}" for v in final.reshape(-1))    # one format
  assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["Algorithm 1", "VPO"]
  title = "Fake sweep\nκ = 5, r_max = 7; α = 3 · mean R(T) over 5 seeds"     # β: the grid's
  example2 = {"title": "Fake sweep", "env": {"name": "example2", "kappa": 5.0, "beta": 0.1,
                                             "r_max": 7.0}, "agent": {"alpha": 3.0}}
  assert plots.heatmap(dataclasses.replace(res, config=example2))._suptitle.get_text() == title
  greedy = dataclasses.replace(res, coords={**res.coords, "agent": np.array(["algorithm1",
                                                                            "greedy"])})
  mixed = {**example2, "family": "rlhf", "title": "A title much longer than the axes of a "
           "figure seven inches wide"}                        # greedy takes no α: α named
  assert plots.setting(dataclasses.replace(greedy, config=mixed)) == (
      "κ = 5, r_max = 7; α = 3 (Algorithm 1)")
  assert plots.setting(dataclasses.replace(res, config={**mixed, "family": "rlhf"})).endswith(
      "α = 3")                                                # every agent takes it
  text = plots.scaling(dataclasses.replace(greedy, config=mixed)).axes[0].get_title()
  assert max(map(len, text.splitlines())) <= plots.TITLE_WIDTH and len(text.splitlines()) == 4


def test_ci_bands_are_clipped_at_zero_and_omitted_below_three_seeds():
  t = np.arange(1, 11)
  rng = np.random.default_rng(0)
  ax = Figure().subplots()
  plots.band(ax, t, rng.exponential(0.1, (2, 10)), kind="ci")
  assert not ax.collections                                          # 2 seeds: no band
  plots.band(ax, t, np.r_[np.zeros((4, 10)), np.ones((1, 10))], kind="ci")   # t-interval: < 0
  (band,) = ax.collections
  assert band.get_paths()[0].vertices[:, 1].min() == 0.0             # never below 0
  plots.band(ax, t, rng.normal(0.1, 1.0, (5, 10)), kind="ci")        # negative data: unclipped
  assert ax.collections[1].get_paths()[0].vertices[:, 1].min() < 0
  full = fake_results()
  two = dataclasses.replace(full, coords={**full.coords, "seed": np.arange(2)},
                            recorded=full.recorded[..., :2, :])
  ax = plots.cumulative(two, band="ci").axes[0]
  assert not ax.collections and "mean over 2 seeds (no CI below 3 seeds)" in ax.get_title()


def interrupted(res):
  """`res` as an interrupted run left it: the first agent done, the second at step 100 for
  seeds 0-2 of 5 (seed blocks of 3), NaN beyond."""
  data = res.recorded.copy()
  steps = res.coords["step"]
  data[1, :, :3, steps > 100] = np.nan
  data[1, :, 3:] = np.nan
  return dataclasses.replace(res, recorded=data, complete=False,
                             config={**PROPOSITION3, "steps": int(steps[-1])})


def test_an_interrupted_run_is_reported_as_far_as_it_got(tmp_path):
  cut = report.partial(interrupted(fake_results()))
  assert cut.coords["step"][-1] <= 100 < fake_results().coords["step"][-1]
  assert cut.coords["seed"].tolist() == [0, 1, 2] and np.isfinite(cut.recorded).all()
  assert plots.partial_label(cut) == f"partial: step {cut.coords['step'][-1]} of 400"
  text = report.markdown(cut, {}, report.reference_exponent(cut))
  assert text.startswith(f"# Fake sweep (partial: step {cut.coords['step'][-1]} of 400)")
  assert "**Partial results**" in text and "--resume" in text
  assert "partial: step" in plots.cumulative(cut).axes[0].get_title()
  got_to = dataclasses.replace(cut, metadata={plots.REACHED: 100})   # as the bar said (record
  assert plots.partial_label(got_to) == "partial: step 100 of 400"   # "log": t=100 unrecorded)
  not_started = interrupted(fake_results())
  not_started.recorded[1] = np.nan                                   # the second agent: nothing
  cut = report.partial(not_started)
  assert cut.coords["step"][-1] == 400 and cut.coords["seed"].size == 5
  assert plots.partial_label(cut) == "partial: step 400 of 400, 2 of 4 grid points"
  assert "| vpo | 0.5 | 0 | not run yet |" in report.markdown(cut, {})
  drawn = [l for l in plots.cumulative(cut).axes[0].lines if l.get_linewidth() > 1]
  assert len(drawn) == 2                                     # only the runs that ran
  not_started.recorded[:] = np.nan
  with pytest.raises(ValueError, match="recorded nothing yet"):
    report.partial(not_started)


def test_plot_and_report_of_a_read_only_run_directory_write_to_out(tmp_path, monkeypatch, capsys):
  run = tmp_path / "run"
  rbx.save(dataclasses.replace(fake_results("summary"), config=PROPOSITION3), run)
  (run / "config.toml").write_text('family = "rlhf"\ntitle = "Fake"\n[env]\nname = "example1"\n')
  run.chmod(0o555)
  if os.geteuid() == 0:          # root writes anyway: refuse as a read-only file system would
    real = tempfile.TemporaryFile
    def read_only(*args, dir=None, **kwargs):
      if str(dir).startswith(str(run)):
        raise OSError(errno.EROFS, "Read-only file system")
      return real(*args, dir=dir, **kwargs)
    monkeypatch.setattr(tempfile, "TemporaryFile", read_only)
  try:
    for command in ("plot", "report"):
      assert cli.main([command, str(run)]) == 2
      err = capsys.readouterr().err
      assert f"rbx {command}: cannot write to {run}" in err and "--out DIR" in err
    assert cli.main(["plot", str(run), "--out", str(tmp_path / "figs"), "--log"]) == 0
    assert (tmp_path / "figs" / "cumulative.png").is_file()
    assert cli.main(["report", str(run), "--out", str(tmp_path / "rep")]) == 0
    text = (tmp_path / "rep" / "report.md").read_text()
    assert "![cumulative regret](plots/cumulative.png)" in text
    assert sorted(p.name for p in run.iterdir()) == ["config.toml", "results.json", "results.npz"]
  finally:
    run.chmod(0o755)


def test_the_bootstrap_slope_interval_covers_a_power_law_and_narrows_with_seeds():
  t = np.arange(1, 1_001, dtype=np.float64)      # 10^3 steps: a power law over 3 decades
  rng = np.random.default_rng(0)
  # every seed grows as t^0.6 with its own constant: the mean is exactly a t^0.6 curve
  same = rng.lognormal(size=(32, 1)) * t ** 0.6
  slope, lo, hi = results_lib.scaling_slope_ci(t, same)
  assert slope == pytest.approx(0.6, abs=1e-9) and lo == pytest.approx(0.6) and hi == pytest.approx(0.6)
  assert slope == pytest.approx(results_lib.scaling_slope(t, same.mean(axis=0)))

  # seeds with their own exponents (0.3 or 0.9): the interval has width, holds the point, and
  # shrinks as seeds are added; leading axes are kept
  def mixed(n):
    k = rng.choice([0.3, 0.9], size=(2, n, 1))
    return rng.lognormal(size=(2, n, 1)) * t ** k
  few, many = (results_lib.scaling_slope_ci(t, mixed(n)) for n in (16, 256))
  for slopes, lows, highs in (few, many):
    assert slopes.shape == (2,) and np.all(lows < slopes) and np.all(slopes < highs)
  assert np.all(many[2] - many[1] < few[2] - few[1])
  assert np.all(0.3 < many[1]) and np.all(many[2] < 0.9)


def tiny_results(regret, record_steps=True):
  """One agent, seeds along the first axis of `regret` (seed, step)."""
  regret = np.asarray(regret, np.float32)[None]
  coords = {"agent": np.array(["vpo"]), "seed": np.arange(regret.shape[1]),
            "step": np.arange(1, regret.shape[2] + 1)}
  if record_steps:
    return results_lib.Results(("agent", "seed", "step"), coords, regret=regret)
  return results_lib.Results(("agent", "seed", "step"), coords,
                             recorded=np.cumsum(regret, axis=-1, dtype=np.float64))


def test_the_repr_is_short_and_names_the_axes_with_a_summary():
  res = fake_results("steps")
  text = repr(res)
  assert len(text) < 800 and "np.str_" not in text and "array(" not in text
  assert text.splitlines()[0] == ("Results (agent: 2, beta: 2, seed: 5, step: 400; every step's "
                                  "regret)")
  assert "  agent  algorithm1, vpo" in text and "1, 2, 3, …, 399, 400" in text
  row = res.summary()[3]
  assert any(line.split() == ["vpo", "1", "5", f"{row['mean']:.1f}", f"{row['std']:.1f}"]
             for line in text.splitlines())
  many = results_lib.Results(("x", "seed", "step"), {"x": np.arange(20.0), "seed": np.arange(3),
                                                     "step": np.arange(1, 3)},
                             regret=np.ones((20, 3, 2), np.float32))
  assert "… 12 more grid points: res.summary()" in repr(many) and len(repr(many)) < 800


def test_save_refuses_existing_results_returns_the_path_and_load_round_trips(tmp_path):
  res = fake_results("steps")
  out = tmp_path / "saved"
  assert rbx.save(res, str(out)) == out
  with pytest.raises(FileExistsError, match="already holds results.*overwrite=True"):
    rbx.save(res, out)
  doubled = dataclasses.replace(res, regret=2 * res.regret)
  assert rbx.save(doubled, out, overwrite=True) == out
  for back in (rbx.load(out), rbx.load(str(out))):
    assert back.axes == res.axes and back.coords["agent"].tolist() == ["algorithm1", "vpo"]
    np.testing.assert_array_equal(back.regret, doubled.regret)
  with pytest.raises(FileNotFoundError, match="not an rbx run directory"):
    rbx.load(tmp_path)


def test_sel_takes_lists_and_names_values_plainly():
  res = fake_results("steps")
  sub = res.sel(beta=[1.0, 0.5], agent=["vpo"])
  assert sub.axes == res.axes and sub.coords["beta"].tolist() == [1.0, 0.5]
  assert sub.coords["agent"].tolist() == ["vpo"] and sub.regret.shape == (1, 2, 5, 400)
  np.testing.assert_array_equal(sub.regret[0, 0], res.regret[1, 1])
  np.testing.assert_array_equal(sub.regret[0, 1], res.regret[1, 0])
  np.testing.assert_array_equal(res.sel(seed=np.array([4, 0])).regret[:, :, 0], res.regret[:, :, 4])
  with pytest.raises(ValueError, match=r"^agent='vpoo' is not on the axis; its values are "
                     r"\['algorithm1', 'vpo'\] \(did you mean 'vpo'\?\)$"):
    res.sel(agent=["algorithm1", "vpoo"])
  with pytest.raises(ValueError, match=r"^beta=2.0 is not on the axis; its values are \[0.5, 1.0\]$"):
    res.sel(beta=2.0)


def test_summary_and_final_are_labelled_tables():
  res = fake_results("steps")
  final = res.final(table=True)
  assert len(final) == 2 * 2 * 5 and final.labels == ("agent", "beta", "seed")
  assert final[13] == {"agent": "vpo", "beta": 0.5, "seed": 3,
                       "final": pytest.approx(res.final()[1, 0, 3])}
  rows = res.summary()
  assert list(rows[0]) == ["agent", "beta", "n", "mean", "std", "ci_low", "ci_high", "median",
                           "q10", "q90"]
  assert rows[2]["median"] == pytest.approx(np.median(res.final()[1, 0]))
  assert rows[2]["q10"] == pytest.approx(np.quantile(res.final()[1, 0], 0.1))
  text = repr(rows).splitlines()
  assert text[0].split() == list(rows[0]) and len(text) == 5
  assert {len(line) for line in text[1:]} == {len(text[1])}           # aligned
  assert results_lib.column([99.0, 42.0, 101.2]) == ["99.0", "42.0", "101.2"]
  assert results_lib.column([0.5, 1.0], label=True) == ["0.5", "1"]
  pd = pytest.importorskip("pandas")
  assert pd.DataFrame(rows).shape == (4, 10) and final.to_dataframe()["final"].size == 20


def test_intervals_respect_non_negative_regret_and_the_report_formats_columns_alike():
  res = tiny_results([[0.0] * 4, [0.0] * 4, [0.0] * 4, [25.0] * 4])    # R(T) = 0, 0, 0, 100
  (row,) = res.summary()
  lo, hi = scipy.stats.t.interval(0.95, df=3, loc=25.0, scale=50.0 / 2)
  assert lo < 0 and row["ci_low"] == 0.0 and row["ci_high"] == pytest.approx(hi, rel=1e-3)
  res = dataclasses.replace(tiny_results([[1.0] * 3] * 3),
                            regret=np.array([33.0, 14.0, 101.2 / 3], np.float32)[:, None, None]
                            * np.ones((3, 3, 3), np.float32),
                            coords={"agent": np.array(["a", "b", "c"]), "seed": np.arange(3),
                                    "step": np.arange(1, 4)})
  text = report.markdown(res, {})
  assert "| a | 3 | 99.0 | 0.0 | [99.0, 99.0] | 99.0 | [99.0, 99.0] |" in text
  assert "| b | 3 | 42.0 |" in text and "| c | 3 | 101.2 |" in text and "clipped at 0" in text
  effective = {"env": {"name": "example2", "kappa": 500.0, "beta": 0.1},
               "agent": {"xpo": {"kappa": 500.0, "alpha": 3.0}}}
  config = {"family": "rlhf", "env": {"name": "example2", "kappa": 500.0, "beta": 0.1},
            "agent": {"alpha": 3.0}}
  text = report.markdown(dataclasses.replace(res, config=config,
                                             metadata={"effective": effective}), {})
  assert "env (kappa = 500.0, beta = 0.1); xpo (alpha = 3.0)" in text


def test_stuck_fraction_matches_a_hand_count_and_is_drawn_below_the_regret():
  regret = [[1.0, 0.6, 0.2], [0.5, 0.5, 0.5], [0.1, 0.7, 0.9], [0.0, 0.0, 0.0]]
  res = tiny_results(regret)
  np.testing.assert_allclose(res.stuck_fraction(0.5), [[2 / 4, 3 / 4, 2 / 4]])
  fig = plots.cumulative(res, stuck=0.5)
  top, low = fig.axes
  np.testing.assert_allclose(low.lines[0].get_ydata(), [0.5, 0.75, 0.5])
  assert low.get_ylabel() == "share with r_t ≥ 0.5"
  with pytest.raises(ValueError, match='record = "steps"'):
    tiny_results(regret, record_steps=False).stuck_fraction(0.5)


def test_quantile_bands_lie_within_the_data_and_plots_take_str_paths(tmp_path):
  rng = np.random.default_rng(0)
  t = np.arange(1, 21)
  stuck = rng.uniform(size=(40, 1)) < 0.3                   # bimodal: 30% stuck, the rest escape
  values = np.cumsum(np.where(stuck, 0.6, 0.05) * rng.uniform(0.5, 1.5, (40, 20)), axis=1)
  ax = Figure().subplots()
  line = plots.band(ax, t, values, kind="quantile")
  np.testing.assert_allclose(line.get_ydata(), np.median(values, axis=0))
  edge = ax.collections[0].get_paths()[0].vertices[:, 1]
  assert values.min() <= edge.min() and edge.max() <= values.max()
  np.testing.assert_allclose(edge.max(), np.quantile(values[:, -1], 0.9))
  with pytest.raises(ValueError, match="kind='iqr' is not one of"):
    plots.band(ax, t, values, kind="iqr")
  res = fake_results()
  fig = plots.cumulative(res, str(tmp_path / "x"), band="quantile")
  assert isinstance(fig, Figure) and "median and 10–90% range over 5 seeds" in fig.axes[0].get_title()
  assert (tmp_path / "x.png").is_file() and (tmp_path / "x.svg").is_file()
  ax = plots.cumulative(res, band="none").axes[0]
  assert not ax.collections and ax.get_title().endswith("mean over 5 seeds")
  for draw in (plots.scaling, plots.heatmap):
    assert isinstance(draw(res, tmp_path / "sub" / f"{draw.__name__}.pdf"), Figure)
  assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["heatmap.pdf", "scaling.pdf"]


def test_heatmap_slants_long_tick_labels_and_thins_many():
  agents = ["rbmle_pc", "rbmle_ga", "neural_ucb", "neural_ts"]
  res = results_lib.Results(("agent", "nu", "seed", "step"),
                            {"agent": np.array(agents), "nu": np.linspace(0.1, 2.0, 20),
                             "seed": np.arange(2), "step": np.arange(1, 3)},
                            regret=np.ones((4, 20, 2, 2), np.float32))
  ax = plots.heatmap(res).axes[0]
  assert ax.get_xlabel() == "agent" and ax.get_xticklabels()[0].get_rotation() == 30
  assert len(ax.get_yticks()) <= plots.MAX_TICKS


def per_agent_results():
  """Per-agent grids: Algorithm 1 alone beside VPO at α = 1 and 5 (axis "run"), 4 seeds."""
  runs = grid_lib.runs([{"agent": ["algorithm1"]}, {"agent": ["vpo"], "alpha": [1.0, 5.0]}])
  rec = Recorder("steps", 10, (3, 1, 4))
  data = np.random.default_rng(0).uniform(0, 1, (3, 4, 10)).astype(np.float32)
  for i in range(3):
    rec.add(i, slice(0, 4), 1, data[i])
  return results_lib.from_records(Grid({"run": list(runs)}), np.arange(4), rec, rec.data,
                                  runs=runs)


def test_per_agent_runs_have_their_fields_as_coordinates_columns_and_legends(tmp_path):
  res = per_agent_results()
  assert res.fields == ("agent", "alpha")
  vpo = res.sel(agent="vpo")                                  # two runs: the axis stays
  assert vpo.axes == res.axes and vpo.coords["run"].tolist() == [
      "agent=vpo, alpha=1.0", "agent=vpo, alpha=5.0"]
  np.testing.assert_array_equal(vpo.sel(alpha=5.0).regret, res.regret[2])     # one: dropped
  np.testing.assert_array_equal(res.sel(agent="algorithm1").regret, res.regret[0])
  assert res.sel(alpha=[5.0, 1.0]).coords["run"].tolist() == [
      "agent=vpo, alpha=1.0", "agent=vpo, alpha=5.0"]
  with pytest.raises(ValueError, match=r"agent='xpo' matches no run; the runs' values of agent "
                     r"are \['algorithm1', 'vpo'\]"):
    res.sel(agent="xpo")
  with pytest.raises(ValueError, match=r"did you mean 'agent'"):
    res.sel(agnet="vpo")

  df = res.to_dataframe()
  assert list(df.columns) == ["run", "agent", "alpha", "seed", "step", "regret", "cumulative"]
  assert set(df[df.agent == "vpo"].alpha) == {1.0, 5.0} and df[df.agent == "algorithm1"].alpha.isna().all()
  ds = res.to_xarray()
  assert ds["agent"].dims == ("run",) and ds["agent"].values.tolist() == ["algorithm1", "vpo", "vpo"]
  assert [(r["agent"], r["alpha"]) for r in res.summary()][1:] == [("vpo", 1.0), ("vpo", 5.0)]
  text = repr(res)
  assert "agent=algorithm1; agent=vpo, alpha=1.0; agent=vpo, alpha=5.0" in text
  assert any(line.split()[:3] == ["algorithm1", "4", f"{res.summary()[0]['mean']:.3f}"]
             for line in text.splitlines())                      # no alpha: a blank cell
  legend = plots.cumulative(res).axes[0].get_legend()
  assert [t.get_text() for t in legend.get_texts()] == ["Algorithm 1", "VPO, α = 1", "VPO, α = 5"]
  table = "\n".join(report.summary_table(res))
  assert "| algorithm1 |  | 4 |" in table and "| vpo | 5 | 4 |" in table

  rbx.save(res, tmp_path / "new")
  back = store.load(tmp_path / "new")
  assert back.runs == res.runs and back.sel(agent="vpo", alpha=1.0).final().shape == (4,)
  old = tmp_path / "old"                     # saved before "runs": read from its config's grid
  rbx.save(res, old)
  index = json.loads((old / "results.json").read_text())
  del index["runs"]
  (old / "results.json").write_text(json.dumps(index))
  (old / "config.toml").write_text('[[grid]]\nagent = ["algorithm1"]\n'
                                   '[[grid]]\nagent = ["vpo"]\nalpha = [1.0, 5.0]\n')
  assert store.load(old).runs == res.runs


def test_the_report_lists_what_every_agent_shares_once():
  solver = {"starts": 16, "iterations": 10}
  effective = {"env": {"name": "example1", "p": 0.0, "beta": 0.5},
               "agent": {"algorithm1": {"alpha": 3.0, "solver": solver, "full_solves": 2},
                         "vpo": {"alpha": 3.0, "solver": solver},
                         "greedy": {"solver": solver}}}
  res = dataclasses.replace(fake_results(), metadata={"effective": effective},
                            config={"env": {"name": "example1"}})
  line = next(l for l in report.markdown(res, {}).splitlines() if "every parameter as run" in l)
  assert line.count("starts = 16") == 1 and line.endswith(
      "env (p = 0.0, beta = 0.5); every agent (solver = (starts = 16, iterations = 10)); "
      "algorithm1 (alpha = 3.0, full_solves = 2); vpo (alpha = 3.0); greedy")
