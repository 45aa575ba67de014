"""Table 3 of the NeuralRBMLE paper: per-step time t_step and the time t_Z spent on Z⁻¹.

Covertype's shape (d' = 54 features, K = 7 arms, so d = d'K = 378; m = 100, one hidden layer,
J = 100 full-batch steps), synthetic data of that shape (`covertype_like`). For NeuralUCB and
NeuralTS with the diagonal Z⁻¹ (the paper's experiments) and the exact one (Sherman–Morrison),
and NeuralRBMLE-GA (which has no Z):

* t_step: one round (act + update) of one seed, jitted, after `--history` rounds of play
  (`--exact-history` for the exact Z⁻¹, whose p × p matrix — p ≈ 38,000 here, 5.8 GB in
  float32 — makes every round cost seconds), the median of `--repeats` timed rounds (compile
  excluded);
* t_Z: the Z⁻¹ work of that round alone — the K products Z⁻¹ g_a and the update of Z⁻¹ by
  the g of the arm with the largest gᵀZ⁻¹g (so that, as in a round, the update depends on the
  solve) from gradients already computed (the index needs them anyway) — jitted on its own,
  timed the same way.

    python -m benchmarks.reproduction.table3 [--history 1000] [--repeats 20] [--exact]
"""
from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np
from benchmarks import timing
from benchmarks.reference.covertype_like import covertype_like

from rbx import neural
from rbx.core import protocol
from rbx.neural import network, precision

AGENTS = {"rbmle_ga": {}, "neural_ucb (diag)": {"precision": "diag"},
          "neural_ts (diag)": {"precision": "diag"}}
EXACT = {"neural_ucb (exact)": {"precision": "exact"}, "neural_ts (exact)": {"precision": "exact"}}


def agent(name: str, extra: dict, width: int, train_steps: int):
  """Neural agent `name` at the table's settings (η = λ = 10⁻³, ν = 0.1), with `extra` (e.g.
  the precision)."""
  return neural.get(name, width=width, train_steps=train_steps, eta=1e-3, lam=1e-3, nu=0.1,
                    **extra)


def measure(env, name: str, extra: dict, width: int, train_steps: int, history: int,
            capacity: int, repeats: int, step: bool = True) -> tuple[float | None, float | None]:
  """(t_step, t_Z) in seconds for agent `name` (with `extra` settings, e.g. the precision) on
  `env` after `history` rounds of its own play in a buffer of `capacity`; t_Z is None for an
  agent without Z (NeuralRBMLE-GA), t_step None without `step` (t_Z does not depend on t)."""
  run = protocol.pair(env, agent(name, extra, width, train_steps), capacity)
  key = jax.random.key(0)
  # jitted and donated, so that no more than one p × p Z⁻¹ is held at a time
  carry = jax.jit(lambda c: protocol.scan(run, key, c, 1, history, lambda tr: ())[0],
                  donate_argnums=0)(jax.jit(run.init)(key))
  t_step = None
  if step:
    t_step = float(np.median(timing.calls(jax.jit(lambda c: run.step(c, key, history + 1)[0]),
                                          carry, repeats=repeats)[1]))
  if "precision" not in extra:
    return t_step, None
  state = carry[1]
  prec = precision.get(extra["precision"])
  _, obs = env.observe(key, carry[0])
  _, g = network.arm_grads(state.theta, obs.x, obs.block)      # the index needs g anyway

  def z_work(z, g, blocks):
    z_inv_g = prec.solve(z, state.theta0, g, blocks)
    # the updated arm is chosen from the solve, as a round's index chooses it: the update then
    # runs after the solve has read Z⁻¹, and XLA can write it in place
    a = jnp.argmax(precision.quadratic(g, z_inv_g))
    return prec.update(z, state.theta0, jax.tree.map(lambda v: v[a], g), blocks[a],
                       width), z_inv_g

  # Z is donated (the carry's own: it is not used again) and each update feeds the next, as in
  # a run. XLA updates the donated Z⁻¹ in place only when the update depends on the solve: with
  # an update independent of it (a fixed arm), the compiled program copies the whole p × p
  # matrix first (`copy(...)` of the parameter in its HLO) so that the solve can still read the
  # old one
  t_z = timing.calls(jax.jit(z_work, donate_argnums=0), state.z, g, obs.block, repeats=repeats,
                     chain=lambda out: (out[0], g, obs.block))[1]
  return t_step, float(np.median(t_z))


def main(argv=None) -> None:
  """Prints t_step, t_Z and their ratio per agent."""
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--history", type=int, default=1000)
  p.add_argument("--exact", action="store_true",
                 help="also the exact Z⁻¹ (about 12 GB of memory at this shape)")
  p.add_argument("--exact-history", type=int, default=10)
  p.add_argument("--repeats", type=int, default=20)
  p.add_argument("--width", type=int, default=100)
  p.add_argument("--train-steps", type=int, default=100)
  args = p.parse_args(argv)
  capacity = args.history + args.repeats + 10
  X, y = covertype_like(capacity, 54, 7)
  env = neural.classification(X, y)
  print(f"Covertype shape d = {54 * 7}, K = 7, m = {args.width}, J = {args.train_steps}, "
        f"history t = {args.history} ({args.exact_history} for exact Z⁻¹), one seed, median of "
        f"{args.repeats} rounds")
  print(f"{'agent':<20} {'t_step (s)':>11} {'t_Z (s)':>9} {'t_Z / t_step':>13}")
  for label, extra in {**AGENTS, **(EXACT if args.exact else {})}.items():
    history = args.exact_history if extra.get("precision") == "exact" else args.history
    t_step, t_z = measure(env, label.split()[0], extra, args.width, args.train_steps, history,
                          capacity, args.repeats)
    if t_z is None:
      print(f"{label:<20} {t_step:11.4f} {'—':>9} {'—':>13}")
    else:
      print(f"{label:<20} {t_step:11.4f} {t_z:9.4f} {t_z / t_step:13.2f}")


if __name__ == "__main__":
  main()
