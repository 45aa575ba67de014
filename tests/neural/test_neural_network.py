"""The network of (2): θ_0 gives f = 0, gradients match finite differences, the
block-structured first layer equals the dense product on the materialised d'K vector, and the
products' options (`network.Compute`) compute the same f up to their rounding."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from rbx.neural import buffer, likelihoods, network, training

D, B, M = 5, 3, 8          # features d', blocks K, width m


def _dense_f(params, x_dense):
  """(2) with a dense first layer W_1ᵀ ∈ R^(d'K × m), the blocks stacked."""
  W1 = params.W1.reshape(-1, params.W1.shape[-1])
  return network.apply_block(params._replace(W1=W1), x_dense)


def _disjoint(x, b):
  return (jax.nn.one_hot(b, B)[:, None] * x[None]).reshape(-1)


def _moved(theta0, key, scale=0.3):
  flat, unravel = ravel_pytree(theta0)
  return unravel(flat + scale * jax.random.normal(key, flat.shape) / np.sqrt(M))


@pytest.mark.parametrize("depth", [2, 3])
def test_theta0_gives_zero_for_every_input(depth):
  theta0 = network.init(jax.random.key(0), D, M, depth, B)
  x = jax.random.normal(jax.random.key(1), (64, D))
  blocks = jax.random.randint(jax.random.key(2), (64,), 0, B)
  # exactly 0 in exact arithmetic; float32 sums of the two equal halves differ by rounding
  np.testing.assert_allclose(network.predict_each(theta0, x, blocks), 0.0, atol=1e-5)
  assert network.num_params(theta0) == B * M * D + (depth - 2) * M * M + M
  # and the network is not trivially zero away from θ_0
  assert np.abs(network.predict_each(_moved(theta0, jax.random.key(3)), x, blocks)).max() > 1e-2


@pytest.mark.parametrize("depth", [2, 3])
def test_arm_grads_match_finite_differences(depth):
  theta = _moved(network.init(jax.random.key(0), D, M, depth, B), jax.random.key(1))
  x = jax.random.normal(jax.random.key(2), (B, D))
  blocks = jnp.array([2, 0, 1])
  f, g = network.arm_grads(theta, x, blocks)
  np.testing.assert_allclose(f, network.predict_each(theta, x, blocks), rtol=1e-5, atol=1e-6)
  dense_g = np.asarray(network.to_dense(theta, g, blocks))          # (K, p)
  flat, unravel = ravel_pytree(theta)
  eps = 1e-3
  for a in range(B):
    for i in np.random.default_rng(a).choice(flat.size, 12, replace=False):
      e = jnp.zeros_like(flat).at[i].set(eps)
      fd = (network.apply(unravel(flat + e), x[a], blocks[a])
            - network.apply(unravel(flat - e), x[a], blocks[a])) / (2 * eps)
      np.testing.assert_allclose(dense_g[a, i], fd, rtol=2e-2, atol=2e-3)
  # the whole vector agrees with autodiff through the full parameter vector
  full = jax.vmap(lambda xa, b: jax.grad(lambda v: network.apply(unravel(v), xa, b))(flat))(x, blocks)
  np.testing.assert_allclose(dense_g, full, rtol=1e-5, atol=1e-6)


def test_block_first_layer_equals_dense_product_on_disjoint_vector():
  theta = _moved(network.init(jax.random.key(4), D, M, 2, B), jax.random.key(5))
  x = jax.random.normal(jax.random.key(6), (B, D))
  blocks = jnp.arange(B)
  dense_x = jax.vmap(_disjoint)(x, blocks)
  np.testing.assert_allclose(network.predict_each(theta, x, blocks),
                             jax.vmap(_dense_f, (None, 0))(theta, dense_x), rtol=1e-5, atol=1e-6)
  _, g = network.arm_grads(theta, x, blocks)
  W1 = theta.W1.reshape(B * D, M)
  dense_grad = jax.vmap(jax.grad(network.apply_block), (None, 0))(theta._replace(W1=W1), dense_x)
  as_blocks = dense_grad.W1.reshape(B, B, D, M)                        # (arm, block, d, m)
  full = jax.vmap(lambda v: ravel_pytree(theta)[1](v).W1)(network.to_dense(theta, g, blocks))
  np.testing.assert_allclose(full, as_blocks, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(g.w, dense_grad.w, rtol=1e-5, atol=1e-6)


def test_first_layer_vjp_is_the_einsum_vjp():
  W = jax.random.normal(jax.random.key(8), (B, D, M))
  x = jax.random.normal(jax.random.key(9), (B, 4, D))
  loss = lambda mul: lambda W, x: jnp.sum(jnp.sin(mul(W, x)))
  plain = jax.grad(loss(lambda W, x: jnp.einsum("gnd,gdm->gnm", x, W)), (0, 1))(W, x)
  ours = jax.grad(loss(lambda W, x: network.first_layer(W, x, "float32")), (0, 1))(W, x)
  for a, b in zip(ours, plain):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_dense_round_trip():
  theta = network.init(jax.random.key(7), D, M, 3, B)
  blocks = jnp.array([1, 1, 0, 2])
  c = jax.vmap(lambda b: network.block_of(theta, b))(blocks)
  back = network.from_dense(theta, network.to_dense(theta, c, blocks), blocks)
  for u, v in zip(jax.tree.leaves(back), jax.tree.leaves(c)):
    np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("kw,field", [(dict(width=7), "width"), (dict(width=0), "width"),
                                      (dict(depth=1), "depth"), (dict(dim=0), "dim")])
def test_bad_architecture_raises(kw, field):
  args = dict(dim=D, width=M, depth=2, num_blocks=B) | kw
  with pytest.raises(ValueError, match=field):
    network.init(jax.random.key(0), **args)


def test_sum_scaling_is_the_mean_scaling_with_eta_times_n():
  # One SGD step on (10) as written equals one step of η·n_t on (10)/n_t, from the same θ.
  from rbx.neural import buffer, likelihoods, training
  key = jax.random.key(0)
  theta0 = network.init(key, 3, 8, 2, 2)
  theta = _moved(theta0, jax.random.key(1))
  buf = buffer.empty(16, 3, 2)
  x = jax.random.normal(jax.random.key(2), (5, 3))
  for i in range(5):
    buf = buffer.add(buf, x[i], i % 2, float(i % 3) / 2)
  eta, lam, n = 1e-2, 1e-2, 5

  def step(scaling, eta):
    cfg = training.settings(width=8, train_steps=1, scaling=scaling)
    opt = training.optimizer(lam, eta, cfg)
    return training.fit(theta, opt.init(theta), theta0, buf, key, likelihoods.gaussian, lam, opt,
                        cfg)[0]

  sum_step = ravel_pytree(step("sum", eta))[0]
  np.testing.assert_allclose(sum_step, ravel_pytree(step("mean", eta * n))[0], rtol=1e-5, atol=1e-7)
  assert not np.allclose(sum_step, ravel_pytree(step("mean", eta))[0], atol=1e-5)
  with pytest.raises(ValueError, match=r"scaling='total' is not one of \['mean', 'sum'\]"):
    training.settings(scaling="total")


def _history_buffer(n=70):
  buf = buffer.empty(100, D, B)
  for i in range(n):
    x = jax.random.normal(jax.random.key(10 + i), (D,))
    buf = buffer.add(buf, x, i % B, float(i % 2))
  return buf


@pytest.mark.parametrize("kind,depth", [("paper", 2), ("paper", 3), ("torch", 2)])
def test_dense_first_layer_equals_blocks(kind, depth):
  """One (n, d) @ (d, B·m) product then each row's block: the same f, arm gradients and
  history gradient as the per-row blocks, to float32 rounding."""
  theta = _moved(network.init(jax.random.key(0), D, M, depth, B, kind), jax.random.key(1))
  x = jax.random.normal(jax.random.key(2), (6, D))
  rows = jnp.array([2, 0, 1, 1, 0, 2])
  dense = network.Compute(first_layer="dense")
  close = lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * np.abs(b).max())
  close(network.predict_each(theta, x, rows, dense), network.predict_each(theta, x, rows))
  for a, b in zip(jax.tree.leaves(network.arm_grads(theta, x, rows, dense)),
                  jax.tree.leaves(network.arm_grads(theta, x, rows))):
    close(a, b)
  tiles = x.reshape(2, 3, D)
  close(network.predict_tiles(theta, tiles, jnp.array([2, 0]), dense),
        network.predict_blocks(network.block_of(theta, jnp.array([2, 0])), tiles))
  buf = _history_buffer()
  ours = training.history(theta, buf, likelihoods.gaussian, grad=True, compute=dense)
  for a, b in zip(jax.tree.leaves(ours),
                  jax.tree.leaves(training.history(theta, buf, likelihoods.gaussian, grad=True))):
    close(a, b)


def test_matmul_precisions_round_as_documented():
  """float32 and tf32 (a CPU has no TF32) are the exact float32 product; bf16 is the float64
  product of the operands rounded to bfloat16, to float32 rounding."""
  a = jax.random.normal(jax.random.key(0), (16, 40))
  b = jax.random.normal(jax.random.key(1), (40, 24))
  exact = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
  rounded = lambda v: np.asarray(v.astype(jnp.bfloat16), np.float64)
  for p in ("float32", "tf32"):
    np.testing.assert_allclose(network.matmul("ij,jk->ik", a, b, p), exact, rtol=1e-5, atol=1e-5)
  bf16 = network.matmul("ij,jk->ik", a, b, "bf16")
  assert bf16.dtype == jnp.float32
  np.testing.assert_allclose(bf16, rounded(a) @ rounded(b), rtol=1e-5, atol=1e-5)
  assert np.abs(bf16 - exact).max() > 1e-3                    # the rounding shows on a CPU


def test_bf16_network_is_within_bfloat16_rounding_of_float32():
  theta = _moved(network.init(jax.random.key(3), D, M, 3, B), jax.random.key(4))
  x = jax.random.normal(jax.random.key(5), (B, D))
  blocks = jnp.arange(B)
  f32, g32 = network.arm_grads(theta, x, blocks)
  f16, g16 = network.arm_grads(theta, x, blocks, network.Compute(matmul_precision="bf16"))
  assert not np.array_equal(f16, f32)
  np.testing.assert_allclose(f16, f32, rtol=0.05, atol=0.05 * np.abs(f32).max())
  for a, b in zip(jax.tree.leaves(g16), jax.tree.leaves(g32)):
    np.testing.assert_allclose(a, b, rtol=0.05, atol=0.05 * np.abs(b).max())


@pytest.mark.parametrize("kw,field", [(dict(first_layer="sparse"), "first_layer"),
                                      (dict(matmul_precision="fp16"), "matmul_precision")])
def test_bad_compute_raises(kw, field):
  with pytest.raises(ValueError, match=field):
    training.settings(**kw)
  assert network.default_compute("cpu") == network.Compute("blocks", "float32")
  assert network.default_compute("gpu") == network.Compute("blocks", "tf32")
