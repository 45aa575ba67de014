"""`rbx trace DIR --seed S`: one seed of a finished run, step by step.

`trace(directory, seed, every=K)` reruns seed S of the run in `directory` by the run's own
programs (`rbx.core.sweep.trajectory`: the same config, devices, batch width and grid) and
returns every step's `Transition` at every grid point — for RLHF the prompt (obs.x), the
answers (action.a1, action.a2), the deployed log-policy (action.log_pi), the comparison
(feedback) and the regret term; for the neural family the arms' contexts, the arm and the
reward — and, every K steps, the carried state (the environment's and the agent's). It checks
that the traced regret is that seed's row of the run (bit for bit where the run kept every
step; its R(t) to 1e-12 relative otherwise) and writes DIR/trace/seed_S.npz.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import jax
import numpy as np

from rbx.core import reproducibility
from rbx.core import results as results_lib
from rbx.core import sweep as sweep_lib
from rbx.runs import config as config_lib
from rbx.runs import store


class Trace(NamedTuple):
  """One seed of a run, step by step.

  Attributes:
    seed: the seed.
    axes: the run's grid fields, then "instance" in a run over instances, then "step" (the
      leading axes of every array of `steps`).
    coords: grid field (and "instance") -> its values; "step" -> 1..T.
    steps: name -> array, shape (*grid shape, [I,] T, ...): "obs.x", "action.a1", ...,
      "regret".
    state_steps: the steps after which the state was kept, (n,) (empty without `every`).
    states: name -> array, shape (*grid shape, [I,] n, ...): "env....", "agent....".
    same_as_run: whether the traced regret is the run's row of this seed (module docstring).
    path: the .npz written, or None.
  """
  seed: int
  axes: tuple[str, ...]
  coords: dict[str, np.ndarray]
  steps: dict[str, np.ndarray]
  state_steps: np.ndarray
  states: dict[str, np.ndarray]
  same_as_run: bool
  path: Path | None


def trace(directory: str | os.PathLike, seed: int, every: int | None = None,
          write: bool = True) -> Trace:
  """Seed `seed` of the complete run in `directory`, step by step (module docstring).

  Raises:
    FileNotFoundError: `directory` is not a run directory.
    ValueError: the run is not complete, `seed` is not one of its seeds, or `every` is not a
      positive integer — before anything compiles.
  """
  directory = Path(directory)
  if not (directory / store.CONFIG).is_file():
    raise FileNotFoundError(f"{directory} is not a run directory (no {store.CONFIG})")
  meta_path = directory / store.METADATA
  metadata = store.read_json(meta_path) if meta_path.is_file() else {}
  if metadata.get("status") != "complete":
    raise ValueError(f"{directory} is not a complete run (status {metadata.get('status')!r}): "
                     "trace a finished run")
  if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
    raise ValueError(f"seed must be an integer, got {seed!r}")
  res = store.load(directory)
  seeds = [int(s) for s in res.coords["seed"]]
  if seed not in seeds:
    raise ValueError(f"seed {seed} is not one of the run's seeds "
                     f"({_ranges(seeds)}): --seed must be one of them")
  if every is not None and (isinstance(every, bool) or not isinstance(every, (int, np.integer))
                            or every < 1):
    raise ValueError(f"every must be an integer >= 1, got {every!r}")
  config = config_lib.loads((directory / store.CONFIG).read_text(), out=str(directory))
  mismatch = _other_conditions(metadata, config)
  if mismatch:
    print(f"rbx trace: note: this machine differs from the run's in {', '.join(mismatch)}; "
          "the trace may part from the run's trajectory (docs/reproducibility.md)")
  out, grid, _ = sweep_lib.trajectory(config.plan, seed, every)
  instances = config.plan.sweep.instances
  arrange = lambda parts: results_lib.arrange(grid, [p[:, 0] for p in parts], instances)
  kept = _flat(out.kept, lambda k: k)
  steps = {name: arrange(parts) for name, parts in kept.items()}
  state_steps = np.asarray([t for t, _ in out.states[0]], np.int64)
  states = {}
  if every is not None:
    per_combo = [jax.tree.map(lambda *x: np.stack(x, axis=2), *[c for _, c in snaps])
                 for snaps in out.states]
    for name, parts in _flat(per_combo, lambda k: ("env" if k[0] == "0" else "agent") + k[1:]
                             ).items():
      states[name] = arrange(parts)
  same = _same_as_run(res, seeds.index(seed), steps["regret"])
  inner = {} if instances is None else {results_lib.INSTANCE: instances}
  coords = {**grid.coords(), **inner, "step": np.arange(1, config.steps + 1)}
  result = Trace(seed, grid.fields + tuple(inner) + ("step",), coords, steps, state_steps,
                 states, same, None)
  if write:
    path = directory / "trace" / f"seed_{seed}.npz"
    path.parent.mkdir(exist_ok=True)
    np.savez(path, **{f"steps/{k}": v for k, v in steps.items()},
             **{f"states/{k}": v for k, v in states.items()}, state_steps=state_steps,
             axes=np.asarray(result.axes), same_as_run=same,
             **{f"coords/{k}": v for k, v in coords.items()})
    result = result._replace(path=path)
  return result


def _flat(trees: list, rename) -> dict[str, list[np.ndarray]]:
  """name -> [leaf of each combo] of pytrees of equal structure, named by their paths
  ("action.a1"; "0.t" renamed by `rename`)."""
  out: dict[str, list[np.ndarray]] = {}
  for tree in trees:
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
      name = rename(jax.tree_util.keystr(path, simple=True, separator="."))
      out.setdefault(name, []).append(np.asarray(leaf))
  return out


def _same_as_run(res, index: int, regret: np.ndarray) -> bool:
  """Whether `regret` (*grid, T) is the run's row of seed `index`: bit for bit against every
  step's regret, or R(t) at the recorded steps to 1e-12 relative (accumulated in float64 by
  chunks)."""
  axis = res.axes.index("seed")
  if res.regret is not None:
    return bool(np.array_equal(np.take(res.regret, index, axis=axis), regret))
  cum = np.cumsum(regret, axis=-1, dtype=np.float64)[..., res.coords["step"] - 1]
  return bool(np.allclose(np.take(res.recorded, index, axis=axis), cum, rtol=1e-12, atol=0))


def _other_conditions(metadata: dict, config) -> list[str]:
  """The run's "bits" that this machine does not share (device kind, versions, flags)."""
  ran = metadata.get("bits")
  if not ran:
    return []
  here = reproducibility.conditions(config.seed_batch, config.seed_batch_reason,
                                    2 if ran.get("sharded") else 1)
  return [k for k in ("device_kind", "seed_batch", "rbx", "jax", "jaxlib", "xla_flags")
          if ran.get(k) != here.get(k)]


def _ranges(seeds: list[int]) -> str:
  return (f"{seeds[0]}..{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1))
          else ", ".join(map(str, seeds[:6])) + (", …" if len(seeds) > 6 else ""))
