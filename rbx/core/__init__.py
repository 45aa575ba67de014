"""Machinery shared by every family: runs as `init`/`step` pairs (`loop`), the grid and seeds
(`grid`), the chunked driver with progress and sharding (`driver`, `progress`, `devices`),
what is recorded (`record`), checkpoints (`checkpoint`), results on disk (`results`) and their
plots (`plots`)."""
