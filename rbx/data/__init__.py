"""Classification data sets for the neural-bandit benchmarks. One direction, bottom up: the
types, names and paths (`rbx.data.base`: `Dataset`, the options, the data directory, the CSV
writer), then beside each other the on-disk cache of preprocessed arrays (`rbx.data.cache`)
and the downloads from OpenML (`rbx.data.openml`), then finding, parsing and preprocessing
(`rbx.data.loader`, which reads the cache)."""
from rbx.data.base import BAD_CELLS, CATEGORICAL, ENV_VAR, Dataset, data_home, write_csv
from rbx.data.loader import find, is_path, load, preprocess, read_csv

__all__ = ["BAD_CELLS", "CATEGORICAL", "ENV_VAR", "Dataset", "data_home", "find", "is_path", "load",
           "preprocess", "read_csv", "write_csv"]
