"""The history F_t as a fixed-size masked buffer, grouped by first-layer block.

Observations (x_s, block b_s, r_s) are stored in tiles of S rows, every tile holding one
block only, so a forward pass over the history is a batched product of each tile's block
weights (m, d) with its (d, S) columns (`network.predict_columns`): the work is that of the n
observed rows (plus at most one part-filled tile per block), not K times more as with dense
disjoint vectors.

Capacity: `capacity` observations; the tile count ⌈capacity / tile⌉ + B always suffices.
"""
from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp


class Buffer(NamedTuple):
  """Shapes: G tiles of S rows, d features, B blocks, N = capacity.

  Attributes:
    x: features, stored column-wise per tile, (G, d, S).
    r: rewards, (G, S).
    mask: 1.0 for a stored row, else 0.0, (G, S).
    block: each tile's block, (G,) int.
    open_tile: the tile that block b is filling, (B,) int (−1: none yet).
    fill: rows used in block b's open tile, (B,) int.
    tiles_used: tiles handed out so far, int scalar.
    slot: the flat row (g·S + s) of the i-th observation, (N,) int (for minibatches).
    count: the number n of stored observations, int scalar.
  """
  x: chex.Array
  r: chex.Array
  mask: chex.Array
  block: chex.Array
  open_tile: chex.Array
  fill: chex.Array
  tiles_used: chex.Array
  slot: chex.Array
  count: chex.Array


def tile_size(capacity: int, num_blocks: int) -> int:
  """Rows per tile, S = capacity / (8B) but at least 16 (or the capacity): the part-filled
  tiles (at most one per block) then waste at most capacity/8 rows for large buffers, and
  tiles stay large enough for efficient products."""
  return max(min(16, capacity), capacity // (8 * num_blocks))


def empty(capacity: int, dim: int, num_blocks: int) -> Buffer:
  """An empty buffer for `capacity` observations of dimension `dim`."""
  S = tile_size(capacity, num_blocks)
  G = -(-capacity // S) + num_blocks
  i32 = jnp.int32
  return Buffer(jnp.zeros((G, dim, S)), jnp.zeros((G, S)), jnp.zeros((G, S)), jnp.zeros(G, i32),
                jnp.full(num_blocks, -1, i32), jnp.zeros(num_blocks, i32), jnp.zeros((), i32),
                jnp.zeros(capacity, i32), jnp.zeros((), i32))


def add(buf: Buffer, x: chex.Array, block, r) -> Buffer:
  """Appends one observation (x (d,), block, r). Past the capacity it is dropped."""
  S = buf.r.shape[1]
  room = buf.count < buf.slot.shape[0]
  new_tile = (buf.open_tile[block] < 0) | (buf.fill[block] == S)
  g = jnp.where(new_tile, buf.tiles_used, buf.open_tile[block])
  s = jnp.where(new_tile, 0, buf.fill[block])
  keep = lambda new, old: jnp.where(room, new, old)
  return Buffer(
      x=buf.x.at[g, :, s].set(keep(x, buf.x[g, :, s])),
      r=buf.r.at[g, s].set(keep(r, buf.r[g, s])),
      mask=buf.mask.at[g, s].set(keep(1.0, buf.mask[g, s])),
      block=buf.block.at[g].set(keep(block, buf.block[g])),
      open_tile=buf.open_tile.at[block].set(keep(g, buf.open_tile[block])),
      fill=buf.fill.at[block].set(keep(s + 1, buf.fill[block])),
      tiles_used=keep(buf.tiles_used + new_tile, buf.tiles_used),
      slot=buf.slot.at[jnp.minimum(buf.count, buf.slot.shape[0] - 1)].set(
          keep(g * S + s, buf.slot[-1])),
      count=keep(buf.count + 1, buf.count))


def sample(buf: Buffer, key: chex.PRNGKey, size: int):
  """`size` stored observations drawn uniformly with replacement: x (size, d), block (size,),
  r (size,). An empty buffer returns zero-weight rows (check `buf.count`)."""
  i = jax.random.randint(key, (size,), 0, jnp.maximum(buf.count, 1))
  flat = buf.slot[i]
  S = buf.r.shape[1]
  g, s = flat // S, flat % S
  return buf.x[g, :, s], buf.block[g], buf.r[g, s]
