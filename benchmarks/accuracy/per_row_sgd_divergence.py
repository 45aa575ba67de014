"""When does the public NeuralUCB code's per-row SGD at its lr 10⁻² diverge (issue 28)?

One round of `procedure="neuralucb"` (at most 1000 per-row updates, η = 10⁻², λ = 10⁻³) from
θ_0 on 20 rows, m = 100, for the paper's network and the torch one: 20 Mushroom rows (one-hot
and ordinal, disjoint encoding with K = 2, random arms, reward 1 for the true class) and 20
random unit-norm rows in d = 5 and d = 20 (one block, uniform rewards). Prints whether θ stays
finite, max |θ| and the mean ‖g‖² at θ_0.

    python -m benchmarks.accuracy.per_row_sgd_divergence
"""
import jax, jax.numpy as jnp, numpy as np
from jax.flatten_util import ravel_pytree

from benchmarks import SHARED_DATASETS
from rbx import data
from rbx.neural import buffer, likelihoods, network, training


def trial(x, blocks, r, B, kind, eta=1e-2, m=100, key=0):
  theta = network.init(jax.random.key(key), x.shape[1], m, 2, B, kind)
  buf = buffer.empty(64, x.shape[1], B)
  for i in range(len(r)):
    buf = buffer.add(buf, x[i], int(blocks[i]), float(r[i]))
  cfg = training.settings(width=m, procedure="neuralucb", network=kind)
  opt = training.optimizer(1e-3, eta, cfg)
  out = jax.jit(lambda th: training.neuralucb_fit(th, buf, jax.random.key(1), likelihoods.gaussian, 1e-3, opt, cfg))(theta)
  v = ravel_pytree(out.theta)[0]
  _, g = network.arm_grads(theta, x, jnp.asarray(blocks))
  g2 = float(jnp.mean(jax.vmap(lambda c: jnp.sum(ravel_pytree(c)[0] ** 2))(g)))
  return bool(jnp.all(jnp.isfinite(v))), float(jnp.max(jnp.abs(v))), g2


rng = np.random.default_rng(0)
for name, enc in (("mushroom", "onehot"), ("mushroom", "ordinal")):
  ds = data.load(name, data_dir=SHARED_DATASETS, categorical=enc)
  idx = rng.choice(len(ds.labels), 20, replace=False)
  arms = rng.integers(0, 2, 20)
  x, r = ds.features[idx], (arms == ds.labels[idx]).astype(np.float32)
  for kind in ("paper", "torch"):
    print(name, enc, kind, "finite, max|θ|, mean ‖g‖² at θ0:", trial(jnp.asarray(x), arms, r, 2, kind))
for d in (5, 20):
  x = rng.normal(size=(20, d)); x /= np.linalg.norm(x, axis=1, keepdims=True)
  r = rng.uniform(size=20)
  for kind in ("paper", "torch"):
    print(f"gaussian unit rows d={d} B=1", kind, trial(jnp.asarray(x, jnp.float32), np.zeros(20, int), r, 1, kind))
