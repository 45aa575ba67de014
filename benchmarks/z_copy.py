"""t_Z of the exact Z⁻¹ with its update independent of the solve (arm 0, as `z_time.measure`
did before issue 28) against dependent on it (the arm the solve selects, as in a round and in
`z_time.measure` now), alternated five times in one process, p = 15,160 (Covertype's shape,
m = 40). With the update independent, XLA copies the donated p × p matrix before updating it.

    python benchmarks/z_copy.py
"""
import argparse, sys, time
argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
sys.path.insert(0, "benchmarks")
import jax, jax.numpy as jnp, numpy as np
from covertype_like import covertype_like
from rbx import neural
from rbx.core import protocol
from rbx.neural import network, precision
X, y = covertype_like(200, 54, 7)
env = neural.classification(X, y)
m = 40
agent = neural.get("neural_ucb", width=m, precision="exact", train_steps=1)
run = protocol.pair(env, agent, 20)
key = jax.random.key(0)
c = run.init(key)
state = c[1]
_, obs = env.observe(key, c[0])
_, g = network.arm_grads(state.theta, obs.x, obs.block)
prec = precision.get("exact")
print("p =", state.z.shape[0])
def make(dep):
  def z_work(z, g, blocks):
    zg = prec.solve(z, state.theta0, g, blocks)
    a = jnp.argmax(precision.quadratic(g, zg)) if dep else 0
    return prec.update(z, state.theta0, jax.tree.map(lambda v: v[a], g), blocks[a], m), zg
  return jax.jit(z_work, donate_argnums=0)
res = {False: [], True: []}
works = {d: make(d) for d in (False, True)}
zs = {d: jax.block_until_ready(works[d](jnp.array(state.z), g, obs.block)[0]) for d in (False, True)}
for rep in range(5):                      # alternate the two, to share the machine's load
  for d in (False, True):
    t0 = time.perf_counter()
    zs[d] = jax.block_until_ready(works[d](zs[d], g, obs.block))[0]
    res[d].append(time.perf_counter() - t0)
for d in (False, True):
  print(f"update depends on the solve={d}: t_Z median {np.median(res[d]):.3f} s (all {np.round(res[d], 3).tolist()})")
