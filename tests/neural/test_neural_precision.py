"""Z⁻¹ by Sherman–Morrison equals the dense inverse; the diagonal form is diag(Z)⁻¹."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from rbx.neural import network, precision

D, B, M, LAM = 3, 2, 16, 0.5     # p = 368: two bands of 256 rows in the rank-one update


@pytest.fixture(scope="module")
def history():
  """θ, 12 compact gradients g_τ with their blocks, and the dense Z = λI + Σ g gᵀ/m (float64)."""
  @jax.jit
  def draw():
    theta = network.init(jax.random.key(0), D, M, 3, B)
    flat, unravel = ravel_pytree(theta)
    theta = unravel(flat + 0.2 * jax.random.normal(jax.random.key(1), flat.shape))
    x = jax.random.normal(jax.random.key(2), (12, D))
    blocks = jax.random.randint(jax.random.key(3), (12,), 0, B)
    _, g = network.arm_grads(theta, x, blocks)
    return theta, g, blocks, network.to_dense(theta, g, blocks)
  theta, g, blocks, G = draw()
  G = np.asarray(G, np.float64)
  Z = LAM * np.eye(G.shape[1]) + G.T @ G / M
  return theta, g, blocks, G, Z


def _run(prec, theta, g, blocks):
  """Z⁻¹ after the rank-one updates of `g`, one a row, in one jitted scan."""
  step = lambda state, gb: (prec.update(state, theta, *gb, M), None)
  return jax.jit(lambda g, blocks: jax.lax.scan(step, prec.init(theta, LAM), (g, blocks))[0])(
      g, blocks)


def test_sherman_morrison_equals_dense_inverse(history):
  theta, g, blocks, G, Z = history
  state = _run(precision.exact, theta, g, blocks)
  np.testing.assert_allclose(state, np.linalg.inv(Z), rtol=2e-3, atol=2e-4)
  # solve: Z⁻¹ g restricted to what f(x_a; ·) reads; quadratic: gᵀ Z⁻¹ g
  solved = precision.exact.solve(state, theta, g, blocks)
  dense = np.linalg.solve(Z, G.T).T
  expect = network.from_dense(theta, jnp.asarray(dense, jnp.float32), blocks)
  for u, v in zip(jax.tree.leaves(solved), jax.tree.leaves(expect)):
    np.testing.assert_allclose(u, v, rtol=2e-3, atol=2e-4)
  np.testing.assert_allclose(precision.quadratic(g, solved), np.einsum("kp,kp->k", G, dense),
                             rtol=2e-3)


def test_diagonal_is_the_inverse_of_diag_z(history):
  theta, g, blocks, G, Z = history
  state = _run(precision.diag, theta, g, blocks)
  np.testing.assert_allclose(ravel_pytree(state)[0], np.diag(Z), rtol=1e-5)
  solved = precision.diag.solve(state, theta, g, blocks)
  dense = G / np.diag(Z)
  expect = network.from_dense(theta, jnp.asarray(dense, jnp.float32), blocks)
  for u, v in zip(jax.tree.leaves(solved), jax.tree.leaves(expect)):
    np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-7)
  np.testing.assert_allclose(precision.quadratic(g, solved), np.einsum("kp,kp->k", G, dense),
                             rtol=1e-5)


def test_unknown_precision_raises():
  with pytest.raises(ValueError, match="precision"):
    precision.get("cholesky")


def test_exact_under_vmap_maps_the_unbatched_slices(history):
  """Vmapped on a CPU (a batch of two Z⁻¹ with their own arms; θ unbatched), the exact solve
  and update equal each element's own, bit for bit, and the program slices each Z⁻¹ instead of
  gathering from the batched p × p stack (issue 28: XLA:CPU ran the gathers several times
  slower)."""
  theta, g, blocks, G, _ = history
  p = G.shape[1]
  zs = jnp.stack([_run(precision.exact, theta, g, blocks), jnp.eye(p) / LAM])
  arms = jnp.stack([blocks[:4], blocks[4:8]])
  g4 = jax.tree.map(lambda v: v[:4], g)

  def work(z, b):
    return (precision.exact.solve(z, theta, g4, b),
            precision.exact.update(z, theta, jax.tree.map(lambda v: v[0], g4), b[0], M))

  batched = jax.jit(jax.vmap(work))
  out = batched(zs, arms)
  for i in range(2):
    for u, v in zip(jax.tree.leaves(out), jax.tree.leaves(jax.jit(work)(zs[i], arms[i]))):
      np.testing.assert_array_equal(u[i], v)
  program = batched.lower(zs, arms).as_text()
  assert not [line for line in program.splitlines()
              if ("gather" in line or "scatter" in line) and f"{p}x{p}" in line]
