"""The surrogate likelihoods of (9) and section 6 against closed forms."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from rbx.neural import likelihoods

Z = jnp.linspace(-30.0, 30.0, 61)
R = jnp.tile(jnp.array([0.0, 1.0, 0.3]), 21)[:61]


def test_gaussian():
  lik = likelihoods.get("gaussian")
  np.testing.assert_allclose(lik.b(Z), Z ** 2 / 2, rtol=1e-6)
  np.testing.assert_allclose(lik.b_prime(Z), Z, rtol=1e-6)
  # log N(r; z, 1) up to the constant −log √(2π); and r z − b(z) − r²/2
  np.testing.assert_allclose(lik.log_prob(R, Z), stats.norm.logpdf(R, Z) + 0.5 * np.log(2 * np.pi),
                             rtol=1e-5)
  np.testing.assert_allclose(lik.log_prob(R, Z), R * Z - lik.b(Z) - R ** 2 / 2, rtol=1e-5, atol=1e-5)


def test_bernoulli():
  lik = likelihoods.get("bernoulli")
  np.testing.assert_allclose(lik.b(Z), np.logaddexp(0.0, np.asarray(Z)), rtol=1e-6)
  np.testing.assert_allclose(lik.b_prime(Z), 1 / (1 + np.exp(-np.asarray(Z, np.float64))),
                             rtol=1e-5, atol=1e-30)
  r = (R > 0.5).astype(jnp.float32)
  zs = jnp.linspace(-8.0, 8.0, 61)
  np.testing.assert_allclose(lik.log_prob(r, zs),
                             stats.bernoulli.logpmf(r, 1 / (1 + np.exp(-np.asarray(zs)))), rtol=1e-4,
                             atol=1e-6)
  assert np.isfinite(lik.log_prob(r, Z)).all()     # no overflow at |z| = 30


def test_mixture_is_the_sum():
  lik, g, b = (likelihoods.get(n) for n in ("mixture", "gaussian", "bernoulli"))
  np.testing.assert_allclose(lik.log_prob(R, Z), g.log_prob(R, Z) + b.log_prob(R, Z), rtol=1e-6)
  np.testing.assert_allclose(lik.b(Z), Z ** 2 / 2 + np.logaddexp(0.0, np.asarray(Z)), rtol=1e-6)
  # −½(z − r)² + r z − log(1 + e^z) of section 6 = 2 r z − b(z) − r²/2
  np.testing.assert_allclose(lik.log_prob(R, Z), 2 * R * Z - lik.b(Z) - R ** 2 / 2, rtol=1e-5,
                             atol=1e-4)


@pytest.mark.parametrize("name", sorted(likelihoods.LIKELIHOODS))
def test_b_prime_is_the_derivative_of_b_and_b_is_convex(name):
  lik = likelihoods.get(name)
  np.testing.assert_allclose(jax.vmap(jax.grad(lik.b))(Z), lik.b_prime(Z), rtol=1e-5, atol=1e-6)
  assert (jax.vmap(jax.grad(lik.b_prime))(jnp.linspace(-8.0, 8.0, 33)) > 0).all()   # b convex
  # the score of (9): ∂/∂z log p(r | z) = c·r − b′(z) (c = 2 for the mixture, else 1)
  c = 2.0 if name == "mixture" else 1.0
  score = jax.vmap(jax.grad(lik.log_prob, argnums=1))(R, Z)
  np.testing.assert_allclose(score, c * R - lik.b_prime(Z), rtol=1e-5, atol=1e-5)


def test_log_likelihood_is_the_masked_sum():
  lik = likelihoods.gaussian
  w = (jnp.arange(61) % 2).astype(jnp.float32)
  np.testing.assert_allclose(likelihoods.log_likelihood(lik, R, Z, w),
                             np.sum(np.asarray(w) * -0.5 * (np.asarray(Z) - np.asarray(R)) ** 2),
                             rtol=1e-5)


def test_unknown_likelihood_raises():
  with pytest.raises(ValueError, match="likelihood"):
    likelihoods.get("poisson")
