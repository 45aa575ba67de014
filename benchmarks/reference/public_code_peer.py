"""rbx's NeuralTS and NeuralUCB set as the public code is, beside that code's own runs (issue 28).

NeuralTS (`--algorithm neural_ts`, the default): the public code is ZeroWeight/NeuralTS at
d1c1afb, `train.py --learner neural --inv diag --style ts`, i.e. `learner_diag.py`'s
`NeuralTSDiag` (torch Linear–ReLU–Linear with biases, σ² = λν Σ g²/U with U = λ + Σ g², 100
full-batch SGD steps a round on the MSE, lr 10⁻², weight decay λ/t). rbx runs
`neural_ts(form="reference", procedure="neuralts", network="torch", precision="diag",
width=100, lam=1e-3, eta=1e-2, train_steps=100)`.

NeuralUCB (`--algorithm neural_ucb`): the public code is uclaml/NeuralUCB at 9a74044,
`train.py`, i.e. `learner_diag.py`'s `NeuralUCBDiag` (the same network and U, the index
f + √(λν Σ g²/U), per-row SGD on (f − r)² at lr 10⁻² with weight decay λ over one shuffle of
the stored rows, at most 1,000 updates a round, stopping after a pass of mean loss ≤ 10⁻³;
`train.py` trains every round for t < 2,000, then every 100th). rbx runs
`neural_ucb(form="reference", procedure="neuralucb", network="torch", precision="diag",
width=100, lam=1e-3, eta=1e-2, max_updates=1000, tolerance=1e-3, thin_after=2000,
thin_every=100)`.

Both on the same features (`rbx.data.load(..., categorical=...)`), T rounds over a fresh
shuffle of the rows per seed. The public code's results are read from its record files:
NeuralTS's `record/*.pkl` (a pickled list of per-round regrets; ν in the name,
`..._ts_neural_<λ>_<ν>_<hidden>_diag_...`), NeuralUCB's text files `<data>__<λ>_<ν>_<hidden>_
<time>` (one cumulative regret a line) in the folder it ran in. The public code is run outside
this project (it needs torch, NeuralTS also backpack-for-pytorch, and a CUDA device, or
`.cuda()` edited to `.cpu()`), with only its data loading patched to read the features this
script saves with `--save-features`; benchmarks/README.md gives the steps. The comparison per ν
is Welch's two-sample t interval for the difference of the mean final regrets (rbx − public),
95%.

    python -m benchmarks.reference.public_code_peer --save-features /tmp/peer --encoding onehot
    python -m benchmarks.reference.public_code_peer --peer /tmp/peer/record_onehot --encoding onehot \
        --rbx-finals /tmp/peer/rbx_onehot.json
    python -m benchmarks.reference.public_code_peer --algorithm neural_ucb --peer /tmp/peer/ucb_onehot \
        --encoding onehot --rbx-finals /tmp/peer/rbx_ucb_onehot.json
"""
from __future__ import annotations

import argparse
import json
import pickle
import re
import sys
from pathlib import Path

import numpy as np

from benchmarks import SHARED_DATASETS
from rbx import data, neural
from rbx.core import stats



ALGORITHMS = ("neural_ts", "neural_ucb")


def public_setting(args) -> dict:
  """rbx's keywords for `args.algorithm` that match the public code (ν aside)."""
  common = {"form": "reference", "network": "torch", "precision": "diag", "width": args.width,
            "lam": args.lam, "eta": args.eta}
  if args.algorithm == "neural_ts":
    return {**common, "procedure": "neuralts", "train_steps": args.train_steps}
  return {**common, "procedure": "neuralucb", "max_updates": 1000, "tolerance": 1e-3,
          "thin_after": 2000, "thin_every": 100}


def rbx_finals(args) -> dict[float, np.ndarray]:
  """Final regret R(T) per ν of rbx's agent in the public code's setting: {ν: (seeds,)}."""
  ds = data.load("mushroom", data_dir=args.data_dir, categorical=args.encoding)
  env = neural.classification(ds.features, ds.labels)
  kw = public_setting(args)
  res = neural.sweep(lambda nu: (env, neural.get(args.algorithm, nu=nu, **kw)), {"nu": args.nu},
                     list(range(args.seed, args.seed + args.seeds)), args.steps)
  print(f"rbx: compile {res.timing['compile_seconds']:.0f} s, run "
        f"{res.timing['run_seconds']:.0f} s", file=sys.stderr)
  return {nu: np.asarray(f) for nu, f in zip(args.nu, res.final())}


def peer_finals(folder: Path, steps: int, algorithm: str) -> dict[float, np.ndarray]:
  """R(T) per ν of the public code's runs in `folder`: NeuralTS's pickled per-round regrets,
  or NeuralUCB's text files of cumulative regrets (runs shorter than T are left out)."""
  out: dict[float, list[float]] = {}
  if algorithm == "neural_ts":
    for f in sorted(folder.glob("*.pkl")):
      nu = float(re.search(r"_ts_neural_[^_]+_([^_]+)_", f.name).group(1))
      with open(f, "rb") as fh:
        regrets = pickle.load(fh)
      if len(regrets) >= steps:
        out.setdefault(nu, []).append(float(np.sum(regrets[:steps])))
  else:
    for f in sorted(folder.glob("*__*_*_*_*")):
      nu = float(re.search(r"__[^_]+_([^_]+)_", f.name).group(1))
      cumulative = f.read_text().split()
      if len(cumulative) >= steps:
        out.setdefault(nu, []).append(float(cumulative[steps - 1]))
  return {nu: np.asarray(v) for nu, v in out.items()}



def report(ours: dict, peer: dict, args) -> str:
  title = (f"{args.algorithm}, Mushroom ({args.encoding}), T = {args.steps}, m = {args.width}, "
           f"λ = {args.lam}, diagonal U; R(T) per seed")
  head = ("| ν | rbx mean (min–max, n) | public code mean (min–max, n) | rbx − public, 95% "
          "Welch interval |")
  lines = [title, "", head, "|---:|---:|---:|---:|"]
  for nu in args.nu:
    a, b = ours[nu], peer.get(nu)
    ra = f"{a.mean():.1f} ({a.min():.0f}–{a.max():.0f}, {len(a)})"
    if b is None or len(b) < 2:
      lines.append(f"| {nu:g} | {ra} | (no runs) | |")
      continue
    d, lo, hi = stats.welch(a, b)
    lines.append(f"| {nu:g} | {ra} | {b.mean():.1f} ({b.min():.0f}–{b.max():.0f}, {len(b)}) | "
                 f"{d:+.1f} [{lo:+.1f}, {hi:+.1f}] |")
  return "\n".join(lines)


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--algorithm", choices=ALGORITHMS, default="neural_ts")
  p.add_argument("--encoding", choices=data.CATEGORICAL, default="onehot")
  p.add_argument("--nu", type=float, nargs="+", default=[1.0, 1e-3])
  p.add_argument("--seeds", type=int, default=8)
  p.add_argument("--seed", type=int, default=0, help="rbx's first seed")
  p.add_argument("--steps", type=int, default=500)
  p.add_argument("--width", type=int, default=100)
  p.add_argument("--lam", type=float, default=1e-3)
  p.add_argument("--eta", type=float, default=1e-2)
  p.add_argument("--train-steps", type=int, default=100, help="neural_ts: J")
  p.add_argument("--data-dir", default=str(SHARED_DATASETS))
  p.add_argument("--peer", type=Path, help="the public code's record folder")
  p.add_argument("--rbx-finals", type=Path,
                 help="a JSON file of rbx's R(T) per ν: read it if it exists, else run rbx "
                      "and write it")
  p.add_argument("--save-features", type=Path,
                 help="write X_<encoding>.npy and y.npy here for the public code, and stop")
  args = p.parse_args(argv)
  if args.save_features:
    ds = data.load("mushroom", data_dir=args.data_dir, categorical=args.encoding)
    args.save_features.mkdir(parents=True, exist_ok=True)
    np.save(args.save_features / f"X_{args.encoding}.npy", ds.features)
    np.save(args.save_features / "y.npy", ds.labels)
    return
  if args.rbx_finals and args.rbx_finals.exists():
    ours = {float(k): np.asarray(v) for k, v in json.loads(args.rbx_finals.read_text()).items()}
  else:
    ours = rbx_finals(args)
    if args.rbx_finals:
      args.rbx_finals.write_text(json.dumps({str(k): v.tolist() for k, v in ours.items()}))
  peer = peer_finals(args.peer, args.steps, args.algorithm) if args.peer else {}
  print(report(ours, peer, args))


if __name__ == "__main__":
  main()
