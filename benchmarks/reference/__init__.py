"""The implementations rbx is compared with (NumPy, SciPy, PyTorch, the public neural-bandit code) and their data."""
