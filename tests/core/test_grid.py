"""Per-agent grids (a list of sub-grids) run as a grid does: the runs of one agent are one
program, vmapped over their numeric fields, bit for bit the rectangular grid's runs."""
import numpy as np

from rbx import rlhf
from rbx.core import grid as grid_lib
from rbx.core import sweep as sweep_lib


def build(agent, alpha=1.0):
  env = rlhf.example1(p=0.2, beta=0.5, r_max=2.0)
  return env, (rlhf.get(agent) if agent == "greedy" else rlhf.get(agent, alpha=alpha))


def test_the_runs_of_one_agent_share_a_program_and_equal_the_rectangular_grid():
  # VPO's three α from two sub-grids, greedy between them: two programs, runs in the order given
  grid = [{"agent": ["vpo"], "alpha": [1.0, 3.0]}, {"agent": ["greedy"]},
          {"agent": ["vpo"], "alpha": [5.0]}]
  compiles = []
  res = rlhf.sweep(build, grid, seeds=3, steps=6, progress=False, compiles=compiles)
  assert res.coords["run"].tolist() == ["agent=vpo, alpha=1.0", "agent=vpo, alpha=3.0",
                                        "agent=greedy", "agent=vpo, alpha=5.0"]
  chunks = [what for what, _ in compiles if what.startswith("chunk")]
  assert len(chunks) == 2 and "agent=vpo" in chunks[0] and "agent=greedy" in chunks[1]
  table = rlhf.sweep(lambda alpha: build("vpo", alpha), {"alpha": [1.0, 3.0, 5.0]}, seeds=3,
                     steps=6, progress=False)
  for alpha in (1.0, 3.0, 5.0):
    np.testing.assert_array_equal(res.sel(agent="vpo", alpha=alpha).regret,
                                  table.sel(alpha=alpha).regret)

  # a seed's trajectory by the same programs, arranged in the runs' order
  plan = sweep_lib.plan(build, grid, 6)
  out, fields, _ = sweep_lib.trajectory(plan, 2)
  assert isinstance(fields, grid_lib.Runs) and fields.num_points == 3
  kept = fields.arrange([k.regret[:, 0] for k in out.kept])
  np.testing.assert_array_equal(kept, res.sel(seed=2).regret)


def test_runs_group_by_their_static_fields_and_numeric_names():
  table = grid_lib.runs([{"agent": ["vpo"], "alpha": [1.0, 3.0]}, {"agent": ["vpo"]},
                         {"agent": ["xpo"], "alpha": [2.0], "width": [8]}])
  runs = grid_lib.Runs(table, static=("width",))
  assert runs.combos() == [{"agent": "vpo"}, {"agent": "vpo"}, {"agent": "xpo", "width": 8}]
  np.testing.assert_array_equal(runs.points(0)["alpha"], [1.0, 3.0])
  assert runs.points(1) == {} and runs.num_points == 2
  assert runs.where == [(0, 0), (0, 1), (1, 0), (2, 0)]
  blocks = np.arange(3 * 2).reshape(3, 2)                    # (combos, max G)
  assert runs.arrange(blocks).tolist() == [0, 1, 2, 4]
