"""Reproduces the empirical claims of both papers with rbx and writes REPRODUCTION.md.

Each section of the report is a module of `benchmarks/reproduction/` (what it runs, its sizes
at the quick and full scale, its table and figure); this driver runs the sections asked for,
saves each one's output as `<figures>/<section>.md` (its finding, the command, date, commit,
machine and wall time that produced it), and assembles the report from every saved section.
So one section reruns alone (`--only NAME`) and the report keeps the others as they were
measured, each stamped with its own run.

Sections, in the report's order: see SECTIONS below (`--list` prints them). `--quick` (the
default) is sized for a 2-core CPU; `--full` is the papers' scale where it is affordable, meant
for an accelerator (hours). Run from the repository root:

    python -m benchmarks.reproduction.reproduce --only propositions   # one section, then the report
    python -m benchmarks.reproduction.reproduce                       # every section (hours: see linear)
    python -m benchmarks.reproduction.reproduce --assemble            # the report from the saved sections
    python -m benchmarks.reproduction.reproduce --full --out REPRODUCTION-full.md --figures benchmarks/results/reproduction-full
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import os
import platform
import sys
import time
from pathlib import Path

import jax

import rbx
from benchmarks import ROOT, revision
from benchmarks.reproduction.common import Context, Figures

# The report's sections in order; each names a module of benchmarks/reproduction/.
SECTIONS = ["propositions", "learner_box", "comparison", "dueling", "contextual_dueling", "exponents",
            "hard_instances", "scaling", "practical", "linear", "sequences", "tables", "timing"]
# The closing section: no computation, rewritten on every run.
CLOSING = "differences"
# Older names for groups of sections, still accepted by --only and --skip.
GROUPS = {"rlhf": ["propositions", "comparison", "exponents"]}
FINDING = "<!-- finding: "


def _expand(names: list[str]) -> list[str]:
  return [s for n in names for s in GROUPS.get(n, [n])]


def _stamp(name: str, full: bool, seconds: float, commit: str) -> str:
  """The line under a section's heading: the command and the run that produced it."""
  dev = jax.devices()
  return (f"*Measured by `python -m benchmarks.reproduction.reproduce{' --full' if full else ''} --only "
          f"{name}` (scale **{'full' if full else 'quick'}**) on "
          f"{datetime.date.today().isoformat()} at commit {commit}: rbx {rbx.__version__}, jax "
          f"{jax.__version__}, {dev[0].platform} ({len(dev)} device(s): {dev[0].device_kind}), "
          f"{platform.machine()}; {seconds:.0f} s.*")


def run_section(name: str, ctx: Context) -> Path:
  """Runs one section and saves its output (finding, stamp, markdown) as figures/<name>.md."""
  module = importlib.import_module(f"benchmarks.reproduction.{name}")
  commit = revision.head()      # before the section writes its figures
  start = time.perf_counter()
  print(f"[reproduce] {name} ...", file=sys.stderr, flush=True)
  text, finding = module.run(ctx)
  seconds = time.perf_counter() - start
  heading, _, body = text.partition("\n")
  lines = [] if finding is None else [FINDING + finding.replace("-->", "→") + " -->"]
  stamp = [] if name == CLOSING else ["", _stamp(name, ctx.full, seconds, commit)]
  lines += [heading] + stamp + [body.rstrip("\n"), ""]
  path = ctx.figdir.path / f"{name}.md"
  path.write_text("\n".join(lines))
  print(f"[reproduce] {name}: {seconds:.0f} s -> {path}", file=sys.stderr, flush=True)
  return path


def assemble(figdir: Figures, out: Path) -> list[str]:
  """Writes the report from the saved sections, in SECTIONS order; returns those missing."""
  findings, sections, missing = [], [], []
  for name in SECTIONS + [CLOSING]:
    path = figdir.path / f"{name}.md"
    if not path.exists():
      missing.append(name)
      continue
    text = path.read_text()
    if text.startswith(FINDING):
      first, _, text = text.partition("\n")
      findings.append(first[len(FINDING):].removesuffix(" -->"))
    sections.append(text.rstrip("\n") + "\n")
  head = [
      "# Reproduction report", "",
      "Assembled by `python -m benchmarks.reproduction.reproduce` from its sections, each measured by the "
      "command under its heading (`--only NAME` reruns one); figures are under "
      f"`{figdir.prefix}/`. Papers: Li and Yan, *Towards Efficient Online Exploration for "
      "Reinforcement Learning with Human Feedback* (arXiv:2509.22633) for RLHF; Hung and Hsieh, "
      "*Reward-Biased Maximum Likelihood Estimation for Neural Contextual Bandits* "
      "(arXiv:2203.04192) for NeuralRBMLE.", "", "## Findings", "",
  ] + [f"* {f}" for f in findings] + [""]
  out.write_text("\n".join(head + sections))
  return missing


def main(argv=None) -> None:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  size = p.add_mutually_exclusive_group()
  size.add_argument("--quick", action="store_true", help="CPU-sized run (the default)")
  size.add_argument("--full", action="store_true", help="the papers' scale (an accelerator)")
  p.add_argument("--out", default=str(ROOT / "REPRODUCTION.md"), help="the report")
  p.add_argument("--figures", default=str(ROOT / "benchmarks" / "results" / "reproduction"),
                 help="the directory of the figures and the saved sections")
  p.add_argument("--data-dir", default=None,
                 help="the shared data sets (default: table1.py's, ../shared/datasets)")
  names = SECTIONS + list(GROUPS)
  p.add_argument("--only", nargs="+", default=None, choices=names, metavar="NAME",
                 help="run only these sections: " + ", ".join(names))
  p.add_argument("--skip", nargs="+", default=[], choices=names, metavar="NAME",
                 help="run every section but these")
  p.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                 help="sections that save their cells (linear, sequences) compute new ones for at most "
                 "this long, then report the cells present (0: none computed)")
  p.add_argument("--assemble", action="store_true",
                 help="run nothing: write the report from the saved sections")
  p.add_argument("--list", action="store_true", help="print the sections and exit")
  args = p.parse_args(argv)
  # Table 3 times one seed per step and every sweep runs on the default devices (one on a CPU,
  # all of an accelerator host).
  jax.config.update("jax_num_cpu_devices", 1)
  if args.list:
    for name in SECTIONS:
      doc = importlib.import_module(f"benchmarks.reproduction.{name}").__doc__.split("\n")[0]
      print(f"{name:14} {doc}")
    return
  out = Path(args.out)
  figdir = Figures(Path(args.figures), os.path.relpath(args.figures, out.resolve().parent))
  figdir.path.mkdir(parents=True, exist_ok=True)
  ctx = Context(full=args.full, figdir=figdir, data_dir=args.data_dir, budget=args.budget)
  todo = [] if args.assemble else (
      _expand(args.only) if args.only else [s for s in SECTIONS if s not in _expand(args.skip)])
  for name in todo:
    run_section(name, ctx)
  run_section(CLOSING, ctx)
  missing = assemble(figdir, out)
  print(f"[reproduce] wrote {out}" + (f" (no saved output yet: {', '.join(missing)})"
                                       if missing else ""), file=sys.stderr)


if __name__ == "__main__":
  main()
