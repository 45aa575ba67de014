"""Surrogate log-likelihoods log p(r | z), z = f(x; θ), of (9) and section 6.

The canonical exponential family of (9) is log p(r | z) = r z − b(z) with b strongly convex;
b′(z) is its mean function. Section 6 uses three of them:

  * Gaussian:  −(z − r)²/2  = r z − b(z) − r²/2,  b(z) = z²/2,          b′(z) = z;
  * Bernoulli: r z − log(1 + e^z),                 b(z) = log(1 + e^z),  b′(z) = σ(z);
  * mixture:   the sum of the two,                 b(z) = z²/2 + log(1 + e^z), b′(z) = z + σ(z)
    (its reward term is 2 r z).

`log_prob` keeps the terms that do not depend on θ (such as −r²/2) as section 6 writes them;
they shift ℓ(F_t; θ) by the same amount for every arm.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from rbx import _checks


class Likelihood(NamedTuple):
  """`log_prob(r, z)`, the cumulant `b(z)` and its derivative `b_prime(z)`, all elementwise."""
  name: str
  log_prob: Callable[[jax.Array, jax.Array], jax.Array]
  b: Callable[[jax.Array], jax.Array]
  b_prime: Callable[[jax.Array], jax.Array]


gaussian = Likelihood("gaussian", lambda r, z: -0.5 * (z - r) ** 2, lambda z: 0.5 * z ** 2,
                      lambda z: z)

bernoulli = Likelihood("bernoulli", lambda r, z: r * z - jax.nn.softplus(z), jax.nn.softplus,
                       jax.nn.sigmoid)

mixture = Likelihood("mixture", lambda r, z: gaussian.log_prob(r, z) + bernoulli.log_prob(r, z),
                     lambda z: gaussian.b(z) + bernoulli.b(z),
                     lambda z: gaussian.b_prime(z) + bernoulli.b_prime(z))

LIKELIHOODS: dict[str, Likelihood] = {l.name: l for l in (gaussian, bernoulli, mixture)}


def get(name: str) -> Likelihood:
  """A surrogate likelihood by name: "gaussian", "bernoulli" or "mixture"."""
  return LIKELIHOODS[_checks.choice("likelihood", name, LIKELIHOODS)]


def log_likelihood(lik: Likelihood, r: jax.Array, z: jax.Array, weight: jax.Array) -> jax.Array:
  """ℓ(F_t; θ) of (9) over a masked history: Σ_s weight_s log p(r_s | z_s)."""
  return jnp.sum(weight * lik.log_prob(r, z))
