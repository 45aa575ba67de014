"""The sections of the reproduction report, one module each (see `common` and reproduce.py)."""
