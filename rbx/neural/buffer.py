"""The history F_t as a fixed-size masked buffer, grouped by first-layer block.

Observations (x_s, block b_s, r_s) are stored in tiles of S rows, every tile holding one
block only, so a forward pass over the history is a batched product of each tile's block
weights (d, m) with its (S, d) rows (`network.predict_blocks`): the work is that of the n
observed rows (plus at most one part-filled tile per block), not K times more as with dense
disjoint vectors. Tiles are handed out in order, so the history occupies the first
`tiles_used` of them: full-batch passes run over that prefix only, `chunk_tiles` tiles at a
time (`num_chunks`), and cost O(t), not O(capacity), at round t.

Minibatches are stratified by block (`strata`, `sample`): each of the B blocks contributes
the same number of rows, drawn from that block's stored rows with probability proportional to
their `mask` weight, and block b's rows stand for its total weight W_b. Only block b's rows
reach W1[b], so every block's first-layer gradient sees the same number of rows however
rarely its arm is played, and the first layer stays a batched (rows, d) @ (d, m) product
with no per-row gather of weights.

Capacity: `capacity` observations; the tile count ⌈capacity / tile⌉ + B, rounded up to a
multiple of `chunk_tiles`, always suffices.
"""
from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp


class Buffer(NamedTuple):
  """Shapes: G tiles of S rows, d features, B blocks, N = capacity.

  Attributes:
    x: features, (G, S, d).
    r: rewards, (G, S).
    mask: 1.0 for a stored row, else 0.0, (G, S).
    block: each tile's block, (G,) int.
    open_tile: the tile that block b is filling, (B,) int (−1: none yet).
    fill: rows used in block b's open tile, (B,) int.
    tiles_used: tiles handed out so far, int scalar.
    slot: the flat row (g·S + s) of the i-th observation, (N,) int.
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


TILE_ROWS = 32


def tile_size(capacity: int, num_blocks: int) -> int:
  """Rows per tile, S = min(`TILE_ROWS`, capacity), whatever the capacity: passes cover the
  used tiles only, so the part-filled tiles (at most one per block) cost at most B·S rows
  (B·S = 224 at K = 7, against t = 100 stored rows), while batched (S, d) @ (d, m) training
  products run slower per row at small S (see benchmarks/README.md)."""
  del num_blocks
  return min(TILE_ROWS, capacity)


CHUNK_ROWS = 256


def chunk_tiles(buf: Buffer) -> int:
  """Tiles per chunk of a full-batch pass: about `CHUNK_ROWS` rows; divides the tile count."""
  return max(1, CHUNK_ROWS // buf.r.shape[1])


def num_chunks(buf: Buffer) -> chex.Array:
  """Chunks that hold the history: ⌈tiles_used / chunk_tiles⌉, int scalar."""
  return -(-buf.tiles_used // chunk_tiles(buf))


def chunk(buf: Buffer, i) -> tuple[chex.Array, chex.Array, chex.Array, chex.Array]:
  """Chunk i's tiles: x (C, S, d), r (C, S), mask (C, S), block (C,)."""
  C = chunk_tiles(buf)
  return tuple(jax.lax.dynamic_slice_in_dim(a, i * C, C) for a in (buf.x, buf.r, buf.mask,
                                                                   buf.block))


def empty(capacity: int, dim: int, num_blocks: int) -> Buffer:
  """An empty buffer for `capacity` observations of dimension `dim`."""
  S = tile_size(capacity, num_blocks)
  C = max(1, CHUNK_ROWS // S)
  G = -(-(-(-capacity // S) + num_blocks) // C) * C
  i32 = jnp.int32
  return Buffer(jnp.zeros((G, S, dim)), jnp.zeros((G, S)), jnp.zeros((G, S)), jnp.zeros(G, i32),
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
      x=buf.x.at[g, s].set(keep(x, buf.x[g, s])),
      r=buf.r.at[g, s].set(keep(r, buf.r[g, s])),
      mask=buf.mask.at[g, s].set(keep(1.0, buf.mask[g, s])),
      block=buf.block.at[g].set(keep(block, buf.block[g])),
      open_tile=buf.open_tile.at[block].set(keep(g, buf.open_tile[block])),
      fill=buf.fill.at[block].set(keep(s + 1, buf.fill[block])),
      tiles_used=keep(buf.tiles_used + new_tile, buf.tiles_used),
      slot=buf.slot.at[jnp.minimum(buf.count, buf.slot.shape[0] - 1)].set(
          keep(g * S + s, buf.slot[-1])),
      count=keep(buf.count + 1, buf.count))


class Strata(NamedTuple):
  """Per-block sampling tables of a buffer (fixed for a round's training steps).

  Attributes:
    cumulative: running sums of the rows' `mask` weights within each block, over the flat
      rows g·S + s, (B, G·S).
    total: each block's weight W_b = Σ_{rows of b} mask, (B,).
  """
  cumulative: chex.Array
  total: chex.Array


def strata(buf: Buffer) -> Strata:
  """The sampling tables of `sample`: O(B·G·S), once per round."""
  B = buf.open_tile.shape[0]
  S = buf.r.shape[1]
  own = jnp.repeat(buf.block, S)[None, :] == jnp.arange(B)[:, None]          # (B, G·S)
  cumulative = jnp.cumsum(jnp.where(own, buf.mask.reshape(-1), 0.0), axis=1)
  return Strata(cumulative, cumulative[:, -1])


def sample(tables: Strata, key: chex.PRNGKey, shape: tuple[int, ...]) -> chex.Array:
  """Flat rows g·S + s, `shape` + (size,) per block: (*shape, B, size) int, drawn with
  replacement with probability ∝ mask within each block (`shape` = (J, size) draws all of a
  round's minibatches at once). A block without rows gets arbitrary rows; weight them by
  `tables.total` (zero there)."""
  *lead, size = shape
  B, N = tables.cumulative.shape
  u = jax.random.uniform(key, (*lead, B, size)) * tables.total[:, None]
  search = jax.vmap(lambda c, v: jnp.searchsorted(c, v, side="right"), (0, -2), -2)
  return jnp.minimum(search(tables.cumulative, u), N - 1)


def rows(buf: Buffer, flat: chex.Array) -> tuple[chex.Array, chex.Array]:
  """The stored rows at flat indices (B, n) (as from `sample`): x (B, n, d) and r (B, n)."""
  S = buf.r.shape[1]
  g, s = flat // S, flat % S
  return buf.x[g, s], buf.r[g, s]
