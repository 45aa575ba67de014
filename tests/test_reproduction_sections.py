"""The reproduction report's sections on one tiny row each: the table, the finding and, where
cheap, the measured direction (slow: each compiles its sweeps)."""
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
      candidates=4, search_steps=64, search_seeds=4, keep=1, perturbations=2, finalists=1,
      final_steps=128, final_seeds=4))
  text, finding = hard_instances.run(ctx)
  assert text.startswith("## ") and "| 3: finalists, fresh seeds | 1 | 128 | 4 |" in text
  assert "(β+1)/(β+2) = 0.60" in finding


def test_scaling_section_on_a_tiny_row(ctx, monkeypatch):
  from benchmarks.reproduction import scaling
  monkeypatch.setattr(scaling, "QUICK", scaling.Sizes(actions=(3, 6), r_maxes=(1.0, 4.0),
                                                      instances=2, seeds=4, steps=64))
  monkeypatch.setattr(scaling, "SCHEMES", {k: scaling.SCHEMES[k] for k in ("algorithm1", "xpo")})
  text, finding = scaling.run(ctx)
  assert text.startswith("## ") and "exponent in A" in text and "in r_max at A = 6" in finding
  assert text.count("| xpo |") == 2 + 1             # a row per r_max, one of exponents in r_max


def test_linear_sections_verdicts_of_known_runs():
  from benchmarks.reproduction import linear
  T = 20                                       # the last 10%: 2 steps
  learned = np.tile(np.r_[1.0, np.full(T - 1, 0.2)], (4, 1))
  stuck = np.tile(np.r_[1.0, np.full(T - 1, 1.5)], (4, 1))
  mixed = np.vstack([learned[:2], stuck[:2]])   # 0.2 and 1.5 of π_ref's: the interval holds 1
  assert linear._learned(learned) == pytest.approx(np.full(4, 0.2))
  assert [linear._verdict(r) for r in (learned, stuck, mixed)] == ["", "collapsed", "unclear"]
  rows = linear._ranking({"a": learned.sum(1), "b": stuck.sum(1)}, {"a": learned, "b": stuck})
  assert rows[2].startswith("| 1 | a |") and rows[3].endswith("1.500 [1.500, 1.500] collapsed |")
  # each exploring agent against its family's no-exploration control, paired over seeds
  finals = {"linear_xpo": np.array([1.0, 2.0, 3.0, 4.0]), "linear_greedy": np.array([3.0, 4.1,
            4.9, 6.0]), "online_dpo": np.array([5.0, 5.0, 5.0, 5.0]),
            "practical_xpo": np.array([4.0, 6.0, 4.0, 6.0])}
  regrets = {k: learned for k in finals}
  rows = {r.split(" | ")[1]: r for r in linear._ranking(finals, regrets)[2:]}
  assert "| **-2.00** [" in rows["linear_xpo"] and "| control |" in rows["linear_greedy"]
  assert "| +0.00 [" in rows["practical_xpo"]      # paired interval holds 0: not bold
  assert linear._against_control(finals) == ("ahead of their control: linear_xpo (-2.0); "
                                             "behind it: none")
