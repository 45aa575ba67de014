"""Synthetic data of Covertype's shape for the timing benchmarks (NumPy only, so both the JAX
benchmark and the PyTorch reference process import it)."""
import numpy as np


def covertype_like(n, dim, arms, seed=0):
  """Data with Covertype's shape: n × dim features, `arms` classes from a random two-layer rule."""
  rng = np.random.default_rng(seed)
  X = rng.normal(size=(n, dim)).astype(np.float32)
  H = np.maximum(X @ rng.normal(size=(dim, 32)), 0.0)
  return X, np.argmax(H @ rng.normal(size=(32, arms)), axis=1)
