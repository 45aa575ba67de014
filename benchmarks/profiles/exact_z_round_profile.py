"""The exact-Z⁻¹ NeuralUCB round part by part, in one process (issue 28), at Covertype's shape
with m = 40 (d'K = 378, p = 15,160: a 0.9 GB Z⁻¹), J = 100 full-batch steps, one seed, after
`--history` rounds of the agent's own play:

* its parts, each jitted alone: the gradients at the K arms, the K products Z⁻¹g_a (solve), the
  Sherman–Morrison update of the donated Z⁻¹ by the g the solve selects ("dependent") and by
  arm 0's ("independent": XLA then copies the p × p matrix first, so that the solve can still
  read the old one — what `table3.measure` timed before issue 28), and the J training steps;
* the whole round: the step jitted alone (carry donated), and the sweep driver's program as
  Table 3 times it (`benchmarks.timing.seed_step_seconds`: the step inside the driver's vmap
  over grid points and map over seeds), with the exact Z⁻¹'s solve and update vectorised under that vmap
  (the form before issue 28's fix: gathers and scatters over the batched p × p matrix) and
  mapped over it (`rbx.neural.precision` now, on a CPU).

Medians of `--repeats` calls after one warm-up call (compiles excluded; the initial state waited
for); the parts and the jitted step alternate, to share the machine's load.

    python -m benchmarks.profiles.exact_z_round_profile [--width 40] [--history 100] [--repeats 5]
"""
import argparse
import re
import time
import types
import warnings
from unittest import mock

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import timing
from benchmarks.reference.covertype_like import covertype_like
from benchmarks.reproduction import table3

from rbx import neural
from rbx.core import driver as driver_lib
from rbx.core import protocol
from rbx.neural import likelihoods, network, precision, training

VECTORISED = precision.Precision("exact", precision.exact_init, precision.exact_solve,
                                 precision.exact_update)


def pxp_copies(p, f, *args) -> int:
  """The copies of a p × p matrix (or of a stack of them) in the compiled program of `f` at
  `args`."""
  text = f.lower(*args).compile().as_text()
  return len(re.findall(rf"= f32\[(?:1,)*{p},{p}\]\S* copy\(", text))


def driver_program(env, agent, capacity):
  """The sweep driver's chunk program of one round for one seed and no grid, and its inputs
  (abstract: nothing allocated)."""
  init, chunk = driver_lib.init_and_chunk(lambda hp: protocol.pair(env, agent, capacity), {}, 1,
                                          None)
  points, seeds = {driver_lib.NO_FIELD: np.zeros(1, np.float32)}, np.zeros(1, np.int32)
  program = jax.jit(lambda h, s, x, t: chunk(h, s, x, t, 1), donate_argnums=2)
  return program, (points, seeds, jax.eval_shape(init, points, seeds), jnp.int32(1))


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--width", type=int, default=40)
  parser.add_argument("--history", type=int, default=100)
  parser.add_argument("--repeats", type=int, default=5)
  args = parser.parse_args()
  warnings.filterwarnings("ignore", message="Some donated buffers were not usable")
  cfg = types.SimpleNamespace(width=args.width, train_steps=100, dim=54, arms=7, data=5000)
  env = neural.classification(*covertype_like(cfg.data, cfg.dim, cfg.arms), cfg.arms)
  exact = lambda: table3.agent("neural_ucb", {"precision": "exact"}, cfg.width, cfg.train_steps)
  agent = exact()
  capacity = args.history + args.repeats + 2
  run = protocol.pair(env, agent, capacity)
  key = jax.random.key(0)
  carry = jax.jit(lambda c: protocol.scan(run, key, c, 1, args.history, lambda tr: ())[0])(
      run.init(key))
  carry = jax.block_until_ready(carry)
  state = carry[1]
  _, obs = env.observe(key, carry[0])
  prec, m = precision.exact, args.width
  _, g = network.arm_grads(state.theta, obs.x, obs.block)
  p = state.z.shape[0]
  print(f"p = {p}, d'K = {cfg.dim * cfg.arms}, m = {m}, J = {cfg.train_steps}, "
        f"history t = {args.history}; median of {args.repeats} (s)", flush=True)

  def z_work(dependent):
    def work(z):
      zg = prec.solve(z, state.theta0, g, obs.block)
      a = jnp.argmax(precision.quadratic(g, zg)) if dependent else 0
      return prec.update(z, state.theta0, jax.tree.map(lambda v: v[a], g), obs.block[a], m), zg
    return jax.jit(work, donate_argnums=0)

  cfg_train, opt = training.setup(0.1, 1e-3, 1e-3, {"width": m, "train_steps": cfg.train_steps})
  fit = jax.jit(lambda th, os: training.fit(th, os, state.theta0, state.buffer, key,
                                            likelihoods.gaussian, 1e-3, opt, cfg_train))
  step = jax.jit(lambda c: run.step(c, key, args.history + 1)[0], donate_argnums=0)
  first = lambda out: (out[0],)                 # Z⁻¹ of (Z⁻¹, Z⁻¹g): the next call's input
  # name: (function, its inputs, its next inputs from its output, or None: the same again)
  timed = {
      "gradients at the K arms": (jax.jit(network.arm_grads), (state.theta, obs.x, obs.block),
                                  None),
      "solve: K products Z⁻¹g_a": (jax.jit(prec.solve), (state.z, state.theta0, g, obs.block),
                                   None),
      "t_Z, update dependent on the solve": (z_work(True), (jnp.copy(state.z),), first),
      "t_Z, update independent (copies Z⁻¹)": (z_work(False), (jnp.copy(state.z),), first),
      "J training steps": (fit, (state.theta, state.opt_state), None),
      "whole step, jitted alone": (step, (jax.tree.map(jnp.copy, carry),), lambda out: (out,)),
  }
  inputs = {name: args_ for name, (_, args_, _) in timed.items()}
  copies = {name: pxp_copies(p, f, *inputs[name]) for name, (f, _, _) in timed.items()
            if name.startswith(("t_Z", "whole"))}
  seconds = {name: [] for name in timed}
  for rep in range(args.repeats + 1):           # the first round compiles and warms up
    for name, (f, _, chain) in timed.items():
      begin = time.perf_counter()
      out = jax.block_until_ready(f(*inputs[name]))
      if rep:
        seconds[name].append(time.perf_counter() - begin)
      if chain is not None:
        inputs[name] = chain(out)
  del inputs, carry
  for name, s in seconds.items():
    print(f"  {name:<40} {np.median(s):8.4f}   (all {np.round(s, 3).tolist()})", flush=True)
  driver = {}
  for label, prec_exact in (("vectorised (before)", VECTORISED), ("mapped (now)", precision.exact)):
    with mock.patch.dict(precision.PRECISIONS, exact=prec_exact):
      agent = exact()
    driver[label] = timing.seed_step_seconds(env, agent, args.history, capacity, seeds=1,
                                             steps=1, repeats=args.repeats)
    program, program_inputs = driver_program(env, agent, capacity)
    copies[f"driver program, Z⁻¹ {label}"] = pxp_copies(p, program, *program_inputs)
    print(f"  {'driver program, Z⁻¹ ' + label:<40} {driver[label]:8.4f}", flush=True)
  print("p × p copies in the compiled programs: "
        + "; ".join(f"{name} {n}" for name, n in copies.items()))
  before, now = driver.values()
  print(f"driver program: before / now {before / now:.1f}×; now / the step jitted alone "
        f"{now / np.median(seconds['whole step, jitted alone']):.2f}")


if __name__ == "__main__":
  main()
