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
  one arm's g, from gradients already computed (the index needs them anyway) — jitted on its
  own, timed the same way.

    python benchmarks/z_time.py [--history 1000] [--repeats 20] [--exact]
"""
from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
from covertype_like import covertype_like

from rbx import neural
from rbx.core import protocol
from rbx.neural import network, precision

AGENTS = {"rbmle_ga": {}, "neural_ucb (diag)": {"precision": "diag"},
          "neural_ts (diag)": {"precision": "diag"}}
EXACT = {"neural_ucb (exact)": {"precision": "exact"}, "neural_ts (exact)": {"precision": "exact"}}


def _median_seconds(f, *args, repeats):
  jax.block_until_ready(f(*args))                       # compile and warm up
  times = []
  for _ in range(repeats):
    begin = time.perf_counter()
    jax.block_until_ready(f(*args))
    times.append(time.perf_counter() - begin)
  return float(np.median(times))


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
  X, y = covertype_like(args.history + args.repeats + 10, 54, 7)
  env = neural.classification(X, y)
  print(f"Covertype shape d = {54 * 7}, K = 7, m = {args.width}, J = {args.train_steps}, "
        f"history t = {args.history} ({args.exact_history} for exact Z⁻¹), one seed, median of "
        f"{args.repeats} rounds")
  print(f"{'agent':<20} {'t_step (s)':>11} {'t_Z (s)':>9} {'t_Z / t_step':>13}")
  for label, extra in {**AGENTS, **(EXACT if args.exact else {})}.items():
    name = label.split()[0]
    agent = neural.get(name, width=args.width, train_steps=args.train_steps, eta=1e-3, lam=1e-3,
                       nu=0.1, **extra)
    history = args.exact_history if extra.get("precision") == "exact" else args.history
    run = protocol.pair(env, agent, args.history + args.repeats + 10)
    key = jax.random.key(0)
    carry = jax.jit(lambda c: protocol.scan(run, key, c, 1, history, lambda tr: ())[0])(
        run.init(key))
    step = jax.jit(lambda c: run.step(c, key, history + 1)[0])
    t_step = _median_seconds(step, carry, repeats=args.repeats)
    if name == "rbmle_ga":
      print(f"{label:<20} {t_step:11.4f} {'—':>9} {'—':>13}")
      continue
    state = carry[1]
    prec = precision.get(extra["precision"])
    _, obs = env.observe(key, carry[0])

    _, g = network.arm_grads(state.theta, obs.x, obs.block)      # the index needs g anyway

    def z_work(z, g, blocks):
      z_inv_g = prec.solve(z, state.theta0, g, blocks)
      return prec.update(z, state.theta0, jax.tree.map(lambda v: v[0], g), blocks[0],
                         args.width), z_inv_g

    t_z = _median_seconds(jax.jit(z_work), state.z, g, obs.block, repeats=args.repeats)
    print(f"{label:<20} {t_step:11.4f} {t_z:9.4f} {t_z / t_step:13.2f}")


if __name__ == "__main__":
  main()
