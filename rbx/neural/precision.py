"""Z_t⁻¹ for Z_t = λI + (1/m) Σ_{τ≤t} g_τ g_τᵀ (Algorithm 2, line 10; NeuralUCB; NeuralTS).

Two representations, chosen by name:

  * "diag": the diagonal approximation of Appendix F (Z_t⁻¹ ≈ diag(Z_t)⁻¹), stored as a
    `Params` pytree of diag(Z_t) — O(p) memory and work per step;
  * "exact": Z_t⁻¹ itself, (p, p), kept exact by the Sherman–Morrison rank-one update
    Z_t⁻¹ = Z_{t−1}⁻¹ − u uᵀ / (m + gᵀu), u = Z_{t−1}⁻¹ g — O(p²) per step, never an inverse.
    A compact g reads only the columns of its support (`solve`: only its rows too, so the K
    arms read K blocks of Z⁻¹, not all of it K times).
    The update runs over bands of rows so that XLA performs it in place (a fresh p × p
    buffer per step costs more in page faults than the arithmetic); under `vmap` on a CPU
    both map over the batch rather than vectorise (`_one_at_a_time`).

Vectors are arm-compact (see `network.arm_grads`): `solve` returns Z⁻¹ g_a restricted to the
parameters that f(x_a; ·) reads, which is all that (15) and the confidence widths need.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from rbx import _checks
from rbx.neural import network
from rbx.neural.network import Params


class Precision(NamedTuple):
  """`init(params, lam) -> state` (Z_0 = λI); `solve(state, params, g, blocks) -> Z⁻¹ g` for a
  K-stack of compact vectors; `update(state, params, g, block, m)` adds g gᵀ/m for one compact g."""
  name: str
  init: Callable[[Params, Any], Any]
  solve: Callable[[Any, Params, Params, chex.Array], Params]
  update: Callable[[Any, Params, Params, chex.Array, int], Any]


def _diag_init(params, lam):
  return jax.tree.map(lambda p: jnp.full(p.shape, lam, jnp.float32), params)


def _diag_solve(z, params, g, blocks):
  del params
  zb = jax.vmap(lambda b: network.block_of(z, b))(blocks)
  return jax.tree.map(jnp.divide, g, zb)


def _diag_update(z, params, g, block, m):
  del params
  return network.add_to_block(z, block, jax.tree.map(lambda x: x ** 2 / m, g))


def exact_init(params, lam):
  """The exact Z⁻¹ at the start: I/λ, (p, p)."""
  p = network.num_params(params)
  return jnp.eye(p, dtype=jnp.float32) / lam


def exact_solve(z_inv, params, g, blocks):
  """Z⁻¹g_a for each arm's gradient g_a (a pytree with a leading arm axis) and context block."""
  # Z⁻¹ g_a on the rows R_a that f(x_a; ·) reads is Z⁻¹[R_a, R_a] c_a (g_a is zero off R_a):
  # each arm reads its (|R_a|, |R_a|) part of Z⁻¹, not all of it
  def one(c, block):
    lo, n = _block_range(params, block)
    return jnp.concatenate([_times(jax.lax.dynamic_slice_in_dim(z_inv, lo, n), lo, n, c),
                            _times(z_inv[z_inv.shape[0] - (c.size - n):], lo, n, c)])
  compact = jax.vmap(lambda v: ravel_pytree(v)[0])(g)
  unravel = ravel_pytree(jax.tree.map(lambda v: v[0], g))[1]
  return jax.vmap(unravel)(jax.lax.map(lambda a: one(*a), (compact, blocks)))


def exact_update(z_inv, params, g, block, m):
  """Z⁻¹ after adding g gᵀ/m (Sherman–Morrison), for the gradient g of the arm in `block`."""
  c = ravel_pytree(g)[0]
  lo, n = _block_range(params, block)
  u = _times(z_inv, lo, n, c)                                  # Z⁻¹ g: the columns R only
  gu = c[:n] @ jax.lax.dynamic_slice_in_dim(u, lo, n) + c[n:] @ u[u.size - (c.size - n):]
  return _subtract_outer(z_inv, u, u / (m + gu))


def _block_range(params, block):
  """(first index, length) in R^p of W1[block]; a compact vector ravels as (its W1 block,
  the shared layers), which are R^p's last entries."""
  n = params.W1[0].size
  return block * n, n


def _times(a, lo, n, c):
  """a[:, R] @ c for the columns R = lo..lo+n−1 and the last c.size − n (a compact c)."""
  own = jax.lax.dynamic_slice_in_dim(a, lo, n, axis=1)
  return (own * c[:n]).sum(1) + (a[:, a.shape[1] - (c.size - n):] * c[n:]).sum(1)


def _subtract_outer(a, u, v, rows=256):
  """a − u vᵀ, a band of `rows` rows at a time so that the update runs in place."""
  n = a.shape[0]
  rows = min(rows, n)

  def band(j, a):
    s = jnp.minimum(j * rows, n - rows)      # the last band overlaps the previous one
    blk = jax.lax.dynamic_slice_in_dim(a, s, rows)
    u_blk = jax.lax.dynamic_slice_in_dim(u, s, rows)
    blk_new = blk - u_blk[:, None] * v[None, :]
    # rows before j·rows in an overlapping last band were already updated: keep them
    done = jnp.arange(rows) + s < j * rows
    return jax.lax.dynamic_update_slice_in_dim(a, jnp.where(done[:, None], blk, blk_new), s, 0)

  return jax.lax.fori_loop(0, -(-n // rows), band, a)


def _one_at_a_time(prec: Precision) -> Precision:
  """`prec` whose `solve` and `update`, under `vmap` on a CPU, map over the batch
  (`jax.custom_batching.sequential_vmap`) instead of vectorising. Vectorised, the slices of Z⁻¹
  at an arm's data-dependent block become gathers and scatters over the batched p × p matrix,
  which XLA:CPU runs several times slower than the slices — also under a vmap of one, such as
  the sweep driver's grid axis (`python -m benchmarks.profiles.exact_z_round_profile` times both). On an
  accelerator they stay vectorised (not measured there)."""
  def on_cpu(f, mapped):
    return lambda *args: (mapped if jax.default_backend() == "cpu" else f)(*args)

  def update(z_inv, params, g, block, m):
    one = lambda *args: prec.update(*args, m)
    return on_cpu(one, jax.custom_batching.sequential_vmap(one))(z_inv, params, g, block)

  return prec._replace(solve=on_cpu(prec.solve, jax.custom_batching.sequential_vmap(prec.solve)),
                       update=update)


diag = Precision("diag", _diag_init, _diag_solve, _diag_update)
exact = _one_at_a_time(Precision("exact", exact_init, exact_solve, exact_update))

PRECISIONS: dict[str, Precision] = {"diag": diag, "exact": exact}


def get(name: str) -> Precision:
  """"diag" (Appendix F's approximation) or "exact" (Sherman–Morrison)."""
  return PRECISIONS[_checks.choice("precision", name, PRECISIONS)]


def quadratic(g: Params, z_inv_g: Params) -> chex.Array:
  """gᵀ Z⁻¹ g per arm, from compact g and Z⁻¹ g (K-stacks): (K,)."""
  prods = jax.tree.map(lambda a, b: jnp.sum((a * b).reshape(a.shape[0], -1), axis=1), g, z_inv_g)
  return sum(jax.tree.leaves(prods))
