"""The network f(x; θ) of (2) with the symmetric initialisation θ_0 of section 2.2, or the
public NeuralUCB/NeuralTS code's torch network.

    "paper" (default): f(x; θ) = √m · W_L σ(W_{L−1} σ(… σ(W_1 x))),   σ = ReLU, depth L ≥ 2, width m.
    "torch":           f(x; θ) = W_L σ(… σ(W_1 x + b_1) …) + b_L,      torch's default init.

Weights are stored input-major (a layer maps a row h to h @ W), the layout in which XLA:CPU
runs the batched small products of training fastest. The first layer is block-structured:
`W1` has shape (B, d, m) and an input is a pair (x ∈ R^d, block b). For the disjoint encoding
of Appendix F (B = K arms, d = d'), the pair (x, b) stands for the d'K-vector with x in
block b, and x @ W1[b] equals the dense product W_1 x on that vector (the dense W_1ᵀ is
`W1.reshape(B·d, m)`), so the d'K-vector is never built. Independent contexts use B = 1.

"paper": θ_0 duplicates every hidden unit (W_1 = (W; W), W_l = diag(W, W), W_L = (w, −w)), so
the two halves of each layer are equal and f(x; θ_0) = 0 for every input; the width m must be
even. No biases (`Params.b` is empty); p = B·d·m + (L − 2)·m² + m.

"torch" (uclaml/NeuralUCB and ZeroWeight/NeuralTS `learner_diag.py`, `Network`: torch's
`Linear–ReLU–Linear`): every layer has a bias, there is no √m factor, and every weight and
bias is drawn from U(−1/√fan_in, 1/√fan_in) — torch's default for `nn.Linear` (kaiming-uniform
with a = √5 for the weight, the same bound for the bias), fan_in = B·d for the first layer (the
dense d'K input) and m after it. So f(x; θ_0) ≠ 0, and p = (B·d + 1)·m + (L − 2)(m + 1)·m + m + 1
— for the disjoint encoding at L = 2, (K·d' + 1)m + m + 1. Its gradients are about 100 times
smaller in squared norm than the paper network's at m = 100 (‖g‖² ≈ 1.5 against ≈ 150 on
unit-norm Mushroom rows), which is what makes ν mean the public code's ν.

The parameter vector θ ∈ R^p is `ravel_pytree(params)`. Per-arm gradients are kept compact:
arm a's gradient is zero outside W1[b_a] and the shared layers (and biases), so `arm_grads`
returns a `Params` whose `W1` leaf is the (K, d, m) stack of each arm's own block;
`to_dense`/`from_dense` convert to R^p.
"""
from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from rbx import _checks


class Params(NamedTuple):
  """θ as a pytree.

  Attributes:
    W1: first-layer blocks, (B, d, m); an arm-compact gradient has (d, m) here instead.
    hidden: the L − 2 square layers W_2 … W_{L−1}, each (m, m), applied as h @ W.
    w: the output layer W_L, (m,).
    b: the biases (b_1, …, b_{L−1} each (m,), b_L ()) of the "torch" network; () for "paper".
  """
  W1: chex.Array
  hidden: tuple[chex.Array, ...]
  w: chex.Array
  b: tuple[chex.Array, ...] = ()


NETWORKS = ("paper", "torch")


def init(key: chex.PRNGKey, dim: int, width: int, depth: int = 2, num_blocks: int = 1,
         kind: str = "paper") -> Params:
  """θ_0 of the network `kind` (module docstring).

  "paper" (section 2.2): entries of W ~ N(0, 2/m), of w ~ N(0, 1/m), duplicated so
  f(·; θ_0) = 0. "torch": every weight and bias ~ U(−1/√fan_in, 1/√fan_in), fan_in = B·d for
  the first layer and m after it (torch's `nn.Linear` default).
  """
  _checks.positive_int("dim", dim)
  check_architecture(width, depth, kind)
  _checks.positive_int("num_blocks", num_blocks)
  if kind == "torch":
    return _torch_init(key, dim, width, depth, num_blocks)
  half, std = width // 2, jnp.sqrt(2.0 / width)
  k1, k2, *ks = jax.random.split(key, depth)
  W = std * jax.random.normal(k1, (num_blocks, dim, half))
  hidden = tuple(_block_diag(std * jax.random.normal(k, (half, half))) for k in ks)
  w = jax.random.normal(k2, (half,)) / jnp.sqrt(width)
  return Params(jnp.concatenate([W, W], axis=2), hidden, jnp.concatenate([w, -w]))


def _torch_init(key, dim, width, depth, num_blocks) -> Params:
  """torch's `nn.Linear` default for every layer: weight and bias ~ U(±1/√fan_in)."""
  def uniform(k, shape, fan_in):
    bound = 1.0 / jnp.sqrt(fan_in)
    return jax.random.uniform(k, shape, jnp.float32, -bound, bound)

  k1, kb1, kw, kbw, *ks = jax.random.split(key, 2 * depth)
  fan_in = num_blocks * dim
  hidden = tuple(uniform(k, (width, width), width) for k in ks[0::2])
  b = ((uniform(kb1, (width,), fan_in),) + tuple(uniform(k, (width,), width) for k in ks[1::2])
       + (uniform(kbw, (), width),))
  return Params(uniform(k1, (num_blocks, dim, width), fan_in), hidden,
                uniform(kw, (width,), width), b)


def check_architecture(width: int, depth: int, kind: str = "paper") -> None:
  """Raises `ValueError` unless `kind` is a network of `NETWORKS`, depth L >= 2 and, for
  "paper", the width m is even (θ_0 duplicates units)."""
  _checks.choice("network", kind, NETWORKS)
  _checks.positive_int("width", width)
  if kind == "paper" and width % 2:
    raise ValueError(f"width must be even for the symmetric initialisation θ_0, got {width}")
  _checks.positive_int("depth", depth)
  if depth < 2:
    raise ValueError(f"depth must be >= 2 (L >= 2 in (2)), got {depth}")


def apply_block(block_params: Params, x: chex.Array) -> chex.Array:
  """f(x; θ) given the arm's first-layer block `block_params.W1` (d, m); x (d,) -> ()."""
  return _after_first(block_params, x @ block_params.W1)


def _after_first(params: Params, h: chex.Array) -> chex.Array:
  """f from the first layer's product h = x W_1 (…, m): the biases (if any), the ReLUs, the
  hidden layers and the output, scaled by √m for "paper" (no biases), not for "torch"."""
  b = params.b or (0.0,) * (len(params.hidden) + 2)
  h = jax.nn.relu(h + b[0])
  for W, c in zip(params.hidden, b[1:-1]):
    h = jax.nn.relu(h @ W + c)
  scale = 1.0 if params.b else jnp.sqrt(params.w.shape[-1])
  return scale * (h @ params.w) + b[-1]


def block_of(params: Params, block) -> Params:
  """The parameters that f(x, block) reads: W1[block] and the shared layers."""
  return params._replace(W1=params.W1[block])


def apply(params: Params, x: chex.Array, block) -> chex.Array:
  """f(x; θ) for one input (x (d,), block index) -> scalar."""
  return apply_block(block_of(params, block), x)


def predict_blocks(params: Params, x: chex.Array) -> chex.Array:
  """f over G batches of rows, batch i through first-layer block i: `params.W1` (G, d, m)
  (e.g. `W1[blocks]` for tiles of the given blocks), x (G, n, d) -> (G, n)."""
  return _after_first(params, first_layer(params.W1, x))


@jax.custom_vjp
def first_layer(W1: chex.Array, x: chex.Array) -> chex.Array:
  """The batched first-layer product x @ W1 per batch: W1 (G, d, m), x (G, n, d) -> (G, n, m).

  Its VJP is the usual one; it only lays xᵀ out as (G, d, n) in memory before the weight
  gradient xᵀ @ dh (contracting n, a handful of rows). Left to itself XLA folds the transpose
  into the product, which XLA:CPU then runs slower (see benchmarks/README.md).
  Being a `custom_vjp`, it supports reverse-mode autodiff (grad, vjp), not `jax.jvp`.
  """
  return jnp.einsum("gnd,gdm->gnm", x, W1)


def _first_layer_fwd(W1, x):
  return first_layer(W1, x), (W1, x)


def _first_layer_bwd(residuals, dh):
  W1, x = residuals
  xT = jax.lax.optimization_barrier(jnp.swapaxes(x, -1, -2))
  return jnp.einsum("gdn,gnm->gdm", xT, dh), jnp.einsum("gnm,gdm->gnd", dh, W1)


first_layer.defvjp(_first_layer_fwd, _first_layer_bwd)


def predict_each(params: Params, x: chex.Array, blocks: chex.Array) -> chex.Array:
  """f per row with its own block: x (n, d), blocks (n,) -> (n,)."""
  return jax.vmap(apply, (None, 0, 0))(params, x, blocks)


def arm_grads(params: Params, x: chex.Array, blocks: chex.Array) -> tuple[chex.Array, Params]:
  """f(x_a; θ) and the compact gradients g(x_a; θ) for all K arms in one vectorised call.

  Args:
    params: θ.
    x: contexts, (K, d); blocks: each arm's first-layer block, (K,) int.
  Returns:
    f of shape (K,) and a `Params` of gradients with a leading K axis, whose `W1` leaf
    (K, d, m) is each arm's gradient with respect to its own block W1[blocks[a]].
  """
  vg = jax.vmap(jax.value_and_grad(apply_block), (0, 0))
  per_arm = jax.vmap(lambda b: block_of(params, b))(blocks)
  return vg(per_arm, x)


def num_params(params: Params) -> int:
  """p, the length of θ."""
  return ravel_pytree(params)[0].shape[0]


def to_dense(params: Params, compact: Params, blocks: chex.Array) -> chex.Array:
  """Compact per-arm vectors (as from `arm_grads`) placed in R^p: (K, p)."""
  def one(c, b):
    return ravel_pytree(c._replace(W1=jnp.zeros_like(params.W1).at[b].set(c.W1)))[0]
  return jax.vmap(one)(compact, blocks)


def from_dense(params: Params, vectors: chex.Array, blocks: chex.Array) -> Params:
  """Each row of `vectors` (K, p), restricted to what f(x_a, blocks[a]) reads: compact `Params`."""
  unravel = ravel_pytree(params)[1]
  return jax.vmap(lambda v, b: block_of(unravel(v), b))(vectors, blocks)


def add_to_block(a: Params, block, c: Params) -> Params:
  """a + c for a full `a` and a compact `c` (its `W1` is one block's (d, m), added to
  a.W1[block]; the shared layers and biases add entry by entry)."""
  rest = jax.tree.map(jnp.add, a._replace(W1=()), c._replace(W1=()))
  return rest._replace(W1=a.W1.at[block].add(c.W1))


def _block_diag(W: chex.Array) -> chex.Array:
  z = jnp.zeros_like(W)
  return jnp.block([[W, z], [z, W]])
