"""Sweep configs: malformed ones are rejected before anything compiles, each with a message
naming the key; good ones give the grid, seeds and options they say."""
import gzip
import re
import os
from pathlib import Path

import numpy as np
import pytest

from helpers import toy_data
from rbx import cli, data, neural, rlhf
from rbx.runs import config, config_keys
from rbx.core import registry

CONFIGS = Path(__file__).parents[2] / "configs"
DATASETS = Path(__file__).parents[3] / "shared" / "datasets"


def make(top="", env='name = "example1"\nbeta = 0.5', agent='name = "vpo"\nalpha = 1.0', grid="",
         extra=""):
  head = top if top.startswith("family") or "family" in top else f'family = "rlhf"\n{top}'
  if "seeds" not in head:
    head += "\nseeds = 2"
  if "steps" not in head:
    head += "\nsteps = 10"
  return f"{head}\n[env]\n{env}\n[agent]\n{agent}\n[grid]\n{grid}\n{extra}"


MALFORMED = [
    (make(top="stpes = 10"), r"config key='stpes' .* \(did you mean 'steps'\?\)"),
    ('seeds = 2\nsteps = 10\n[env]\nname = "example1"', r"needs family"),
    (make(top='family = "rlfh"'), r"family='rlfh' .* \(did you mean 'rlhf'\?\)"),
    (make(top="steps = 0"), r"config steps must be an integer >= 1, got 0"),
    (make(top='steps = "100"'), r"config steps must be an integer, got '100'"),
    (make(top="seeds = []"), r"config seeds must be an integer >= 1 or a non-empty list"),
    (make(top="seeds = [1, 1]"), r"config seeds has repeated seeds"),
    (make(top="seeds = true"), r"config seeds must be an integer >= 1 or a non-empty list"),
    (make(top='seeds = "4:2"'), r'config seeds must be .* or "START:STOP" \(half-open, integers '
                                r"0 <= START < STOP\), got '4:2'"),
    (make(top='seeds = "0:10:2"'), r"config seeds must be .*, got '0:10:2'"),
    (make(top='record = "all"'), r"record='all' is not one of \['steps', 'log', 'summary'\]"),
    (make(top="log_points = 1"), r"config log_points must be an integer >= 2"),
    (make(env='name = "exmaple1"'), r"env.name='exmaple1' .* \(did you mean 'example1'\?\)"),
    (make(env='name = "example1"\nbtea = 0.5'), r"env key='btea' .* \(did you mean 'beta'\?\)"),
    (make(env='name = "example1"\nbeta = "high"'), r"config env.beta must be a number, got 'high'"),
    (make(env='name = "example1"\nbeta = -1.0'), r"config env.beta: beta must be finite and >= 0"),
    (make(env='name = "example1"\np = 0.3'), r"config env.p: p must lie in \[0, 1/4\)"),
    (make(grid="r_max = []"), r"config grid.r_max must be a non-empty list of values, got \[\]"),
    (make(grid="r_max = 4.0"), r"config grid.r_max must be a non-empty list of values, got 4.0"),
    (make(grid="r_max = [4.0, 4.0]"), r"config grid.r_max has repeated values"),
    (make(grid="r_max = [4.0, -1.0]"),
     r"config grid.r_max at grid point \{'r_max': -1.0\}: r_max must be finite and > 0"),
    (make(grid="beta = [0.5, 1.0]"), r"config grid.beta is already set in \[env\]; set it once"),
    (make(agent="alpha = 1.0", grid='agent = ["vpo", "vpoo"]'),
     r"grid.agent\[1\]='vpoo' .* \(did you mean 'vpo'\?\)"),
    (make(agent="alpha = 1.0"), r"config needs an agent"),
    (make(agent='name = "vpo"\nalpah = 1.0'), r"agent key='alpah' .* \(did you mean 'alpha'\?\)"),
    (make(extra="[agent.solver]\nstrats = 4"), r"agent.solver key='strats' .* 'starts'"),
    (make(agent='name = "algorithm1"\nschedule = "power"\nn = 0.5'),
     r"nu=\? is needed by schedule 'power'"),
    (make(agent='name = "algorithm1"\nschedule = "prop3"'),
     r"schedule='prop3' .*"),
    (make(agent='name = "vpo"', grid="pi_cal = [[1.0, 0.0, 0.0]]"),
     r"config grid.pi_cal: pi_cal is a vector and cannot be swept"),
    ('family = "rlhf"\nseeds = 2\nsteps = 10\nenv = 3\n[agent]\nname = "vpo"',
     r"config \[env\] must be a table, got 3"),
    (make(top="seed_batch = 0"), r"config seed_batch must be an integer >= 1, got 0"),
    ("family = \n", r"config is not valid TOML"),
    ('family = "neural"\nseeds = 1\nsteps = 5\n[env]\nname = "synthetic"\n[agent]\n'
     'name = "rbmle_pc"\nwidth = 31', r"config agent.width: width"),
    ('family = "neural"\nseeds = 1\nsteps = 5\n[env]\nname = "classification"\n'
     'dataset = "no_such_set"\ndata_dir = "/nonexistent"\n[agent]\nname = "neural_ucb"',
     r"config \[env\] classification: data set 'no_such_set' not found"),
    ('family = "neural"\nseeds = 1\nsteps = 5\n[env]\nname = "synthetic"\n[agent]\n'
     'name = "neural_ucb"\nalpha = 1.0', r"agent key='alpha' is not one of"),
]


@pytest.mark.parametrize("text,message", MALFORMED, ids=[f"bad{i}" for i in range(len(MALFORMED))])
def test_malformed_configs_name_the_key(text, message):
  with pytest.raises(config.ConfigError, match=message):
    config.loads(text)


def test_a_good_config_gives_its_grid_seeds_and_options():
  c = config.loads(make(top='seeds = [3, 5, 7]\nsteps = 40\nchunk = 16\nrecord = "log"',
                        agent="alpha = 1.0", grid='agent = ["vpo", "xpo"]\nr_max = [3.0, 4.0]'),
                   out="runs/x")
  options = c.sweep_options()
  np.testing.assert_array_equal(c.seeds, [3, 5, 7])
  assert list(c.grid) == ["agent", "r_max"]
  assert c.static() == ["agent"] and options["static"] == ["agent"]      # r_max is traced
  assert (options["chunk"], options["record"], c.out, c.steps) == (16, "log", "runs/x", 40)
  assert c.digest() == config.loads(c.text, out="elsewhere").digest()
  assert c.digest() != config.loads(c.text.replace("steps = 40", "steps = 41")).digest()


def test_seeds_as_a_half_open_range_like_a_python_slice():
  for given, seeds in (('"1000:1003"', [1000, 1001, 1002]), ('":2"', [0, 1])):
    np.testing.assert_array_equal(config.loads(make(top=f"seeds = {given}")).seeds, seeds)


def test_integer_sizes_in_a_grid_are_static():
  c = config.loads('family = "neural"\nseeds = 1\nsteps = 5\n[env]\nname = "synthetic"\n'
                   '[agent]\nname = "neural_ucb"\n[grid]\nwidth = [16, 32]\nnu = [0.1, 1]')
  assert c.static() == ["width"]                     # nu is traced
  assert c.param("width").static and not c.param("nu").static


@pytest.mark.parametrize("name", sorted(p.name for p in CONFIGS.glob("*.toml")))
def test_shipped_configs_are_valid(name, monkeypatch):
  if "neural_mushroom" in name:
    if not (DATASETS / "mushroom.csv.gz").exists():
      pytest.skip("the shared data sets are not here")
    monkeypatch.setenv("RBX_DATA_DIR", str(DATASETS))
  c = config.load(CONFIGS / name)
  assert c.out == os.path.join("runs", name[:-5])


def test_a_chunk_longer_than_the_run_is_one_chunk():
  assert config.loads(make(top="chunk = 20")).chunk == 10


def test_overrides_are_written_into_the_config_text():
  text = make(grid="r_max = [3.0, 4.0]")
  c = config.loads(config.override(text, {"seeds": 3, "steps": 7, "agent.alpha": 2.0,
                                          "grid.r_max": [5.0], "agent.solver.starts": 4}))
  assert (c.seeds.tolist(), c.steps, c.fixed["alpha"], c.grid) == ([0, 1, 2], 7, 2.0,
                                                                   {"r_max": [5.0]})
  assert "starts = 4" in c.text and "steps = 7" in c.text           # what config.toml records
  assert config.parse_setting("grid.alpha=[1, 3]") == ("grid.alpha", [1, 3])
  assert config.parse_setting("agent.name=vpo") == ("agent.name", "vpo")
  with pytest.raises(config.ConfigError, match="KEY=VALUE"):
    config.parse_setting("steps")


def test_effective_values_include_the_constructors_defaults():
  c = config.loads(make(env='name = "example1"', agent='name = "vpo"',
                        extra="[agent.solver]\nstarts = 4", grid="r_max = [3.0, 4.0]"))
  effective = c.effective
  assert effective["env"] == {"name": "example1", "p": 0.0, "beta": 0.5,    # r_max is swept
                              "learner_r_max": None}                         # None: r_max
  vpo = effective["agent"]["vpo"]
  assert vpo["alpha"] == 1.0 and vpo["pi_cal"] is None
  assert vpo["solver"]["starts"] == 4 and vpo["solver"]["iterations"] == 10   # completed


def test_effective_values_include_defaults_passed_through_kwargs():
  # neural agents take their training settings as **training: their defaults are recorded too
  c = config.loads('family = "neural"\nseeds = 1\nsteps = 5\n[env]\nname = "synthetic"\n'
                   '[agent]\nname = "neural_ucb"\nwidth = 16')
  ucb = c.effective["agent"]["neural_ucb"]
  assert ucb["width"] == 16 and ucb["train_steps"] == 10 and ucb["batch_size"] is None
  assert ucb["scaling"] == "mean" and ucb["form"] == "paper" and ucb["nu"] == 0.1


def test_a_config_names_a_data_set_and_the_environment_gets_its_arrays(tmp_path):
  # the neural family takes arrays; the config layer reads the data set it names (issue 29)
  X, y = toy_data()
  path = tmp_path / "toy.csv.gz"
  with gzip.open(path, "wt") as f:
    f.write("a,b,c,d,e,f,cls\n")
    for row, label in zip(X, y):
      f.write(",".join(f"{v:.6f}" for v in row) + f",c{label}\n")
  head = 'family = "neural"\nseeds = 1\nsteps = 5\n[env]\nname = "classification"\n'
  agent = '[agent]\nname = "neural_ucb"\nnu = 0.5\nwidth = 8\n'
  c = config.loads(f'{head}dataset = "{path}"\nlabel = "cls"\n{agent}')
  np.testing.assert_array_equal(c.fixed["features"], data.load(path, label="cls").features)
  env, built = c.build()
  assert env.spec == neural.Spec(6, 3, 3) and built.name == "neural_ucb"
  assert c.effective["env"] == {"name": "classification", "dataset": str(path), "label": "cls",
                                "num_arms": None, "data_dir": None, "bad_cells": "error",
                                "bad_cells_by_column": None, "categorical": "onehot"}
  lists = "features = [[1.0, 0.0], [0.0, 1.0]]\nlabels = [0, 1]\n"
  assert config.loads(head + lists + agent).build()[0].num_arms == 2     # arrays given as lists
  for env_keys, grid, message in [
      ("", "", r"config \[env\] classification needs dataset = a data set name"),
      (f'dataset = "{path}"\n' + lists, "", r"config \[env\] features: set either dataset"),
      ('label = "cls"\n', f'[grid]\ndataset = ["{path}"]', r"config grid.dataset: the data set "
       r"is read once per config"),
  ]:
    with pytest.raises(config.ConfigError, match=message):
      config.loads(head + env_keys + agent + grid)


def test_a_sweep_too_big_for_the_machine_is_a_config_error_naming_the_bytes():
  with pytest.raises(config.ConfigError, match=r"needs about .* bytes\) of host memory but .* "
                     r"is available .*record = \"log\" or \"summary\""):
    config.loads(make(top="seeds = 1000000000\nsteps = 1000"))


def test_the_default_seed_batch_is_the_familys_for_the_largest_problem():
  # rlhf: 16 seeds a batch, fewer where seeds × |X| × A² would pass 2^16; a grid over the size
  # takes the smallest batch; a given seed_batch is kept.
  random = 'name = "random_instance"\nnum_prompts = 1\nnum_actions = 10'
  sized = lambda A, top="": config.loads(make(top=top, env=random.replace("10", str(A)),
                                              agent='name = "greedy"'))
  assert [sized(A).seed_batch for A in (3, 10, 64, 65, 100, 200)] == [16, 16, 16, 8, 4, 1]
  assert sized(50).seed_batch_reason == "cpu cache rule: seeds × |X| × A² ≤ 2^16"
  given = sized(50, top="seed_batch = 64")
  assert (given.seed_batch, given.seed_batch_reason) == (64, "set by the user")
  grid = config.loads(make(env='name = "random_instance"\nnum_prompts = 1', agent='name = "greedy"',
                           grid="num_actions = [10, 100]"))
  assert grid.seed_batch == 4
  prompts = config.loads(make(env='name = "random_instance"\nnum_prompts = 100\nnum_actions = 10',
                              agent='name = "greedy"'))
  assert prompts.seed_batch == 4


def test_an_unregistered_agent_says_how_to_register_ones_own(tmp_path):
  with pytest.raises(config.ConfigError, match=r"agent.name='my_mix' is not one of \[.*\]; an "
                     r"agent of one's own is registered by a module of yours: rbx run --import "
                     r"my_agents.py, or import = \[\"my_agents.py\"\] in the config"):
    config.loads(make(agent='name = "my_mix"'))
  (tmp_path / "empty.py").write_text("")
  with pytest.raises(config.ConfigError, match=r"grid.agent\[0\]='my_mix' is not one of .*; the "
                     r"modules in import = \[.*empty.py'\] do not register 'my_mix'"):
    config.loads(make(top=f'import = ["{tmp_path / "empty.py"}"]', agent="alpha = 1.0",
                      grid='agent = ["my_mix"]'))


def test_a_name_of_the_other_family_says_which_family_has_it():
  with pytest.raises(config.ConfigError, match=r"config agent.name: 'neural_ucb' is an agent of "
                     r"family 'neural', not of the config's family 'rlhf', whose agents are "
                     r"\['tabular/algorithm1', .*\]; to run 'neural_ucb', set family = 'neural'"):
    config.loads(make(agent='name = "neural_ucb"'))
  with pytest.raises(config.ConfigError, match=r"config grid.agent\[1\]: 'xpo' is an agent of "
                     r"family 'rlhf', not of the config's family 'neural'"):
    config.loads(make(top='family = "neural"', env='name = "synthetic"', agent="",
                      grid='agent = ["neural_ucb", "xpo"]'))
  with pytest.raises(config.ConfigError, match=r"config env.name: 'example1' is an environment "
                     r"of family 'rlhf', not of the config's family 'neural', whose environments "
                     r"are \['synthetic', 'classification'\]; to run 'example1', set family = 'rlhf'"):
    config.loads(make(top='family = "neural"', agent='name = "neural_ucb"'))
  with pytest.raises(ValueError, match=r"agent='neural_ucb' is an agent of family 'neural', not "
                     r"'rlhf' \(rbx.neural.get\('neural_ucb'\)\)"):
    rlhf.get("neural_ucb")


def test_the_config_keys_page_is_complete_and_up_to_date(capsys):
  page = (CONFIGS.parent / config_keys.PAGE).read_text()
  assert config_keys.reference() == page, f"regenerate it: rbx keys > {config_keys.PAGE}"
  assert cli.main(["keys"]) == 0 and capsys.readouterr().out == page
  run = page.split("## Run keys")[1].split("\n## ")[0]
  assert all(f"| `{key}` |" in run for key in config.RUN_KEYS)
  for family in registry.FAMILIES.values():
    for what, entries in (("Environment", family.envs), ("Agent", family.agents)):
      for entry in entries.values():
        if entry.make.__module__.startswith("rbx."):
          section = page.split(f"### {what} `{entry.name}`\n")[1].split("\n### ")[0]
          missing = [k for k in entry.params if f"| `{k}` |" not in section]
          assert not missing, (entry.name, missing)
  assert "| `p` | real in [0, 1] | `0.8` |" in page              # bootstrapped_nn's: range
  assert "| `chunk` | integer | `1000` |" in page and "| `steps` | integer | required |" in page


def test_a_configs_paths_are_relative_to_its_folder(tmp_path, monkeypatch):
  X, y = toy_data()
  folder = tmp_path / "configs"
  (folder / "data").mkdir(parents=True)
  with gzip.open(folder / "data" / "toy.csv.gz", "wt") as f:
    f.write("a,b,c,d,e,f,label\n")
    f.writelines(",".join(f"{v:.6f}" for v in row) + f",{label}\n" for row, label in zip(X, y))
  monkeypatch.chdir(tmp_path)                   # elsewhere than the config
  head = ('family = "neural"\nseeds = 1\nsteps = 5\n[agent]\nname = "neural_ucb"\nwidth = 8\n'
          '[env]\nname = "classification"\n')
  cfg = folder / "sweep.toml"
  for env in ('dataset = "data/toy.csv.gz"',                  # a path, from the config's folder
              'dataset = "toy"\ndata_dir = "data"'):           # a name, in a relative data_dir
    cfg.write_text(head + env)
    c = config.load(cfg)
    np.testing.assert_array_equal(c.fixed["features"], data.load(folder / "data" / "toy.csv.gz").features)
    recorded = c.effective["env"]
    assert recorded["dataset"] in ("toy", str(folder / "data" / "toy.csv.gz"))   # absolute path
    assert recorded["data_dir"] in (None, str(folder / "data"))
  cfg.write_text(head + 'dataset = "data/missing.csv"')
  with pytest.raises(config.ConfigError, match=f"data file '{folder / 'data' / 'missing.csv'}' "
                     "does not exist"):
    config.load(cfg)
  cfg.write_text('import = ["mine.py"]\n' + head + 'dataset = "toy"')
  with pytest.raises(config.ConfigError, match=f"no such file '{folder / 'mine.py'}'"):
    config.load(cfg)


DOCUMENTED = [(page.name, block) for page in sorted([*(CONFIGS.parent / "docs").glob("*.md"),
                                                    CONFIGS.parent / "README.md"])
              for block in re.findall(r"```toml\n(.*?)```", page.read_text(), re.S)]


@pytest.mark.parametrize("page,block", DOCUMENTED, ids=[p for p, _ in DOCUMENTED])
def test_documented_configs_are_valid(page, block):
  assert "family" in block, f"a TOML block of {page} that is not a whole config"
  config.loads(block)                          # validated, every grid point built; not run
