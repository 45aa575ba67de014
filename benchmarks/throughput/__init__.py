"""Seed-steps/s, step and compile times, load times: how fast rbx runs."""
