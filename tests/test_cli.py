"""The `rbx` command as a new user meets it: help with no command, --version, bad demo sizes
refused, names with a hint, and one standard-deviation convention."""
import gzip

import numpy as np
import pytest

import rbx
from rbx import cli, data, demo, rlhf
from rbx.core import results
from helpers import example1_sweep


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


@pytest.mark.slow
def test_demo_reports_the_standard_deviation_with_ddof_1_like_the_report():
  lines = []
  res = demo.run(seeds=3, steps=4, echo=lines.append)
  assert "ddof = 1" in lines[0]
  final = res["example1"].sel(agent="vpo").final()
  row = next(l for l in lines if l.startswith("example1   vpo"))
  assert f"± {final.std(ddof=1):.1f}" in row and f"{final.mean():.1f}" in row
  assert res["example1"].summary()[1]["std"] == pytest.approx(np.std(final, ddof=1))


@pytest.mark.slow                                 # an `rbx run` end to end
def test_run_shrinks_a_config_from_the_command_line_and_records_it(tmp_path):
  cfg = tmp_path / "sweep.toml"
  cfg.write_text(example1_sweep(seeds=64, steps=500, chunk=100))
  out = tmp_path / "small"
  assert cli.main(["run", str(cfg), "--out", str(out), "--no-progress", "--seeds", "2",
                   "--steps", "3", "--set", "grid.beta=[1.0]"]) == 0
  res = results.load(out)
  assert res.regret.shape == (1, 2, 3) and res.coords["beta"].tolist() == [1.0]
  assert res.config["steps"] == 3 and res.config["seeds"] == 2     # config.toml says what ran
  with pytest.raises(SystemExit):
    cli.main(["run", "--resume", str(out), "--steps", "5"])
