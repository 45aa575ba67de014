"""One run of an agent as a pair of pure functions, shared by every family.

A family turns (environment, agent) into a `Run`: `init(key) -> carry` builds the state a
seed starts from, `step(carry, key, t) -> (carry, info)` plays step t (1-based) with the
seed's key. `scan` loops `step` over a range of steps, so a run of T steps can be cut into
chunks t0..t0+n−1 with the carry passed between them (the chunked driver does this from
Python); since step t sees only (carry, key, t), the chunks compose to the uncut run.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp


class Run(NamedTuple):
  """`init(key) -> carry` and `step(carry, key, t) -> (carry, info)`, both pure.

  `info` is a pytree of per-step arrays with a scalar `regret` field (a term of the
  family's cumulative regret).
  """
  init: Callable[[chex.PRNGKey], Any]
  step: Callable[[Any, chex.PRNGKey, chex.Array], tuple[Any, Any]]


def scan(run: Run, key: chex.PRNGKey, carry, t0, length: int):
  """Steps t0, …, t0 + length − 1 of `run` from `carry`; returns (carry, info of shape (length,))."""
  def body(c, t):
    return run.step(c, key, t)

  return jax.lax.scan(body, carry, t0 + jnp.arange(length))


def rollout(run: Run, key: chex.PRNGKey, steps: int):
  """The whole run t = 1..steps from `init(key)`; returns the per-step info, fields (steps,)."""
  return scan(run, key, run.init(key), 1, steps)[1]


def batched_map(f: Callable, xs, batch: int):
  """`lax.map(f, xs)` in vmapped batches of `batch` along the leading axis; batch = 1 maps the
  unbatched f (a vmap of one would still batch every operation, loops included)."""
  return jax.lax.map(f, xs, batch_size=None if batch == 1 else batch)
