"""Classification data sets for the neural-bandit benchmarks: the data directory, loading and
preprocessing (`rbx.data.loader`), the on-disk cache of preprocessed arrays (`rbx.data.cache`)
and downloads from OpenML (`rbx.data.openml`)."""
from rbx.data.loader import (BAD_CELLS, CATEGORICAL, ENV_VAR, Dataset, data_home, find, load,
                             preprocess, read_csv, write_csv)

__all__ = ["BAD_CELLS", "CATEGORICAL", "ENV_VAR", "Dataset", "data_home", "find", "load",
           "preprocess", "read_csv", "write_csv"]
