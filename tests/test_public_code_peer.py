"""benchmarks/reference/public_code_peer.py: the public codes' record formats, Welch's interval, a tiny run."""
import pickle
from pathlib import Path

import numpy as np
import pytest

from benchmarks.reference import public_code_peer as peer

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "datasets"


def test_reads_neuralts_pickles_and_neuralucb_text(tmp_path):
  ts, ucb = tmp_path / "ts", tmp_path / "ucb"
  ts.mkdir()
  ucb.mkdir()
  for nu, regrets in [(1.0, [1, 0, 1, 1]), (1.0, [0, 0, 1, 0]), (1e-3, [0, 1, 0, 0]),
                      (1.0, [1, 1])]:                              # the last one is too short
    name = (f"{sum(regrets):.3f}_multi_npy-onehot_ts_neural_{1e-3:.3e}_{nu:.3e}_100_diag_"
            f"delay_1_{len(list(ts.iterdir())):.1f}.pkl")          # train.py's name
    with open(ts / name, "wb") as f:
      pickle.dump(regrets, f)
  for i, (nu, cumulative) in enumerate([(1.0, [1, 1, 2, 3]), (1e-3, [0, 1, 1, 1]),
                                        (1e-3, [0, 0, 1, 2, 2])]):
    (ucb / f"npy-onehot__{1e-3:.3e}_{nu:.3e}_100_{1796316326.5 + i}").write_text(
        "".join(f"{c}\n" for c in cumulative))
  got = peer.peer_finals(ts, 4, "neural_ts")
  assert sorted(got) == [1e-3, 1.0]
  np.testing.assert_array_equal(np.sort(got[1.0]), [1.0, 3.0])
  np.testing.assert_array_equal(got[1e-3], [1.0])
  got = peer.peer_finals(ucb, 4, "neural_ucb")        # R(T) is line T: 3; 1 and 2
  np.testing.assert_array_equal(got[1.0], [3.0])
  np.testing.assert_array_equal(np.sort(got[1e-3]), [1.0, 2.0])


@pytest.mark.skipif(not (SHARED / "mushroom.csv.gz").is_file(), reason=f"no data at {SHARED}")
@pytest.mark.parametrize("algorithm", ["neural_ts", "neural_ucb"])
def test_tiny_run_reports_both_sides(tmp_path, algorithm, capsys):
  folder = tmp_path / "rec"
  folder.mkdir()
  for i in range(2):
    if algorithm == "neural_ts":
      with open(folder / f"1.000_x_ts_neural_1.000e-03_1.000e+00_4_diag_delay_1_{i}.pkl",
                "wb") as f:
        pickle.dump([0, 1, i], f)
    else:
      (folder / f"x__1.000e-03_1.000e+00_4_{i}").write_text(f"0\n1\n{1 + i}\n")
  finals = tmp_path / "rbx.json"
  args = ["--algorithm", algorithm, "--nu", "1", "--seeds", "2", "--steps", "3", "--width", "4",
          "--train-steps", "2", "--peer", str(folder), "--rbx-finals", str(finals),
          "--data-dir", str(SHARED)]
  peer.main(args)
  out = capsys.readouterr().out
  assert out.startswith(f"{algorithm}, Mushroom (onehot), T = 3")
  assert "| 1 | " in out and "1.5 (1–2, 2)" in out               # the public side: R(3) 1 and 2
  assert finals.is_file()
  peer.main(args)                                                # rbx's finals read back
  assert capsys.readouterr().out == out
