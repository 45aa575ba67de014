"""Classification data sets for the neural-bandit benchmarks: the data directory, loading and
preprocessing (`rbx.data.loader`), and downloads from OpenML (`rbx.data.openml`)."""
from rbx.data.loader import ENV_VAR, Dataset, data_home, find, load, preprocess, read_csv, write_csv

__all__ = ["ENV_VAR", "Dataset", "data_home", "find", "load", "preprocess", "read_csv", "write_csv"]
