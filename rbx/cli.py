"""The `rbx` command line: demo, run a sweep config (or resume one), merge runs over disjoint
seeds, plot, report, data.

Each subcommand is added by a `register(subparsers)` function that sets `handler`, the
function `main` calls with the parsed arguments.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys

EXIT_ERROR, EXIT_INTERRUPTED = 2, 130
LOCATIONS = "JAX_INCLUDE_FULL_TRACEBACKS_IN_LOCATIONS"


DESCRIPTION = """Exploration algorithms for online RLHF and neural contextual bandits, as jitted
JAX sweeps over seeds and hyperparameters.

  rbx demo                       the RLHF paper's Examples 1-2 (no data needed)
  rbx run CONFIG.toml            a sweep config into a run directory (see configs/)
  rbx run --resume DIR           continue an interrupted run
  rbx run CONFIG.toml --seeds 1000:2000 --out DIR
                                 one slice of the seeds (a job array task), into DIR
  rbx merge DIR... --out OUT     join slices of one config into one run directory
  rbx trace DIR --seed S         one seed of a finished run, step by step
  rbx submit CONFIG.toml --slices N --executor slurm --out DIR
                                 slices of the seeds as a Slurm job array (submitit), merged
  rbx report DIR / rbx plot DIR  a run's summary and plots (--out OUT to write elsewhere)
  rbx keys                       every config key: kind, default, meaning (docs/config_keys.md)
  rbx data download NAME         a data set of the NeuralRBMLE paper

`rbx COMMAND --help` describes each command."""


def main(argv=None) -> int:
  """Runs the `rbx` command with `argv` (default `sys.argv[1:]`); returns the exit status.
  With no command it prints the help."""
  parser = build_parser()
  args = parser.parse_args(_attach_ranges(sys.argv[1:] if argv is None else list(argv)))
  if args.command is None:
    parser.print_help()
    return 0
  compact_locations()
  with _closed_pipes_to_devnull():
    return args.handler(args)


def compact_locations(environ=os.environ) -> None:
  """One Python frame an op as the location of the programs this command compiles, where JAX's
  default is the op's whole traceback, metadata XLA carries through the compile. A setting of
  `LOCATIONS` in `environ` is kept, and from Python (`rbx.sweep`) JAX's own setting stands."""
  if LOCATIONS not in environ:
    import jax
    jax.config.update("jax_include_full_tracebacks_in_locations", False)


def build_parser() -> argparse.ArgumentParser:
  """The `rbx` argument parser with every subcommand registered."""
  from rbx._version import __version__
  parser = argparse.ArgumentParser(prog="rbx", description=DESCRIPTION,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--version", action="version", version=f"rbx {__version__}")
  sub = parser.add_subparsers(dest="command", metavar="COMMAND")
  for register in (register_demo, register_run, register_merge, register_submit, register_trace,
                   register_plot, register_report, register_keys, register_data):
    register(sub)
  return parser


def register_demo(subparsers) -> None:
  """Adds `rbx demo [--seeds N] [--steps T] [--alpha A] [--no-progress]`."""
  demo = subparsers.add_parser("demo", help="the RLHF paper's Examples 1-2 with Algorithm 1, VPO, XPO")
  from rbx.runs import demo as demo_lib
  demo.add_argument("--seeds", type=_positive_int, default=demo_lib.SEEDS,
                    help=f"number of seeds (default {demo_lib.SEEDS})")
  demo.add_argument("--steps", type=_positive_int, default=demo_lib.STEPS,
                    help=f"iterations per run (default {demo_lib.STEPS})")
  demo.add_argument("--alpha", type=float, default=demo_lib.ALPHA,
                    help=f"the constant alpha (default {demo_lib.ALPHA:g})")
  _add_no_progress(demo)
  _add_compile_cache(demo)
  demo.set_defaults(handler=_demo)


def register_run(subparsers) -> None:
  """Adds `rbx run CONFIG.toml | --resume DIR`, with the multi-host options."""
  p = subparsers.add_parser(
      "run", help="run a sweep config (TOML) into a run directory, or --resume one",
      description="Runs CONFIG.toml into its run directory (config `out`, or --out), with a "
      "checkpoint after every chunk, and prints R(T) per grid point at the end; Ctrl-C stops "
      "after the current chunk with everything saved. `rbx run --resume DIR` continues from "
      "the newest good checkpoint.")
  p.add_argument("config", nargs="?", help="the sweep config, a TOML file (see configs/)")
  p.add_argument("--resume", metavar="DIR", help="continue the run in DIR")
  p.add_argument("--out", metavar="DIR", help="the run directory (overrides the config's out)")
  p.add_argument("--overwrite", action="store_true",
                 help="delete a run already in the directory first (never one being run)")
  p.add_argument("--import", dest="imports", metavar="MODULE", action="append", default=[],
                 help="a module name or .py file that registers one's own agents or "
                      "environments, imported first (repeatable; added to the config's "
                      "`import`, so --resume and report import it too)")
  p.add_argument("--seeds", type=_seeds, metavar="N|START:STOP",
                 help="override the config's seeds: N (seeds 0..N-1) or START:STOP (half-open, "
                      "like a Python slice: one slice of a job array, joined by `rbx merge`)")
  p.add_argument("--steps", type=_positive_int, help="override the config's steps")
  p.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                 help="override any key, dotted for tables: env.beta=0.1, grid.alpha=[1, 3] "
                      "(repeatable); recorded in the run's config.toml")
  _add_no_progress(p)
  _add_compile_cache(p)
  dist = p.add_argument_group("several hosts (jax.distributed.initialize)")
  dist.add_argument("--distributed", action="store_true",
                    help="initialise from the cluster launcher's environment (SLURM, Open MPI, ...)")
  dist.add_argument("--coordinator", metavar="HOST:PORT", help="process 0's address")
  dist.add_argument("--num-processes", type=int, help="the number of processes")
  dist.add_argument("--process-id", type=int, help="this process's index, 0..N-1")
  p.set_defaults(handler=_run, parser=p)


def register_trace(subparsers) -> None:
  """Adds `rbx trace DIR --seed S [--every K]`."""
  p = subparsers.add_parser(
      "trace", help="rerun one seed of a finished run, step by step (DIR/trace/seed_S.npz)",
      description="Reruns seed S of the complete run in DIR by the run's own programs and writes "
      "DIR/trace/seed_S.npz: every step's prompt, answers, comparison and regret term (RLHF) or "
      "contexts, arm and reward (neural) at every grid point, and with --every K the agent's "
      "and environment's state after every K steps. Its regret is checked against the run's "
      "row of that seed (bit for bit on the same kind of device and versions).")
  p.add_argument("dir", help="a complete run directory")
  p.add_argument("--seed", type=int, required=True, help="one of the run's seeds")
  p.add_argument("--every", type=_positive_int, metavar="K",
                 help="also keep the state after every K steps")
  p.set_defaults(handler=_trace)


def _trace(args) -> int:
  from rbx.runs import trace
  try:
    out = trace.trace(args.dir, args.seed, every=args.every)
  except (ValueError, OSError) as e:
    return _fail("trace", e)
  shapes = ", ".join(f"{k} {v.shape}" for k, v in out.steps.items())
  print(f"{out.path}: seed {out.seed}, axes {out.axes}: {shapes}"
        + (f"; the state after steps {out.state_steps.tolist()}" if out.states else ""))
  if not out.same_as_run:
    print(f"rbx trace: the traced regret differs from the run's row of seed {out.seed}: "
          "another device kind, rbx, jax or XLA_FLAGS than the run's (docs/reproducibility.md)",
          file=sys.stderr)
    return EXIT_ERROR
  print("its regret is bit for bit the run's row of this seed")
  return 0


def register_merge(subparsers) -> None:
  """Adds `rbx merge DIR... --out OUT`."""
  p = subparsers.add_parser(
      "merge", help="join complete runs of one config over disjoint seeds into one run directory",
      description="Joins the complete runs DIR... of one config over disjoint seeds (`rbx run "
      "CONFIG --seeds START:STOP`, e.g. the tasks of a Slurm job array) into the new run "
      "directory OUT, ordered by seed: the results of one run over all their seeds, bit for bit "
      "(docs/reproducibility.md). Refuses runs of different configs (anything but the seeds), "
      "overlapping seeds, unfinished runs and runs whose reproducibility settings differ.")
  p.add_argument("dirs", nargs="+", metavar="DIR", help="a complete run directory (a slice)")
  p.add_argument("--out", metavar="OUT", required=True, help="the new run directory")
  _add_allow_mixed(p)
  p.set_defaults(handler=_merge)


def _add_allow_mixed(parser) -> None:
  parser.add_argument("--allow-mixed", action="store_true",
                      help="merge slices whose reproducibility settings (metadata.json's bits: "
                           "device kind, seed_batch rule, versions, XLA flags) differ, with a note "
                           "in the merged metadata; refused otherwise")


def register_submit(subparsers) -> None:
  """Adds `rbx submit CONFIG --slices N [--executor slurm|local] --out DIR | --resume DIR`."""
  p = subparsers.add_parser(
      "submit", help="run a config as slices of its seeds on Slurm (or locally) via submitit, "
      "then merge",
      description="Cuts the config's seeds into N contiguous slices and submits one task per "
      "slice through submitit (needs pip install 'rbx[cluster]'): a Slurm job array, or "
      "processes on this machine with --executor local. Slice K runs as the run directory "
      "DIR/slice_K with its checkpoints; a preempted or timed-out task is requeued and resumes "
      "from its checkpoint. The command waits, printing each slice's progress, and merges them "
      "into DIR/all; --no-wait returns after submitting (DIR/submit.json holds the job ids). "
      "`rbx submit --resume DIR` submits again the slices that ended unfinished and waits.")
  p.add_argument("config", nargs="?", help="the sweep config, a TOML file (see configs/)")
  p.add_argument("--resume", metavar="DIR", help="submit DIR's unfinished slices again and wait")
  p.add_argument("--slices", type=_positive_int, metavar="N",
                 help="the number of tasks, 1 to the number of seeds")
  p.add_argument("--executor", choices=("slurm", "local"), default="slurm",
                 help="slurm (a job array through sbatch; default) or local (this machine)")
  p.add_argument("--out", metavar="DIR", help="a new or empty directory for the slices, the "
                 "merge (DIR/all) and the tasks' logs (DIR/submitit)")
  p.add_argument("--no-wait", action="store_true", help="return once the tasks are submitted")
  p.add_argument("--poll", type=float, default=10.0, metavar="S",
                 help="seconds between progress checks while waiting (default 10)")
  _add_allow_mixed(p)
  p.add_argument("--import", dest="imports", metavar="MODULE", action="append", default=[],
                 help="a module or .py file registering one's own agents (as rbx run)")
  p.add_argument("--seeds", type=_seeds, metavar="N|START:STOP", help="override the config's seeds")
  p.add_argument("--steps", type=_positive_int, help="override the config's steps")
  p.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                 help="override any key, as rbx run --set (repeatable)")
  _add_compile_cache(p)
  job = p.add_argument_group("each task's resources (submitit's parameters)")
  job.add_argument("--timeout-min", type=_positive_int, metavar="M",
                   help="minutes per task (Slurm: the partition's default; local: a week)")
  job.add_argument("--slurm-partition", metavar="P", help="the Slurm partition")
  job.add_argument("--gpus-per-task", type=int, metavar="G", help="GPUs per task")
  job.add_argument("--cpus-per-task", type=_positive_int, metavar="C", help="CPU cores per task")
  job.add_argument("--mem-gb", type=float, metavar="GB", help="memory per task")
  job.add_argument("--slurm-array-parallelism", type=_positive_int, metavar="K",
                   help="at most K tasks at once")
  job.add_argument("--executor-option", metavar="KEY=VALUE", action="append", default=[],
                   help="any other submitit parameter, e.g. slurm_account=abc or "
                        "slurm_qos=\"high\" (a TOML value; repeatable)")
  p.set_defaults(handler=_submit, parser=p)


def _submit(args) -> int:
  if (args.config is None) == (args.resume is None):
    args.parser.error("give either CONFIG (with --slices N and --out DIR) or --resume DIR")
  _compile_cache(args)
  from rbx.runs import config as config_lib
  from rbx.runs import submit
  try:
    if args.resume:
      given = [f"--{k.replace('_', '-')}" for k in ("slices", "out", "seeds", "steps")
               if getattr(args, k) is not None] + (["--set"] if args.set else [])
      if given:
        args.parser.error(f"--resume continues a submission as it was made: no {', '.join(given)}")
      handle = submit.resume(args.resume)
    else:
      if args.slices is None or args.out is None:
        args.parser.error("CONFIG needs --slices N (1 to its number of seeds) and --out DIR")
      overrides = dict(config_lib.parse_setting(x) for x in args.set)
      overrides.update({k: getattr(args, k) for k in ("seeds", "steps")
                        if getattr(args, k) is not None})
      options = dict(config_lib.parse_setting(x) for x in args.executor_option)
      options.update(timeout_min=args.timeout_min, slurm_partition=args.slurm_partition,
                     gpus_per_node=args.gpus_per_task, cpus_per_task=args.cpus_per_task,
                     mem_gb=args.mem_gb, slurm_array_parallelism=args.slurm_array_parallelism)
      handle = submit.submit(args.config, slices=args.slices, out=args.out,
                             executor=args.executor, overrides=overrides, imports=args.imports,
                             compile_cache=not args.no_compile_cache, **options)
    if args.no_wait:
      print(f"{handle.directory}: `rbx submit --resume {handle.directory}` waits for the "
            "slices and merges them")
      return 0
    handle.wait(poll=args.poll, allow_mixed=args.allow_mixed)
  except (ValueError, OSError) as e:
    return _fail("submit", e)
  except KeyboardInterrupt:
    print(f"rbx submit: stopped waiting; the tasks go on: `rbx submit --resume "
          f"{args.resume or args.out}` waits again", file=sys.stderr)
    return EXIT_INTERRUPTED
  _print_summary(handle.directory / "all")
  return 0


def register_keys(subparsers) -> None:
  """Adds `rbx keys`."""
  p = subparsers.add_parser(
      "keys", help="every config key with its kind, default and meaning (Markdown)",
      description="Prints the reference of every config key — the run keys, and every "
      "environment's and agent's parameters of each family — from the registries, as "
      "docs/config_keys.md has it.")
  p.set_defaults(handler=_keys)


def _keys(args) -> int:
  from rbx.runs import config_keys
  print(config_keys.reference(), end="")
  return 0


def register_plot(subparsers) -> None:
  """Adds `rbx plot DIR [--out OUT] [--log] [--band B] [--stuck THRESHOLD]`."""
  p = subparsers.add_parser(
      "plot", help="plot a run (PNG and SVG under DIR/plots)",
      description="Plots the run in DIR into DIR/plots (or --out); an interrupted run is plotted "
      "from its checkpoint as far as it got, titled 'partial: step t of T'.")
  p.add_argument("dir", help="a run directory")
  p.add_argument("--out", metavar="OUT", help="write the plots into OUT (e.g. for a read-only DIR)")
  _add_figure(p)
  p.set_defaults(handler=_plot)


def register_report(subparsers) -> None:
  """Adds `rbx report DIR [--out OUT] [--log] [--band B] [--stuck THRESHOLD]
  [--compare LABEL...] [--level L] [--power P] [--tune-seeds K]`."""
  p = subparsers.add_parser(
      "report", help="write DIR/report.md: summary, CIs, exponents, plots",
      description="Writes report.md and plots/ of the run in DIR into DIR (or --out); an "
      "interrupted or running run is reported from its checkpoint as far as it got, labelled "
      "'partial: step t of T'.")
  p.add_argument("dir", help="a run directory")
  p.add_argument("--out", metavar="OUT",
                 help="write report.md and plots/ into OUT (e.g. for a read-only DIR)")
  _add_figure(p)
  p.add_argument("--compare", nargs="+", metavar="LABEL", default=[],
                 help="labels FIELD=VALUE[,FIELD=VALUE] (grid coordinates, e.g. agent=xpo "
                      "agent=greedy): print and report R(T) of each label minus each later "
                      "one's, paired over seeds, with t intervals, Holm-adjusted p and the "
                      "detectable difference (docs/runs.md)")
  p.add_argument("--level", type=float, default=0.95,
                 help="the comparisons' interval level; 1 - level is Holm's family-wise error "
                      "(default 0.95)")
  p.add_argument("--power", type=float, default=0.8,
                 help="the power of the detectable difference (default 0.8)")
  p.add_argument("--tune-seeds", type=int, metavar="K",
                 help="select each agent's alpha on the run's first K seeds and report it on "
                      "the others only (docs/runs.md)")
  p.set_defaults(handler=_report)


def register_data(subparsers) -> None:
  """Adds `rbx data download NAME... [--data-dir DIR]`."""
  from rbx.data import loader, openml
  data = subparsers.add_parser("data", help="data sets for the neural-bandit benchmarks")
  sub = data.add_subparsers(dest="data_command", required=True)
  dl = sub.add_parser("download", help="fetch data sets from OpenML into the data directory",
                      description=f"Fetches {', '.join(openml.DATASETS)} from OpenML, checks the"
                      " MD5 checksum OpenML publishes and writes NAME.csv.gz atomically into the"
                      f" data directory (--data-dir, else ${loader.ENV_VAR}, else"
                      " $XDG_CACHE_HOME/rbx/datasets or ~/.cache/rbx/datasets).")
  dl.add_argument("names", nargs="+", metavar="NAME", help=f"one of {', '.join(openml.DATASETS)}")
  dl.add_argument("--data-dir", default=None, help="the data directory")
  dl.set_defaults(handler=_download)


def _download(args) -> int:
  """Downloads every named data set; prints the file and its shape, or the error (exit 2)."""
  from rbx.data import loader, openml
  for name in args.names:
    try:
      path = openml.download(name, args.data_dir)
      ds = loader.load(path)
    except (openml.DownloadError, ValueError, OSError) as e:
      return _fail("data download", e)
    print(f"{path}: {ds.features.shape[0]} rows, {ds.features.shape[1]} features after"
          f" preprocessing, {ds.num_classes} classes")
  return 0


def _demo(args) -> int:
  from rbx.runs import demo as demo_lib
  _compile_cache(args)
  try:
    demo_lib.run(seeds=args.seeds, steps=args.steps, alpha=args.alpha, progress=_progress(args))
  except ValueError as e:
    return _fail("demo", e)
  return 0


def _run(args) -> int:
  if (args.config is None) == (args.resume is None):
    args.parser.error("give either CONFIG or --resume DIR")
  if args.resume and (args.set or args.seeds or args.steps or args.imports or args.overwrite):
    args.parser.error("--resume continues a run as it was configured: no --seeds, --steps, "
                      "--set, --import, --overwrite")
  import jax
  _compile_cache(args)
  from rbx.core import devices
  from rbx.runs import checkpoint, experiment
  from rbx.runs import config as config_lib
  directory = args.resume                   # the run's, once its config is read
  try:
    if args.distributed or args.coordinator:
      devices.initialize(args.coordinator, args.num_processes, args.process_id)
    if args.resume:
      status = experiment.resume(args.resume, progress=_progress(args))
    else:
      overrides = dict(config_lib.parse_setting(x) for x in args.set)
      overrides.update({k: getattr(args, k) for k in ("seeds", "steps")
                        if getattr(args, k) is not None})
      cfg = config_lib.load(args.config, out=args.out, overrides=overrides, imports=args.imports)
      directory = cfg.out
      status = experiment.run(cfg, progress=_progress(args), overwrite=args.overwrite)
  except (ValueError, OSError, checkpoint.CheckpointError) as e:
    return _fail("run", e)
  except MemoryError as e:                  # past the estimate (`rbx.core.memory`): recorded
    return _fail("run", f"out of memory ({e or 'MemoryError'}); the run's status is 'failed': "
                        "use fewer seeds, record = \"log\" or \"summary\", or a smaller seed_block")
  except KeyboardInterrupt:
    print("rbx run: stopped at once" + ("" if directory is None else
          f"; the last checkpoint is intact: continue with `rbx run --resume {directory}`"),
          file=sys.stderr)
    return EXIT_INTERRUPTED
  if status == experiment.COMPLETE and jax.process_index() == 0:
    _print_summary(args.resume or cfg.out)
  return EXIT_INTERRUPTED if status == experiment.INTERRUPTED else 0


def _merge(args) -> int:
  from rbx.runs import experiment
  try:
    experiment.merge(args.dirs, args.out, allow_mixed=args.allow_mixed)
  except (ValueError, OSError) as e:
    return _fail("merge", e)
  _print_summary(args.out)
  return 0


def _print_summary(directory) -> None:
  """Prints the run's report's sections of R(T) per grid point with its 95% CI and of the
  recorded metrics (`report.METRICS`, where the run has any), without writing the report or
  its plots."""
  from rbx.runs import report
  res = report.load(directory)
  text = report.markdown(res, {}, report.reference_exponent(res))
  sections = text.split("\n## ")[1:]
  shown = [sections[0]] + [s for s in sections[1:] if s.startswith(report.METRICS)]
  body = "\n\n## ".join(s.rstrip("\n") for s in shown)
  print(f"\n## {body}\n\n`rbx report {directory}` writes the whole report with its plots.")


def _add_compile_cache(parser) -> None:
  from rbx.core.compile_cache import ENV
  parser.add_argument("--no-compile-cache", action="store_true",
                      help=f"do not keep compiled programs on disk for the next run (also "
                           f"{ENV}=off; {ENV}=DIR moves the cache; rbx.core.compile_cache)")


def _compile_cache(args) -> None:
  """The command's compile cache (`rbx.core.compile_cache`, which every sweep turns on):
  --no-compile-cache turns it off for the process."""
  from rbx.core import compile_cache
  compile_cache.use(False if args.no_compile_cache else None)


def _add_no_progress(parser) -> None:
  parser.add_argument("--no-progress", action="store_true",
                      help="no progress bar: plain lines on stderr instead (each compile, and "
                           "how far the run is at most every 10 s and at the end; for logs)")


def _progress(args) -> bool | str:
  """The sweeps' `progress` of `--no-progress`: plain lines (`rbx.core.progress.PLAIN`)."""
  from rbx.core import progress
  return progress.PLAIN if args.no_progress else True


def _add_figure(parser) -> None:
  """--log, --band and --stuck: how the cumulative plot is drawn (`rbx.core.plots.cumulative`)."""
  from rbx.core import plots
  parser.add_argument("--log", action="store_true",
                      help="a logarithmic regret axis in the cumulative plot")
  parser.add_argument("--band", choices=plots.BANDS, default="quantile",
                      help="the cumulative plot's bands: the median and 10-90%% range over "
                           "seeds (quantile, the default: right when seeds split into stuck "
                           "and escaped), the mean and its 95%% CI (ci), or the mean alone")
  parser.add_argument("--stuck", type=float, metavar="THRESHOLD",
                      help="add a panel with the share of seeds whose per-step regret is "
                           "still >= THRESHOLD (e.g. 0.01 for Proposition 2's)")


def _plot(args) -> int:
  from rbx.core import plots
  from rbx.runs import checkpoint, report
  try:
    res = report.load(args.dir)
    out = report.writable(args.out or f"{args.dir}/plots", suggest_out=args.out is None)
    figures = plots.plot_all(res, out, report.reference_exponent(res), args.log, args.band,
                             args.stuck)
  except (ValueError, OSError, checkpoint.CheckpointError) as e:
    return _fail("plot", e)
  for paths in figures.values():
    print(*paths)
  return 0


def _report(args) -> int:
  from rbx.runs import checkpoint, report
  try:
    path = report.write(args.dir, args.out, args.log, args.band, args.stuck,
                        compare=args.compare, level=args.level, tune_seeds=args.tune_seeds,
                        power=args.power)
  except (ValueError, OSError, checkpoint.CheckpointError) as e:
    return _fail("report", e)
  text = path.read_text()
  for title in (report.DECOMPOSITION, report.TUNED, report.COMPARISONS):   # the report's end
    if f"\n## {title}" in text:
      section = text.split(f"\n## {title}", 1)[1].split("\n## ", 1)[0]
      print(f"## {title}{section.rstrip()}\n")
  print(path)
  return 0


def _positive_int(text: str) -> int:
  """An argparse type: an integer >= 1 (0 and negatives are refused, not defaulted)."""
  try:
    value = int(text)
  except ValueError:
    raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}") from None
  if value < 1:
    raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {value}")
  return value


def _seeds(text: str) -> int | str:
  """An argparse type: N (an integer >= 1) or START:STOP, the config's "START:STOP" value."""
  from rbx import _checks
  try:
    if ":" not in text:
      return _positive_int(text)
    seeds = _checks.seed_range(text)
  except (ValueError, argparse.ArgumentTypeError):
    raise argparse.ArgumentTypeError(
        "must be N (seeds 0..N-1, an integer >= 1) or START:STOP (seeds START..STOP-1, "
        f"half-open like a Python slice, integers 0 <= START < STOP), got {text!r}") from None
  return f"{seeds.start}:{seeds.stop}"


def _attach_ranges(argv: list[str]) -> list[str]:
  """`argv` with an option's value that looks like a negative range ("--seeds -5:10") attached
  as "--seeds=-5:10": argparse would take it for an option, and `_seeds` could not say what
  START:STOP means."""
  out = []
  for arg in argv:
    if out and out[-1].startswith("--") and "=" not in out[-1] and re.fullmatch(r"-\d*:.*", arg):
      out[-1] = f"{out[-1]}={arg}"
    else:
      out.append(arg)
  return out


class _PipeSafe:
  """A text stream whose reader may go away (`rbx run ... | head`, a closed pipe): from then
  on its writes go to os.devnull, as the Python docs advise for SIGPIPE, and the command
  carries on, so a run is not ended (and marked failed) by its output."""

  def __init__(self, stream):
    self.stream, self.gone = stream, False

  def write(self, text):
    if not self.gone:
      try:
        return self.stream.write(text)
      except BrokenPipeError:
        self._to_devnull()
    return len(text)

  def flush(self):
    if not self.gone:
      try:
        self.stream.flush()
      except BrokenPipeError:
        self._to_devnull()

  def _to_devnull(self):
    import os
    self.gone = True
    try:                                  # the buffered rest, and the exit's flush, go there too
      devnull = os.open(os.devnull, os.O_WRONLY)
      os.dup2(devnull, self.stream.fileno())
      os.close(devnull)
    except (OSError, ValueError):         # no file descriptor (a captured stream): drop writes
      pass

  def __getattr__(self, name):
    return getattr(self.stream, name)


@contextlib.contextmanager
def _closed_pipes_to_devnull():
  """sys.stdout and sys.stderr as `_PipeSafe` streams for the block (restored after it)."""
  saved = sys.stdout, sys.stderr
  sys.stdout, sys.stderr = _PipeSafe(sys.stdout), _PipeSafe(sys.stderr)
  try:
    yield
  finally:
    sys.stdout.flush()
    sys.stderr.flush()
    sys.stdout, sys.stderr = saved


def _fail(command: str, error: Exception) -> int:
  print(f"rbx {command}: {error}", file=sys.stderr)
  return EXIT_ERROR


if __name__ == "__main__":
  sys.exit(main())
