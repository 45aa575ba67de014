"""The reproduction report's sections on one tiny row each: the table, the finding and, where
cheap, the measured direction (slow: each compiles its sweeps)."""
import dataclasses

import numpy as np
import pytest

common = pytest.importorskip("benchmarks.reproduction.common")

pytestmark = pytest.mark.slow


@pytest.fixture
def ctx(tmp_path):
  return common.Context(full=False, figdir=common.Figures(tmp_path, "fig"))


def test_outcomes_of_known_runs():
  regret = np.array([[1, 1, 1, 0, 1, 0, 0, 0, 0, 0],     # stays below from t = 6
                     [1] * 10,                            # stuck: above at T
                     [0] * 10], float)                    # below from t = 1
  o = common.outcomes(regret, 0.5)
  assert o.stuck[0] == pytest.approx(1 / 3) and o.stuck[1] < 1 / 3 < o.stuck[2]
  assert o.final[0] == pytest.approx(14 / 3)
  assert o.tail_below[0] == pytest.approx(2 / 3)            # last ⌈10/10⌉ = 1 step
  assert o.settle[0] == 6
  assert common.outcome_cells(o, 10)[3].startswith("6 [1, > 10]")


def test_learner_box_section_on_one_row(ctx, monkeypatch):
  from benchmarks.reproduction import learner_box
  monkeypatch.setattr(learner_box, "QUICK", learner_box.Sizes(
      seeds=16, ratios=(1.0, 2.0), alphas=(1.0,), prop1=(0.5, 1.5), prop2=(50.0, 1.0, 4.0)))
  measured = []
  monkeypatch.setattr(learner_box, "measure", lambda s, f=learner_box.measure: measured.append(
      f(s)) or measured[-1])
  text, finding = learner_box.run(ctx)
  assert text.startswith("## ") and "| 2 | 1 | xpo |" in text and finding
  # the exact box on Example 2: Algorithm 1 escapes the event more often than XPO
  data = measured[0]
  assert data[1, "algorithm1", 1.0, 1.0].stuck[0] < data[1, "xpo", 1.0, 1.0].stuck[0]


def test_propositions_section_counts_distinct_runs(ctx, monkeypatch):
  from benchmarks.reproduction import propositions
  monkeypatch.setattr(propositions, "QUICK", propositions.Sizes(
      prop_seeds=8, prop_alphas=(1.0,), prop1=(0.5, 1.5), prop1_p=(0.0, 0.2),
      prop2=(50.0, 1.0, 4.0)))
  text, finding = propositions.run(ctx)
  # 3 failing settings (p = 0, p = 0.2, Example 2) but 2 distinct Algorithm 1 runs at one α
  assert "of 3 (setting, α) runs" in finding and "of 2 distinct runs" in finding
  assert text.count("| algorithm1 |") == 4 and "Example 1, any p" in text
  assert all(c in text for c in common.OUTCOME_COLUMNS)


def test_hard_instance_search_on_a_tiny_row(ctx, monkeypatch):
  from benchmarks.reproduction import hard_instances
  monkeypatch.setattr(hard_instances, "QUICK", hard_instances.Sizes(
      candidates=4, search_steps=32, search_seeds=4, keep=1, perturbations=2, finalists=1,
      final_steps=64, final_seeds=4))
  text, finding = hard_instances.run(ctx)
  assert text.startswith("## ") and "| 3: finalists, fresh seeds | 1 | 64 | 4 |" in text
  assert "(β+1)/(β+2) = 0.60" in finding


def test_scaling_section_on_a_tiny_row(ctx, monkeypatch):
  from benchmarks.reproduction import scaling
  monkeypatch.setattr(scaling, "QUICK", scaling.Sizes(actions=(2, 3), r_maxes=(1.0, 4.0),
                                                      instances=1, seeds=2, steps=16))
  monkeypatch.setattr(scaling, "SCHEMES", {k: scaling.SCHEMES[k] for k in ("algorithm1", "xpo")})
  text, finding = scaling.run(ctx)
  assert text.startswith("## ") and "exponent in A" in text and "in r_max at A = 3" in finding
  assert text.count("| xpo |") == 2 + 1             # a row per r_max, one of exponents in r_max


def test_powered_verdicts_of_known_runs():
  from benchmarks.reproduction import powered
  T = 20                                       # the last 10%: 2 steps
  learned = np.tile(np.r_[1.0, np.full(T - 1, 0.2)], (4, 1))
  stuck = np.tile(np.r_[1.0, np.full(T - 1, 1.5)], (4, 1))
  mixed = np.vstack([learned[:2], stuck[:2]])   # 0.2 and 1.5 of π_ref's: the interval holds 1
  assert powered.learned(learned) == pytest.approx(np.full(4, 0.2))
  assert [powered.verdict(powered.learned(r)) for r in (learned, stuck, mixed)] == [
      "", "collapsed", "unclear"]


def test_powered_compares_each_agent_with_its_control_by_rbx_stats():
  from benchmarks.reproduction import powered
  from rbx.core import stats
  rng = np.random.default_rng(0)
  base = rng.normal(10.0, 3.0, 64)
  lead, tied = base - 1.0 + rng.normal(0, 0.1, 64), (base + rng.normal(0, 1.0, 64))[:48]
  done = {"greedy": {"finals": base}, "xpo": {"finals": lead}, "vpo": {"finals": tied}}
  out = powered.against(done, lambda key: "greedy")
  assert set(out) == {"xpo", "vpo"} and out["vpo"].n == 48          # the seeds both ran
  assert out["xpo"].separated and not out["vpo"].separated
  assert out["xpo"] == stats.holm({"xpo": stats.paired(lead, base),
                                   "vpo": stats.paired(tied, base[:48])})["xpo"]


def test_powered_combines_seed_blocks():
  from benchmarks.reproduction import powered
  rng = np.random.default_rng(1)
  regret = rng.uniform(0, 1, (12, 5))
  blocks = [{"finals": r.sum(-1), "learned": powered.learned(r), "sum": r.sum(0),
             "squares": (r ** 2).sum(0), "seconds": 1.0} for r in (regret[:8], regret[8:])]
  whole = powered.combine(blocks)
  m, h = powered.interval(regret)
  np.testing.assert_allclose(whole["mean"], m)
  np.testing.assert_allclose(whole["half"], h)
  np.testing.assert_allclose(whole["finals"], regret.sum(-1))
  assert whole["seconds"] == 2.0


def test_scaling_exponent_states_its_misfit():
  from benchmarks.reproduction import scaling
  x = np.array([3.0, 10.0, 30.0])
  law = [np.full((2, 4), 5.0 * a ** 0.5) for a in x]              # R = 5 √A exactly
  e = scaling.exponent(x, law, boots=50)
  assert e.slope == pytest.approx(0.5) and e.misfit == pytest.approx(1.0) and e.monotone
  assert e.text().startswith("**0.50**")
  # issue 38's row: Algorithm 1 at r_max = 4, mean R 28.8, 334.4, 290.7 — no power law
  bent = [np.full((2, 4), m) for m in (28.8, 334.4, 290.7)]
  e = scaling.exponent(x, bent, boots=50)
  assert not e.monotone and e.misfit > 2
  assert "not monotone" in e.text() and not e.text().startswith("**")


def test_sequence_section_resumes_from_its_cells(ctx, monkeypatch, tmp_path):
  from benchmarks import revision
  from benchmarks.reproduction import powered, sequences
  monkeypatch.setattr(sequences, "CELLS", powered.Cells(tmp_path / "cells", "sequences",
                                                        sequences.CELLS.pattern))
  monkeypatch.setattr(sequences, "QUICK", sequences.Sizes(
      prompts=(1,), shapes=((2, 2),), steps=8, seeds=3, block=3, tabular=(1, 2, (), 1),
      longer=(1, 2, (3,))))
  monkeypatch.setattr(sequences, "ENUMERATED", 4)          # L = 3: 8 answers, as token arrays
  monkeypatch.setattr(sequences, "INSTANCES", ("hard",))
  monkeypatch.setattr(sequences, "AGENTS", ("sequence_xpo", sequences.CONTROL))
  text, finding = sequences.run(ctx._replace(budget=0))       # nothing computed yet
  assert "Not yet run: 4 of 4 cells" in text and "Holm over 0 comparisons" in finding
  text, finding = sequences.run(ctx)
  assert len(list((tmp_path / "cells").glob("*.npz"))) == 4
  rows = [r for r in text.splitlines() if r.startswith("| hard |")]
  assert len(rows) == 4 and sum("| control |" in r for r in rows) == 2
  assert "| hard | loglinear | 3 | 8 | sequence_xpo |" in text and "token arrays" in text
  assert "Holm over 2 comparisons" in finding and "Not yet run" not in text
  assert f"Cells computed at {revision.head()} (4)." in text       # the code each cell ran
  # a second run reads every cell back: no agent runs
  monkeypatch.setattr(sequences.CELLS, "compute", lambda *a: pytest.fail("recomputed a cell"))
  assert sequences.run(ctx) == (text, finding)


def test_contextual_dueling_section_on_a_tiny_row(ctx, monkeypatch):
  from benchmarks.reproduction import contextual_dueling as cd
  monkeypatch.setattr(cd, "QUICK", cd.Sizes(seeds=3, steps=8))
  # the K-armed agents stand in for the linear ones, which compile for 10-20 s each
  monkeypatch.setattr(cd, "BASE", "rucb")
  monkeypatch.setattr(cd, "CONTROL", "rcs")
  monkeypatch.setattr(cd, "AGENTS", ("rucb", "rcs"))
  whole = cd.instances()
  monkeypatch.setattr(cd, "instances", lambda: {"trap": whole["trap"]})
  text, finding = cd.run(ctx)
  assert text.startswith("## ") and "3 seeds, T = 8" in text
  assert text.count("| rucb |") == 2 and text.count("| rcs |") == 2     # R(T), − the other
  assert "agent − rcs" in text and "agent − rucb" in text
  assert "Holm's adjusted p over the section's 6 comparisons" in text
  assert finding.startswith("CoLSTIM, MaxInP and MaxMinLCB") and "trap: (2.6)" in finding


def test_length_experiment_reads_the_instances_kappa_and_reports_the_cells_present(
    monkeypatch, tmp_path):
  from rbx.rlhf import assumptions
  from benchmarks.reproduction import length, powered
  # Proposition 3's κ is the instance's Assumption-1 κ (the enumerated instance at L = 3)
  assert float(assumptions.kappa(length.env(0.02, 3, "tabular"))) == pytest.approx(
      length.kappa(0.02, 3), rel=1e-4)
  monkeypatch.setattr(length, "CELLS", powered.Cells(tmp_path, "length", length.CELLS.pattern))
  design = length.Design(lengths=(2,), epsilons=(), steps=8, block=3, blocks=1, tabular=0,
                         exact=())
  cells = length.cells(design)
  assert len(cells) == 12 and cells[:2] == [("loglinear", 0.02, 2, "sequence_dpo", "-", 0),
                                            ("loglinear", 0.02, 2, "sequence_xpo", "1", 0)]
  # the sampling-matched control: α = 0 for the schemes whose draws are not online DPO's
  assert [c[3] for c in cells if c[4] == "0"] == ["sequence_xpo", "sequence_algorithm1"]
  assert length.alpha("0", 0.02, 2, 8)(1) == 0.0
  # the exact-bonus control: the floor's α with cal_samples = None, where the design asks
  exact = length.cells(dataclasses.replace(design, exact=(2,)))
  assert [c for c in exact if c not in cells] == [
      ("loglinear", 0.02, 2, f"sequence_{s}", "floor_exact", 0) for s in ("xpo", "vpo",
                                                                           "algorithm1")]
  made = []
  with monkeypatch.context() as m:
    m.setattr(length.rlhf, "get", lambda name, **kw: made.append(kw))
    for kind in ("floor_exact", "floor"):
      length.agent("sequence_xpo", "loglinear", kind, 0.02, 2, 8)
  assert made[0].pop("cal_samples", "sampled") is None and "cal_samples" not in made[1]
  assert made[0]["alpha"](1) == made[1]["alpha"](1) == pytest.approx(4 * np.log(8))
  zero = ("loglinear", 0.02, 2, "sequence_xpo", "0", 0)
  for c in cells[:2] + [zero]:
    length.compute(design, c)
  # total = sampling + bonus, each paired: xpo at α 1 − online DPO = (α 0 − DPO) + (α 1 − α 0)
  row = length.split(design)[2].split(" | ")
  parts = [float(cell.strip("* ").split(" [")[0]) for cell in row[2:5]]
  assert row[0] == "| 2" and parts[0] == pytest.approx(parts[1] + parts[2], abs=1.5)
  lines = length.report(design)
  assert lines[0].startswith("3 of 12 cells present") and "Holm over 3 comparisons" in lines[0]
  rows = [line.split(" | ") for line in lines if line.startswith("| loglinear")]
  assert [r[4] for r in rows] == ["dpo", "xpo", "xpo"] and rows[0][-2] == "control"
  assert rows[1][9].endswith("%") and "[" in rows[1][10]     # not found y*; paired interval
  table = length.summary(design, ("1",))
  assert len(table) == 3 and table[2].startswith("| loglinear | 0.02 | 2 | 4e-04 |")
  assert table[2].split(" | ")[5].endswith("%)")        # xpo at α = 1 beside online DPO
  length.figure(tmp_path / "length.png", design)
  assert (tmp_path / "length.png").stat().st_size > 10_000
