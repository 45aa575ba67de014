"""One small end-to-end run of the Tables 1–2 protocol (benchmarks/reproduction/table1.py) on mushroom."""
from pathlib import Path

import numpy as np
import pytest

from benchmarks.reproduction import table1

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "datasets"


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "mushroom.csv.gz").is_file(), reason=f"no data at {SHARED}")
def test_protocol_on_mushroom(tmp_path):
  out = tmp_path / "t.md"
  text = table1.main(["--steps", "40", "--seeds", "2", "--datasets", "mushroom", "--algorithms",
                      "lin_rbmle", "neural_ucb", "bootstrapped_nn", "--nu", "1", "0.001",
                      "--reference-form",
                      "--width", "8", "--train-steps", "2", "--eta", "0.05", "--batch-size", "8",
                      "--alpha-exponents", "0.5", "1", "--variant-datasets", "mushroom",
                      "--data-dir", str(SHARED), "--out", str(out)])
  assert out.read_text() == text
  assert "| LinRBMLE | " in text and "(656.0)" in text and "(20.23)" in text   # paper's numbers
  assert "| BootstrappedNN | — (T=40) |" in text
  assert "| NeuralUCB (reference form) | " in text and "in reference form" in text
  assert "Kendall τ" in text and "α(t) = t^n on mushroom (T = 40)" in text
  tau = [l for l in text.splitlines() if l.startswith("| Kendall τ")][0].split("|")[2]
  point, p, low, high = (float(v) for v in tau.replace("(p", " ").replace(";", " ")
                         .replace("…", " ").replace(")", " ").split())
  assert -1 <= point <= 1 and 0 < p <= 1 and -1 <= low <= high <= 1
  assert "ν tuned on 2 other seeds" in text
  rows = [l for l in text.splitlines() if l.startswith("| NeuralUCB |")]
  mean = float(rows[0].split("|")[2].split()[0])
  assert 0 <= mean <= 40


def test_kendall_tau_and_its_interval(tmp_path):
  args = table1.parse(["--algorithms", "rbmle_ga", "neural_ucb", "lin_rbmle"])
  col = table1.DATASETS.index("mushroom")     # the paper: GA 313.1 < UCB 583.8 < LinRBMLE 656.0
  same = {("mushroom", n): {"finals": np.array([v, v])}
          for n, v in zip(args.algorithms, (1.0, 2.0, 3.0))}
  tau, p, low, high = table1.kendall(same, "mushroom", args.algorithms)
  assert (tau, low, high) == (1.0, 1.0, 1.0) and p == pytest.approx(1 / 3)   # 2 of 3! orders
  tied = {k: {"finals": np.minimum(v["finals"], 2.0)} for k, v in same.items()}   # UCB = Lin
  tau, p, _, _ = table1.kendall(tied, "mushroom", args.algorithms)
  assert tau < 1.0 and 0.0 < p <= 1.0           # the exact test refuses ties: the asymptotic one
  reversed_ = {k: {"finals": 4.0 - v["finals"]} for k, v in same.items()}
  assert table1.kendall(reversed_, "mushroom", args.algorithms)[::2] == (-1.0, -1.0)
  noisy = {("mushroom", n): {"finals": np.array([1.0, 9.0]) + i}
           for i, n in enumerate(args.algorithms)}             # means agree, seeds overlap
  tau, _, low, high = table1.kendall(noisy, "mushroom", args.algorithms)
  assert tau == 1.0 and low < 0 and high == 1.0
  assert table1.PAPER_MEAN["rbmle_ga"][col] == 313.1


def test_nu_is_tuned_on_seeds_other_than_the_reported_ones():
  # ν 0 is best on the two tuning seeds, ν 1 on the two reported ones
  final = np.array([[1.0, 1.0, 9.0, 9.0], [5.0, 5.0, 2.0, 2.0]])
  best, finals = table1.pick(final, 2)
  assert best == 0 and finals.tolist() == [9.0, 9.0]
  assert table1.pick(final, 0)[0] == 1                  # tuned on the reported seeds
  args = table1.parse(["--seeds", "3"])
  assert table1.seed_split(args) == ([0, 1, 2], [3, 4, 5])
  assert table1.seed_split(table1.parse(["--seeds", "3", "--tune-seeds", "0"])) == ([], [0, 1, 2])


def test_estimate_times_each_procedure_at_its_cost_models_history():
  rounds = 3                                     # --estimate-rounds: timed after a warm-up
  steps = table1.parse(["--estimate-rounds", str(rounds)])
  assert table1.model(steps, 8000) == (4000, 8000)             # O(t) rounds: the mean at T/2
  assert table1.model(steps, 6) == (3, 3 + rounds + 1)         # the buffer holds the timed rounds
  per_row = table1.parse(["--procedure", "neuralucb", "--estimate-rounds", str(rounds)])
  assert table1.model(per_row, 8000) == (1000, 8000)           # capped: max_updates rows
  assert table1.model(per_row, 400) == (1000, 1000 + rounds + 1)
