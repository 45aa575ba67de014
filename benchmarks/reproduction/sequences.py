"""Exploration over token sequences, with exact regret: the schemes against online DPO as L grows.

The DPO-form agents of `rbx.rlhf.sequences` — Algorithm 1, VPO and XPO against online DPO,
their no-exploration control — on Example 2 over sequences (`hard_sequences`: π_ref(y*|x) =
ε^L) and on random instances with a uniform π_ref (`random_sequences`, the control where
exploration has nothing hidden to find), at vocabulary V, length L and |X| prompts, on the
log-linear policy (token features shared by every position) and, on the hard instance at one
size, the tabular policy (one logit per prefix: a scheme that compares y* only when π_ref or
its own policy happens to sample it should slow down exponentially in L there). Every answer's
reward, J, π* and the regret are exact (the V^L answers enumerated); the agents only sample,
score and compare whole answers. Each (instance, |X|, V, L, policy, agent, seed block) is a
cell of `block` seeds × T steps saved in `CELLS`, so the section resumes where it stopped;
the statistics are `benchmarks.reproduction.powered`'s (paired t intervals against online
DPO, Holm over every comparison, the smallest detectable difference).
"""
from __future__ import annotations

import dataclasses

import jax
import numpy as np
from matplotlib.figure import Figure

from benchmarks import ROOT
from benchmarks.reproduction import powered
from benchmarks.reproduction.common import Context

from rbx import rlhf
from rbx.rlhf import sequences

TITLE = "Exploration over token sequences with exact regret (the sequence family)"
AGENTS = ("sequence_algorithm1", "sequence_vpo", "sequence_xpo", "sequence_dpo")
CONTROL = "sequence_dpo"
DIM, BETA, REWARD_PER_TOKEN, EPSILON, ALPHA = 8, 0.25, 2.0, 0.02, 1.0
INSTANCES = ("hard", "random")
POLICIES = ("loglinear", "tabular")
CELLS = powered.Cells(ROOT / "benchmarks" / "results" / "reproduction" / "sequence_cells",
                      "sequences", "{}_X{}_V{}_L{}_{}_{}_{}.npz")
"""(instance, |X|, V, L, policy, agent, seed block) -> its saved cell."""


@dataclasses.dataclass(frozen=True)
class Sizes:
  """This section's sizes at one scale."""
  prompts: tuple[int, ...]              # |X|
  shapes: tuple[tuple[int, int], ...]   # (V, L), V^L ≤ `sequences.MAX_ANSWERS`
  steps: int                            # T
  seeds: int                            # per (instance, |X|, V, L, policy, agent), in blocks
  block: int                            # of `block`
  tabular: tuple                        # (|X|, V, lengths, blocks): the tabular policy's cells,
                                        # hard only
  longer: tuple = ()                    # (|X|, V, lengths): the log-linear policy's cells on
                                        # the hard instance beyond the enumeration (tokens)


# Sized for this CPU as a resumable background job: at T = 1,000 a block of 64 seeds takes
# about 1–2.5 minutes per agent on the log-linear policy (the DPO term reads the whole buffer
# at each of the 20 Adam steps of a round), about 5 on the tabular one. (V, L) = (8, 6) has 262,144 answers, beyond the enumeration's cap.
QUICK = Sizes(prompts=(1, 64), shapes=((4, 2), (4, 4), (4, 6), (8, 2), (8, 4)), steps=1000,
              seeds=256, block=64, tabular=(1, 4, (2, 4), 1), longer=(1, 4, (8, 16, 32)))
ENUMERATED = 4_096
"""The cells with V^L up to this many answers run on the enumerated answers (as they were first
computed); longer ones on token arrays (`rbx.rlhf.tokens`: the same agents, the same exact
regret, tests/rlhf/test_tokens.py)."""
FULL = QUICK


def env(inst: str, X: int, V: int, L: int):
  """The instance: r_max = 2L (reward 2 a token, so r_max/(Lβ) = 8 at every L), d = 8, β =
  0.25, `key(0)`; the hard one with ε = 0.02 (π_ref(y*|x) = 0.02^L), the random one with a
  uniform π_ref; enumerated up to `ENUMERATED` answers, token arrays beyond."""
  answers = None if V ** L <= ENUMERATED else False
  if inst == "hard":
    return sequences.hard_sequences(jax.random.key(0), X, V, L, DIM, BETA,
                                    REWARD_PER_TOKEN * L, EPSILON, enumerate=answers)
  return sequences.random_sequences(jax.random.key(0), X, V, L, DIM, BETA, REWARD_PER_TOKEN * L,
                                    enumerate=answers)


def _agent(name: str, policy: str):
  """The agent on `policy`, α = 1 (constant) for every scheme with a bonus; its other settings
  the defaults (20 Adam steps of rate 0.1 a round, λ = 1, the buffer)."""
  kwargs = {"policy": policy} | ({} if name == CONTROL else {"alpha": ALPHA})
  return rlhf.get(name, **kwargs), kwargs


def _cells(scale: Sizes) -> list[tuple]:
  """Cells in the order they are computed: block by block; in a block the fewest prompts
  first, at each |X| the smallest V, the hard instance before its random control, L
  increasing, the log-linear policy, then the block's longer cells (the hard instance beyond
  the enumeration); after the first block, the tabular policy's cells (the hard instance at
  one (|X|, V), the lengths of that V)."""
  X_tab, V_tab, lengths, blocks_tab = scale.tabular
  X_long, V_long, long_lengths = scale.longer or (None, None, ())
  tabular = [("hard", X_tab, V_tab, L, "tabular", name, b) for b in range(blocks_tab)
             for L in lengths for name in AGENTS]
  loglinear = [[(inst, X, V, L, "loglinear", name, b)
                for X in scale.prompts for V in sorted({v for v, _ in scale.shapes})
                for inst in INSTANCES for v, L in scale.shapes if v == V for name in AGENTS]
               + [("hard", X_long, V_long, L, "loglinear", name, b) for L in long_lengths
                  for name in AGENTS]
               for b in range(scale.seeds // scale.block)]
  return loglinear[0] + tabular + [c for block in loglinear[1:] for c in block]


def _settings(scale: Sizes, cell) -> dict:
  inst, X, V, L, policy, name, b = cell
  return {"instance": inst, "X": X, "V": V, "L": L, "d": DIM, "beta": BETA,
          "r_max": REWARD_PER_TOKEN * L, "epsilon": EPSILON, "T": scale.steps,
          "seeds": [b * scale.block, (b + 1) * scale.block - 1], "agent": name,
          "kwargs": _agent(name, policy)[1]}


def load(scale: Sizes, cell) -> dict | None:
  return CELLS.load(cell, _settings(scale, cell))


def compute(scale: Sizes, cell) -> dict:
  inst, X, V, L, policy, name, b = cell
  return CELLS.compute(cell, _settings(scale, cell), env(inst, X, V, L),
                       _agent(name, policy)[0],
                       list(range(b * scale.block, (b + 1) * scale.block)), scale.steps)


def _gap_figure(ax, comparisons: dict, panel: tuple):
  """Each scheme's R(T) − online DPO's against L at `panel` = (instance, |X|, V, policy), with
  its paired 95% interval."""
  inst, X, V, policy = panel
  for i, name in enumerate(a for a in AGENTS if a != CONTROL):
    pts = sorted((c[3], v) for c, v in comparisons.items()
                 if (c[0], c[1], c[2], c[4]) == panel and c[5] == name)
    if pts:
      L, cs = zip(*pts)
      ax.errorbar(np.array(L) + 0.08 * (i - 1), [c.mean for c in cs],
                  yerr=[c.half for c in cs], fmt="o-", ms=3, capsize=2,
                  label=name, color=powered.SCHEME_COLOURS[name.split("_")[-1]])
  ax.axhline(0, color="k", lw=0.6)
  ax.set_xlabel("length L")
  ax.set_title(f"{inst}, {policy}: |X| = {X}, V = {V}", fontsize=9)


def run(ctx: Context) -> tuple[str, str]:
  """Computes the missing cells (within `ctx.budget` seconds, if set), then the report from
  every cell present."""
  scale = FULL if ctx.full else QUICK
  cells = _cells(scale)
  missing, done, comparisons = powered.evaluate(   # done: (instance, |X|, V, L, policy, agent)
      cells, lambda c: load(scale, c), lambda c: compute(scale, c), ctx.budget,
      lambda c: c[:5] + (CONTROL,))
  X_tab, V_tab, lengths, _ = scale.tabular
  lines = [
      f"## {TITLE}", "",
      f"Design: |X| ∈ {powered.as_set(scale.prompts)}, "
      f"(V, L) ∈ {powered.as_set(tuple(s) for s in scale.shapes)} "
      f"(V^L answers, enumerated)"
      + (f" and, on the hard instance at |X| = {scale.longer[0]}, V = {scale.longer[1]}, "
         f"L ∈ {list(scale.longer[2])} (answers as token arrays, `rbx.rlhf.tokens`: the same "
         "agents and exact regret, nothing of size V^L)" if scale.longer else "")
      + f", T = {scale.steps}, {scale.seeds} seeds per agent in "
      f"blocks of {scale.block}; d = {DIM}, β = {BETA:g}, r_max = {REWARD_PER_TOKEN:g}·L (a "
      f"token's share of the reward fixed, r_max/(Lβ) = {REWARD_PER_TOKEN / BETA:g}), `key(0)`. "
      f"*hard*: `sequences.hard_sequences(…, epsilon={EPSILON:g})`, r*(x, y) = (r_max/L)·#{{l: "
      "y_l = y*_l(x)}, π_ref gives each of y*'s tokens mass ε, so π_ref(y*|x) = ε^L (Example "
      "2's 1/κ with κ = ε^−L). *random*: `sequences.random_sequences`, ψ ∼ N(0, I/d), θ* ∼ "
      "N(0, I), uniform π_ref (the control instance). Agents: `rlhf.get(name, policy=…, "
      f"alpha={ALPHA:g})`, 20 Adam steps (rate 0.1) a round on the DPO term over the "
      "comparisons made, the ℓ2 term (λ/2)‖θ − θ_ref‖² with λ = 1 (a departure from the "
      "paper's box, as the practical agents'); α constant; XPO's bonus estimated by the round's "
      "a2 ~ π_ref, Algorithm 1's by its a2 ~ π^(t), VPO's by one draw from π_cal = π_ref "
      "(`sequence_selm` is `sequence_xpo` in this model, so it is not run apart). *loglinear*: "
      "π_θ(y_l | x, l, y_{l−1}) ∝ π_ref(y_l | …) e^{θᵀψ/β}, θ ∈ R^d shared by every position "
      "and prefix; Markov and normalised per token, it holds π* exactly on the hard instance "
      "(θ = (r_max/L)e₀) but not on the random one (π*'s conditionals carry the rest of the "
      "answer's value), so there every scheme's regret has a floor above 0. *tabular* (the "
      f"hard instance at |X| = {X_tab}, V = {V_tab}, L ∈ {list(lengths)} only): one logit per "
      "(prompt, prefix, token), nothing shared between prefixes: it must see y*'s prefixes "
      "compared before it can raise them, as Example 2's argument needs.", "",
      "The control: `sequence_dpo` (online DPO) on the same policy. "
      + powered.EXPLAINED.format(m=len(comparisons)), ""]
  lines += powered.not_yet_run(missing, cells, scale.block, CELLS)
  lines += powered.revisions(done)
  for X in scale.prompts:
    for V in sorted({v for v, _ in scale.shapes}):
      mine = {c: v for c, v in done.items() if c[1:3] == (X, V)}
      if not mine:
        continue
      order = lambda p: (POLICIES.index(p[-1]), INSTANCES.index(p[0]), p[1:-1])
      present = sorted({(c[0], c[3], c[4]) for c in mine}, key=order)
      fig = Figure(figsize=(3.4 * len(present), 3.2))
      axes = np.atleast_1d(fig.subplots(1, len(present), sharey=True))
      for ax, (inst, L, policy) in zip(axes, present):
        powered.curves(ax, {c[5]: v for c, v in mine.items() if (c[0], c[3], c[4]) == (inst, L, policy)},
                       f"{inst}, {policy}: L = {L}", by_scheme=True)
      axes[0].set_ylabel("per-step regret (mean, 95% band)")
      axes[-1].legend(fontsize=6, loc="center left", bbox_to_anchor=(1.01, 0.5))
      path = ctx.figdir / f"sequences_X{X}_V{V}.png"
      fig.savefig(path, dpi=100, bbox_inches="tight")
      panels = sorted({(c[0], X, V, c[4]) for c in mine}, key=lambda p: order((p[0], p[3])))
      gaps = Figure(figsize=(3.6 * len(panels), 3.0))
      gax = np.atleast_1d(gaps.subplots(1, len(panels)))
      for ax, panel in zip(gax, panels):
        _gap_figure(ax, comparisons, panel)
      gax[0].set_ylabel("R(T) − online DPO's (paired 95% CI)")
      for ax in gax:
        if ax.get_legend_handles_labels()[0]:
          ax.legend(fontsize=6)
          break
      gap_path = ctx.figdir / f"sequences_gap_X{X}_V{V}.png"
      gaps.savefig(gap_path, dpi=100, bbox_inches="tight")
      lines += [f"### |X| = {X}, V = {V}", "",
                f"![regret curves, |X| = {X}, V = {V}]({ctx.figdir.link(path)})", "",
                f"![the gap to online DPO against L]({ctx.figdir.link(gap_path)})", "",
                "| instance | policy | L | V^L | agent | " + powered.HEADER,
                "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
      for c in sorted(mine, key=lambda c: order((c[0], c[3], c[4])) + (AGENTS.index(c[5]),)):
        size = f"{V ** c[3]:,}" if V ** c[3] < 10 ** 9 else f"{V}^{c[3]}"
        lines.append(f"| {c[0]} | {c[4]} | {c[3]} | {size} | {c[5]} | "
                     + powered.row(mine[c], comparisons.get(c), c[5] == CONTROL) + " |")
      lines.append("")
  return "\n".join(lines), _finding(comparisons, scale, missing)


def _finding(comparisons: dict, scale: Sizes, missing: list) -> str:
  """One clause per (policy, instance) (`powered.part`)."""
  name = lambda c: f"{c[5].removeprefix('sequence_')} at |X| = {c[1]}, V = {c[2]}, L = {c[3]}"
  parts = [powered.part(f"{inst}, {policy}", mine, name, "online DPO")
           for policy in POLICIES for inst in INSTANCES
           if (mine := {c: v for c, v in comparisons.items() if (c[0], c[4]) == (inst, policy)})]
  return powered.finding("Sequence exploration", comparisons, parts, scale.steps, scale.seeds,
                         missing)


def main(argv=None):
  """Computes missing cells only (a background job): `python -m benchmarks.reproduction.sequences
  [--instances ...] [--prompts ...] [--vocab ...] [--lengths ...] [--policies ...]
  [--blocks ...]`. Compiled programs are kept on disk (every sweep's cache,
  `rbx.core.compile_cache`): an agent's later seed blocks on the same instance load its
  program instead of compiling it."""
  import argparse
  p = argparse.ArgumentParser(description=main.__doc__.split("\n")[0])
  p.add_argument("--instances", nargs="+", default=list(INSTANCES), choices=INSTANCES)
  p.add_argument("--prompts", nargs="+", type=int, default=list(QUICK.prompts))
  p.add_argument("--vocab", nargs="+", type=int, default=sorted({v for v, _ in QUICK.shapes}))
  p.add_argument("--lengths", nargs="+", type=int,
                 default=sorted({l for _, l in QUICK.shapes} | set(QUICK.longer[2])))
  p.add_argument("--blocks", nargs="+", type=int, default=list(range(QUICK.seeds // QUICK.block)))
  p.add_argument("--policies", nargs="+", default=list(POLICIES), choices=POLICIES)
  args = p.parse_args(argv)
  for c in _cells(QUICK):
    if (c[0] in args.instances and c[1] in args.prompts and c[2] in args.vocab
        and c[3] in args.lengths and c[4] in args.policies and c[6] in args.blocks
        and load(QUICK, c) is None):
      compute(QUICK, c)


if __name__ == "__main__":
  main()
