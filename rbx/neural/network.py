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

How the products run (`Compute`, static; every choice computes the same f up to rounding):
`first_layer` — "blocks" (each row's x @ W1[b] on its gathered block, the rows' products a
batch of (d,) @ (d, m) products) or "dense" (the rows X (n, d) times every block at once,
X @ W1 as (d, B·m): one GEMM of B times the arithmetic, the shape an accelerator's matrix
units run, then each row's block of m columns selected); `matmul_precision` — "float32"
(exact float32 products, `Precision.HIGHEST`), "tf32" (`Precision.HIGH`, JAX's
"tensorfloat32": TF32 products where the hardware has them; a CPU computes float32) or "bf16"
(operands rounded to bfloat16, products accumulated and returned in float32 — done by casting,
as XLA:CPU ignores the precision setting, so its rounding shows on a CPU too).
`default_compute` chooses them per device kind.
"""
from __future__ import annotations

import functools
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
FIRST_LAYERS = ("blocks", "dense")
MATMUL_PRECISIONS = ("float32", "tf32", "bf16")
_LAX_PRECISION = {"float32": jax.lax.Precision.HIGHEST, "tf32": jax.lax.Precision.HIGH}


class Compute(NamedTuple):
  """How the network's products run (module docstring): `first_layer` one of `FIRST_LAYERS`,
  `matmul_precision` one of `MATMUL_PRECISIONS`."""
  first_layer: str = "blocks"
  matmul_precision: str = "float32"


def compute(first_layer: str, matmul_precision: str) -> Compute:
  """The checked `Compute`; `ValueError` naming the field for a value not allowed."""
  _checks.choice("first_layer", first_layer, FIRST_LAYERS)
  _checks.choice("matmul_precision", matmul_precision, MATMUL_PRECISIONS)
  return Compute(first_layer, matmul_precision)


def default_compute(kind: str) -> Compute:
  """The products' settings for a device kind (`jax.default_backend()`: "cpu", "gpu", "tpu").

  A CPU: "blocks" and "float32" ("dense" does B times the arithmetic and measured 5.2× slower,
  docs/algorithms.md, "Products"; "tf32" computes float32 there). An accelerator: "blocks" and
  "tf32", the precision JAX's own default gives float32 products on recent GPUs (its "Matmul
  precision" docs) and so what rbx ran at there before these options; "dense" and "bf16" are
  for benchmarks/throughput/gpu.py to measure there first.
  """
  return Compute() if kind == "cpu" else Compute(matmul_precision="tf32")


def matmul(subscripts: str, a: chex.Array, b: chex.Array, precision: str) -> chex.Array:
  """`jnp.einsum(subscripts, a, b)` at `precision` (`MATMUL_PRECISIONS`), float32 out."""
  if precision == "bf16":
    return jnp.einsum(subscripts, a.astype(jnp.bfloat16), b.astype(jnp.bfloat16),
                      preferred_element_type=jnp.float32)
  return jnp.einsum(subscripts, a, b, precision=_LAX_PRECISION[precision])


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


def apply_block(block_params: Params, x: chex.Array, compute: Compute = Compute()) -> chex.Array:
  """f(x; θ) given the arm's first-layer block `block_params.W1` (d, m); x (d,) -> ()."""
  p = compute.matmul_precision
  return _after_first(block_params, matmul("d,dm->m", x, block_params.W1, p), p)


def _after_first(params: Params, h: chex.Array, precision: str) -> chex.Array:
  """f from the first layer's product h = x W_1 (…, m): the biases (if any), the ReLUs, the
  hidden layers and the output, scaled by √m for "paper" (no biases), not for "torch"."""
  b = params.b or (0.0,) * (len(params.hidden) + 2)
  h = jax.nn.relu(h + b[0])
  for W, c in zip(params.hidden, b[1:-1]):
    h = jax.nn.relu(matmul("...i,ij->...j", h, W, precision) + c)
  scale = 1.0 if params.b else jnp.sqrt(params.w.shape[-1])
  return scale * matmul("...i,i->...", h, params.w, precision) + b[-1]


def block_of(params: Params, block) -> Params:
  """The parameters that f(x, block) reads: W1[block] and the shared layers."""
  return params._replace(W1=params.W1[block])


def apply(params: Params, x: chex.Array, block, compute: Compute = Compute()) -> chex.Array:
  """f(x; θ) for one input (x (d,), block index) -> scalar."""
  return apply_block(block_of(params, block), x, compute)


def predict_blocks(params: Params, x: chex.Array, precision: str = "float32") -> chex.Array:
  """f over G batches of rows, batch i through first-layer block i: `params.W1` (G, d, m)
  (e.g. `W1[blocks]` for tiles of the given blocks), x (G, n, d) -> (G, n)."""
  return _after_first(params, first_layer(params.W1, x, precision), precision)


def predict_tiles(params: Params, x: chex.Array, blocks: chex.Array,
                  compute: Compute = Compute()) -> chex.Array:
  """f over G tiles of rows, tile i through block blocks[i] of the full `params.W1` (B, d, m):
  x (G, n, d), blocks (G,) -> (G, n). "blocks": `predict_blocks` on W1[blocks]; "dense":
  `rows_first_layer` over the G·n rows."""
  if compute.first_layer == "blocks":
    return predict_blocks(block_of(params, blocks), x, compute.matmul_precision)
  G, n, d = x.shape
  h = rows_first_layer(params.W1, x.reshape(G * n, d), jnp.repeat(blocks, n), compute)
  return _after_first(params, h.reshape(G, n, -1), compute.matmul_precision)


def rows_first_layer(W1: chex.Array, x: chex.Array, blocks: chex.Array,
                     compute: Compute) -> chex.Array:
  """Each row's first-layer product x_i @ W1[blocks[i]]: W1 (B, d, m), x (n, d), blocks (n,)
  -> (n, m). "blocks": a gather of each row's block and n products (d,) @ (d, m); "dense":
  X @ W1 as (d, B·m), one (n, d) @ (d, B·m) product, then each row's block (its gradient:
  the products' transposes, dW1 = Xᵀ (n, d)ᵀ @ (n, B·m) with zeros off each row's block)."""
  p = compute.matmul_precision
  if compute.first_layer == "blocks":
    return matmul("nd,ndm->nm", x, W1[blocks], p)
  h = matmul("nd,bdm->nbm", x, W1, p)
  return jnp.take_along_axis(h, blocks[:, None, None], axis=1)[:, 0]


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def first_layer(W1: chex.Array, x: chex.Array, precision: str) -> chex.Array:
  """The batched first-layer product x @ W1 per batch: W1 (G, d, m), x (G, n, d) -> (G, n, m).

  Its VJP is the usual one; it only lays xᵀ out as (G, d, n) in memory before the weight
  gradient xᵀ @ dh (contracting n, a handful of rows). Left to itself XLA folds the transpose
  into the product, which XLA:CPU then runs slower (see benchmarks/README.md).
  Being a `custom_vjp`, it supports reverse-mode autodiff (grad, vjp), not `jax.jvp`.
  """
  return matmul("gnd,gdm->gnm", x, W1, precision)


def _first_layer_fwd(W1, x, precision):
  return first_layer(W1, x, precision), (W1, x)


def _first_layer_bwd(precision, residuals, dh):
  W1, x = residuals
  xT = jax.lax.optimization_barrier(jnp.swapaxes(x, -1, -2))
  return (matmul("gdn,gnm->gdm", xT, dh, precision), matmul("gnm,gdm->gnd", dh, W1, precision))


first_layer.defvjp(_first_layer_fwd, _first_layer_bwd)


def predict_each(params: Params, x: chex.Array, blocks: chex.Array,
                 compute: Compute = Compute()) -> chex.Array:
  """f per row with its own block: x (n, d), blocks (n,) -> (n,)."""
  h = rows_first_layer(params.W1, x, blocks, compute)
  return _after_first(params, h, compute.matmul_precision)


def arm_grads(params: Params, x: chex.Array, blocks: chex.Array,
              compute: Compute = Compute()) -> tuple[chex.Array, Params]:
  """f(x_a; θ) and the compact gradients g(x_a; θ) for all K arms in one vectorised call.

  The first-layer products of all arms at once (`rows_first_layer`), then per arm the
  gradient of the rest of f in (shared layers, h_a); arm a's block gradient is the outer
  product x_a ⊗ ∂f/∂h_a (h_a = x_a W1[b_a], so ∂f/∂W1[b_a] = x_a (∂f/∂h_a)ᵀ).

  Args:
    params: θ.
    x: contexts, (K, d); blocks: each arm's first-layer block, (K,) int.
    compute: how the products run.
  Returns:
    f of shape (K,) and a `Params` of gradients with a leading K axis, whose `W1` leaf
    (K, d, m) is each arm's gradient with respect to its own block W1[blocks[a]].
  """
  h = rows_first_layer(params.W1, x, blocks, compute)
  # the shared layers copied per arm, so each arm's products are its own batch entry (shared,
  # XLA would run them as one product, summing in another order than `apply_block` per arm)
  rest = jax.tree.map(lambda v: jnp.broadcast_to(v, h.shape[:1] + v.shape), params._replace(W1=()))
  after = lambda rest, h_a: _after_first(rest, h_a, compute.matmul_precision)
  f, (g, dh) = jax.vmap(jax.value_and_grad(after, argnums=(0, 1)))(rest, h)
  return f, g._replace(W1=x[:, :, None] * dh[:, None, :])


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
