"""The run layer: sweeps as run directories, above the families and below the command line.

Bottom up: a run directory's lock and status (`rundir`), checkpoint files (`checkpoint`) and
results on disk (`store`: `rbx.save`, `rbx.load`); TOML configs (`config`, their key reference
`config_keys`) and the demo (`demo`); running, resuming and merging configs (`experiment`);
reports of run directories (`report`). tests/test_floors.py checks the order.
"""
