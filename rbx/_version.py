"""The version of rbx (as in pyproject.toml)."""
__version__ = "0.1.0"
