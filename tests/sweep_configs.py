"""A small TOML sweep (Example 1, Algorithm 1, a tiny solver, a β grid) for the tests that run
`rbx run` end to end."""


def example1_sweep(seeds: int, steps: int, chunk: int) -> str:
  return f"""
family = "rlhf"
seeds = {seeds}
steps = {steps}
chunk = {chunk}
[env]
name = "example1"
[agent]
name = "algorithm1"
alpha = 3.0
[agent.solver]
starts = 2
iterations = 2
line_search = 2
keep = 2
[grid]
beta = [0.5, 1.0]
"""
