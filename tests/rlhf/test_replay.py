"""The learners' arithmetic survived the redesign: trajectories recorded by the code before it
(commit b153445, where the agent drew the prompt, the answers and the oracle itself: seed 0,
200 steps, α = 3) are replayed through today's `act`/`update` and scored by today's
`env.feedback`; the regret of every deployed policy must be the recorded one to float32
rounding. (The trajectories themselves differ today: the environment and the learner now draw
from separate keys.)"""
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rbx import rlhf

RECORDED = np.load(Path(__file__).with_name("pre_redesign_trajectories.npz"))
ENVS = {"example1": lambda: rlhf.example1(p=0.0, beta=0.5, r_max=4.0),
        "example2": lambda: rlhf.example2(kappa=500.0, beta=0.1, r_max=7.0)}


@pytest.mark.slow
@pytest.mark.parametrize("example", list(ENVS))
@pytest.mark.parametrize("name", ["algorithm1", "vpo", "xpo"])
def test_recorded_comparisons_give_the_recorded_regret(example, name):
  # the solver's directions at the recording (the defaults until 2026-12-03): Example 1's flat
  # maximum makes the policy sensitive to the last digits of r, which the cheaper defaults now
  # reach linearly, not quadratically (their regret differs by up to 0.019 a step here)
  recorded_solver = rlhf.SolverConfig(newton_f=True, dc_gradient=True)
  env, agent = ENVS[example](), rlhf.get(name, alpha=3.0, solver=recorded_solver)
  get = lambda field: jnp.asarray(RECORDED[f"{example}.{name}.{field}"])

  def replay(x, a1, a2, a1_wins):
    def body(state, step):
      obs = rlhf.Prompt(step[0])
      state, query = agent.act(jax.random.key(0), state, obs, env.spec)
      query = query._replace(a1=step[1], a2=step[2])          # the recorded answers
      _, regret = env.feedback(jax.random.key(0), (), obs, query)
      return agent.update(None, state, obs, query, step[3], env.spec), regret
    return jax.lax.scan(body, agent.init(None, env.spec, x.shape[0]), (x, a1, a2, a1_wins))[1]

  got = jax.jit(replay)(get("x").astype(jnp.int32), get("a1").astype(jnp.int32),
                        get("a2").astype(jnp.int32), get("a1_preferred"))
  # Example 1's optimistic objective is flat near its maximiser (r_max/β = 8): the objective F
  # agrees to 1e-7 while float32 rounding (jaxlib 0.10.2 and the dense ℓ of the solver against
  # the recording's) picks another near-tied line-search trial, so its regret agrees to 1.8%
  # (Algorithm 1) and 0.4% (XPO), or 1e-5 absolute, only; Example 2 replays to float32 rounding.
  rtol, atol = (2e-2, 1e-5) if example == "example1" else (1e-5, 1e-6)
  np.testing.assert_allclose(got, RECORDED[f"{example}.{name}.regret"], rtol=rtol, atol=atol)
  assert np.ptp(np.asarray(got)) > 0.01            # the policy moved: a non-trivial check
