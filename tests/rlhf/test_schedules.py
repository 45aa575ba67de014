"""α_t schedules against their closed forms, traced and vmapped over their scale."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rbx import schedules


def test_closed_forms():
  A, T, beta, r_max, kappa, mu = 3, 1000, 0.5, 2.0, 4.0, 3.0
  t = np.array([1.0, 10.0, 500.0])
  L = np.log(T)
  p3 = A * L + t ** (1 / (beta + 2)) * (r_max / kappa) ** (beta / (beta + 2)) * (
      L / (A * (r_max + L))) ** ((beta + 1) / (beta + 2))
  np.testing.assert_allclose(schedules.proposition3(A, T, beta, r_max, kappa)(t), p3, rtol=1e-5)
  np.testing.assert_allclose(schedules.theorem1_beta0(A, T, r_max, scale=2.0)(t),
                             2 * (A * L + np.sqrt(t / (A * r_max))), rtol=1e-5)
  e = A + t ** ((beta + 1) / (3 * beta + 2)) * (r_max / mu) ** (beta / (3 * beta + 2)) * (
      L / (A * (r_max + L))) ** ((2 * beta + 1) / (3 * beta + 2))
  np.testing.assert_allclose(schedules.appendix_e(A, T, beta, r_max, mu)(t), e, rtol=1e-5)
  np.testing.assert_allclose(schedules.constant(2.5)(t), 2.5)
  np.testing.assert_allclose(schedules.power(0.1, 0.5)(t), 0.1 * np.sqrt(t), rtol=1e-6)


def test_theorem1_condition_and_monotone():
  # Theorem 1 asks for α_t > A log T, non-decreasing in t.
  for s in (schedules.proposition3(4, 500, 0.2, 3.0, 2.0), schedules.theorem1_beta0(4, 500, 3.0)):
    a = np.asarray(jax.vmap(s)(jnp.arange(1, 501)))
    assert np.all(a > 4 * np.log(500)) and np.all(np.diff(a) >= 0)


def test_scale_and_beta_are_traceable():
  f = jax.jit(jax.vmap(lambda scale, beta: schedules.proposition3(3, 100, beta, 1.0, 2.0, scale)(7)))
  out = f(jnp.array([1.0, 2.0]), jnp.array([0.5, 0.5]))
  np.testing.assert_allclose(out[1], 2 * out[0], rtol=1e-6)


def test_sequence_answer_counts_in_log_space():
  # A = V^L read as log A: at 32^20 ≈ 10^30 every term is finite and matches the closed form
  # (float64); at 32^32 ≈ 10^48 the term of size A overflows float32 and says so.
  A, T, beta, r_max, kappa, mu = 32 ** 20, 1000, 0.5, 2.0, 4.0, 3.0
  t, L = np.array([1.0, 500.0]), np.log(T)
  p3 = A * L + t ** (1 / (beta + 2)) * (r_max / kappa) ** (beta / (beta + 2)) * (
      L / (A * (r_max + L))) ** ((beta + 1) / (beta + 2))
  np.testing.assert_allclose(schedules.proposition3(A, T, beta, r_max, kappa)(t), p3, rtol=1e-5)
  np.testing.assert_allclose(schedules.theorem1_beta0(A, T, r_max)(t), A * L, rtol=1e-5)
  assert np.isfinite(schedules.appendix_e(A, T, beta, r_max, mu)(t)).all()
  A = 32 ** 32
  for make in (lambda: schedules.proposition3(A, T, beta, r_max, kappa),
               lambda: schedules.theorem1_beta0(A, T, r_max)):
    with pytest.raises(ValueError, match=r"alpha_t = A log T \+ \.\.\. >= 10\^49\.0 exceeds float32"):
      make()
  with pytest.raises(ValueError, match=r"alpha_t = A \+ \.\.\. >= 10\^48\.2 exceeds float32"):
    schedules.appendix_e(A, T, beta, r_max, mu)
  with pytest.raises(ValueError, match="exceeds float32"):      # scale counts when concrete
    schedules.theorem1_beta0(2 ** 100, T, r_max, scale=1e10)
