"""The `rbx` command as a new user meets it: help with no command, --version, bad demo sizes
refused, names with a hint, one standard-deviation convention, a progress bar (off with a flag,
no TqdmWarning in a notebook), and a report of an interrupted run."""
import gzip
import io
import sys
import types
import warnings

import numpy as np
import pytest

import rbx
from rbx import cli, data, rlhf
from rbx.core import progress as progress_lib
from rbx.core import results
from rbx.runs import experiment, store
from helpers import TINY_SOLVER, example1_sweep


def test_bare_rbx_prints_the_help_and_version_is_there(capsys):
  assert cli.main([]) == 0
  out = capsys.readouterr().out
  assert "rbx demo" in out and "rbx run CONFIG.toml" in out and "usage: rbx" in out
  assert "`init`" not in out                                 # not a developer docstring
  with pytest.raises(SystemExit) as stop:
    cli.main(["--version"])
  assert stop.value.code == 0 and capsys.readouterr().out.strip() == f"rbx {rbx.__version__}"


@pytest.mark.parametrize("args", [["--seeds", "0"], ["--steps", "0"], ["--seeds", "-3"],
                                  ["--steps", "ten"]])
def test_demo_refuses_sizes_below_one_instead_of_running_the_defaults(args, capsys):
  with pytest.raises(SystemExit) as stop:
    cli.main(["demo", *args])
  assert stop.value.code == 2
  assert f"argument {args[0]}: must be an integer >= 1" in capsys.readouterr().err


@pytest.mark.parametrize("seeds", ["-5:10", "-5", "5:3", ":", "0:x"])
def test_run_says_what_seeds_start_stop_means(seeds, tmp_path, capsys):
  cfg = tmp_path / "sweep.toml"
  cfg.write_text(example1_sweep(seeds=2, steps=4, chunk=2))
  with pytest.raises(SystemExit) as stop:         # before anything is loaded or run
    cli.main(["run", str(cfg), "--seeds", seeds, "--out", str(tmp_path / "run")])
  err = capsys.readouterr().err
  assert stop.value.code == 2 and not (tmp_path / "run").exists()
  assert "argument --seeds: must be N (seeds 0..N-1, an integer >= 1) or START:STOP" in err
  assert "half-open" in err and "0 <= START < STOP" in err and f"got {seeds!r}" in err


def test_names_get_a_hint_whatever_their_case(tmp_path):
  with pytest.raises(ValueError, match=r"agent='VPO' is not one of .*did you mean 'vpo'"):
    rlhf.get("VPO")
  with gzip.open(tmp_path / "mushroom.csv.gz", "wt") as f:
    f.write("a,label\n1,x\n2,y\n")
  with pytest.raises(FileNotFoundError, match=r"'mushrom' not found .*did you mean 'mushroom'") as e:
    data.find("mushrom", data_dir=tmp_path)
  assert "rbx data download mushrom" not in str(e.value)     # not suggested to download as is
  with pytest.raises(FileNotFoundError, match=r"did you mean 'covertype'"):
    data.find("covertyp", data_dir=tmp_path)                 # a downloadable set, not yet here


@pytest.mark.slow                                 # an `rbx run` end to end
def test_run_shrinks_a_config_from_the_command_line_and_records_it(tmp_path):
  cfg = tmp_path / "sweep.toml"
  cfg.write_text(example1_sweep(seeds=64, steps=500, chunk=100))
  out = tmp_path / "small"
  assert cli.main(["run", str(cfg), "--out", str(out), "--no-progress", "--seeds", "2",
                   "--steps", "3", "--set", "grid.beta=[1.0]"]) == 0
  res = store.load(out)
  assert res.regret.shape == (1, 2, 3) and res.coords["beta"].tolist() == [1.0]
  assert res.config["steps"] == 3 and res.config["seeds"] == 2     # config.toml says what ran
  with pytest.raises(SystemExit):
    cli.main(["run", "--resume", str(out), "--steps", "5"])


def test_run_and_report_show_each_recorded_metric(tmp_path, capsys):
  """`rbx run`'s end-of-run summary and `rbx report` give M(T) of the weak and strong dueling
  regrets per grid point beside R(T): the mean over seeds of each metric's sum over steps."""
  cfg = tmp_path / "duel.toml"
  cfg.write_text("""family = "rlhf"
seeds = 3
steps = 8
[env]
name = "example2"
kappa = 10.0
beta = 0.5
r_max = 2.0
""" + TINY_SOLVER + """[grid]
agent = ["rucb", "algorithm1"]
""")
  out = tmp_path / "run"
  assert cli.main(["run", str(cfg), "--out", str(out), "--no-progress"]) == 0
  printed = capsys.readouterr().out
  assert cli.main(["report", str(out)]) == 0
  text = (out / "report.md").read_text()
  res = store.load(out)
  assert sorted(res.metric_names) == ["strong_regret", "weak_regret"]
  for shown in (printed, text):
    assert "## Cumulative regret R(T)" in shown and "## Recorded metrics at T" in shown
    section = shown.split("## Recorded metrics at T")[1].split("\n## ")[0]
    tables = section.split("### ")[1:]
    for table, name in zip(tables, res.metric_names):
      assert table.startswith(name)
      rows = {line.split(" | ")[0].strip("| "): line.split(" | ")
              for line in table.splitlines() if line.startswith(("| rucb", "| algorithm1"))}
      means = res.metric(name).final().mean(axis=-1)                 # (agent,)
      for agent, mean in zip(res.coords["agent"], means):
        assert float(rows[agent][2]) == pytest.approx(mean, rel=1e-3, abs=1e-3)


def test_demo_shows_the_progress_bar_unless_told_not_to(monkeypatch, capsys):
  def sweep(build, grid, seeds, steps, progress):      # the real bar around a stand-in sweep
    bar = progress_lib.Progress(len(grid["agent"]) * seeds * steps, enabled=progress)
    bar.advance(len(grid["agent"]) * seeds * steps, "done")
    bar.close()
    return results.Results(("agent", "seed", "step"), {"agent": np.array(grid["agent"]),
                           "seed": np.arange(seeds), "step": np.arange(1, steps + 1)},
                           regret=np.zeros((len(grid["agent"]), seeds, steps), np.float32))
  monkeypatch.setattr(rlhf, "sweep", sweep)
  assert cli.main(["demo", "--seeds", "2", "--steps", "4"]) == 0
  out, err = capsys.readouterr()
  assert "100%" in err and "24.0/24.0" in err and "seed-step" in err
  assert "example1   vpo" in out and "seed-step" not in out          # the table stays clean
  lines = out.splitlines()
  for example in ("example1", "example2"):                 # each table after its sweep
    at = next(i for i, line in enumerate(lines) if line.startswith(f"{example}: 3 agents in "))
    assert lines[at].endswith(" s") and lines[at + 1].split()[:2] == ["example", "agent"]
    assert [line.split()[:2] for line in lines[at + 2:at + 5]] == [
        [example, agent] for agent in ("algorithm1", "vpo", "xpo")]
  assert cli.main(["demo", "--seeds", "2", "--steps", "4", "--no-progress"]) == 0
  out, err = capsys.readouterr()                           # no bar: a plain line per sweep
  assert "\r" not in err and err.count("100%") == 2 and "example1   vpo" in out


def test_no_progress_writes_plain_lines_even_on_a_terminal():
  class Terminal(io.StringIO):
    def isatty(self):
      return True
  log = Terminal()
  bar = progress_lib.Progress(100, enabled=progress_lib.PLAIN, file=log)
  bar.compiled("chunk", 1.0)
  bar.advance(100, "t=10")
  bar.close()
  lines = log.getvalue().splitlines()
  assert "\r" not in log.getvalue() and lines[0] == "compiled chunk in 1.0s"
  assert len(lines) == 2 and "100%" in lines[1]


def test_ctrl_c_names_the_run_directory_to_resume(tmp_path, monkeypatch, capsys):
  def interrupted(*args, **kwargs):
    raise KeyboardInterrupt
  monkeypatch.setattr(experiment, "run", interrupted)
  monkeypatch.setattr(experiment, "resume", interrupted)
  cfg = tmp_path / "sweep.toml"
  cfg.write_text(example1_sweep(seeds=2, steps=4, chunk=2))
  out = tmp_path / "run"
  for argv in (["run", str(cfg), "--out", str(out)], ["run", "--resume", str(out)]):
    assert cli.main(argv) == cli.EXIT_INTERRUPTED
    assert f"continue with `rbx run --resume {out}`" in capsys.readouterr().err


def test_the_progress_bar_writes_plain_lines_off_a_terminal():
  log = io.StringIO()                                  # a redirected stderr: not a terminal
  bar = progress_lib.Progress(100, enabled=True, file=log)
  bar.compiled("chunk", 1.0)
  bar.advance(30, "t=3")                               # within PLAIN_INTERVAL: no line yet
  bar.advance(70, "t=10")                              # the end: a line
  bar.close()
  lines = log.getvalue().splitlines()
  assert "\r" not in log.getvalue() and lines[0] == "compiled chunk in 1.0s"
  assert len(lines) == 2 and "100%" in lines[1] and "t=10" in lines[1]


def test_the_progress_bar_in_a_notebook_without_ipywidgets_warns_nothing(monkeypatch):
  assert not progress_lib.shown(None)                  # pytest captures stderr: nobody watches
  kernel = types.SimpleNamespace(kernel=object())
  monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: kernel))
  monkeypatch.setitem(sys.modules, "ipywidgets", None)                # not installed
  assert progress_lib.in_notebook() and progress_lib.shown(None)
  with warnings.catch_warnings():
    warnings.simplefilter("error")                                   # a TqdmWarning would raise
    bar = progress_lib.Progress(10, enabled=None)
    bar.compiled("chunk", 0.1)
    bar.advance(10, "t=10")
    bar.close()
  assert type(bar.bar).__module__ == "tqdm.std" and not bar.notes
  assert [progress_lib.chunk_for(t) for t in (500, 201, 7, 997)] == [25, 67, 1, 997]


@pytest.mark.slow                                 # an `rbx run` stopped after its first chunk
def test_report_and_plot_of_an_interrupted_run_say_partial(tmp_path, monkeypatch, capsys):
  cfg = tmp_path / "sweep.toml"
  cfg.write_text('title = "Tiny"\n' + example1_sweep(seeds=3, steps=6, chunk=2))
  out = tmp_path / "run"
  polls = iter([False, False])      # as Ctrl-C during the first chunk (polled after the init
                                    # and chunk compiles, then after the chunk)
  monkeypatch.setattr(experiment._StopOnSignal, "__call__", lambda self: next(polls, True))
  assert cli.main(["run", str(cfg), "--out", str(out), "--no-progress"]) == cli.EXIT_INTERRUPTED
  assert cli.main(["report", str(out)]) == 0
  text = (out / "report.md").read_text()
  assert text.startswith("# Tiny (partial: step 2 of 6)") and "status **interrupted**" in text
  assert f"Continue it with `rbx run --resume {out}`." in text and "DIR" not in text
  assert "| 0.5 | 3 |" in text
  assert "## Recorded metrics at 2" in text        # the checkpoint's metrics, cut as R(t)
  assert cli.main(["plot", str(out), "--out", str(tmp_path / "figs")]) == 0
  assert (tmp_path / "figs" / "cumulative.png").is_file()
  # the cumulative plot's band and stuck panel from the command line; an unknown band refused
  assert cli.main(["plot", str(out), "--out", str(tmp_path / "ci"), "--band", "ci",
                   "--stuck", "0.5"]) == 0
  assert "share with r_t" in (tmp_path / "ci" / "cumulative.svg").read_text()
  with pytest.raises(SystemExit):
    cli.main(["plot", str(out), "--band", "iqr"])
  assert "invalid choice: 'iqr'" in capsys.readouterr().err
  meta = store.read_json(out / store.METADATA)                 # as a run still going
  store.write_json(out / store.METADATA, {**meta, "status": "running"})
  assert cli.main(["report", str(out)]) == 0
  text = (out / "report.md").read_text()
  assert "the run is still running" in text and "status **running**" in text


def test_the_command_compiles_with_one_frame_an_op_unless_the_environment_says():
  import jax
  import jax.numpy as jnp
  from rbx import cli

  def frames():
    """The call-site frames in a freshly traced program's locations."""
    def inner(x):
      return jnp.sin(x) * 2.0

    def outer(x):
      return inner(x) + 1.0
    return jax.jit(outer).lower(1.0).as_text(debug_info=True).count("callsite(")

  setting = "jax_include_full_tracebacks_in_locations"
  before = getattr(jax.config, setting)
  try:
    jax.config.update(setting, True)
    cli.compact_locations({cli.LOCATIONS: "1"})               # the user's setting stands
    full = frames()
    assert getattr(jax.config, setting) and full > 0
    cli.compact_locations({})
    assert not getattr(jax.config, setting) and frames() < full
  finally:
    jax.config.update(setting, before)
