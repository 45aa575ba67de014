"""The machinery every family shares, and the design it rests on.

**One agent protocol.** An agent is the learner and nothing more (`protocol.Agent`):

    state         = init(key, spec, horizon)
    state, action = act(key, state, obs, spec)
    state         = update(key, state, obs, action, feedback, spec)

It sees what a learner sees — the problem's `spec` (RLHF: π_ref, ρ, β, r_max; bandits: the
context dimension and the number of arms), this step's observation (a prompt, the arms'
contexts) and the feedback on its own action (a comparison, a reward) — and never r*, arm
means or labels. Acting and learning are separate calls because the environment answers in
between; `act` may keep in the state what it computed for `update` (GA's per-arm estimates,
NeuralUCB's gradients), so nothing is computed twice. The spec is passed to every call, as
gymnax passes `EnvParams`, so no agent carries a per-seed copy of it. Agents count their own
steps (α_t needs t); the run passes t to nobody.

**One environment protocol.** An environment is a pytree (its arrays may be traced, so a grid
over β or κ is one program) with `spec`, `reset(key)`, `observe(key, state) -> (state, obs)`
and `feedback(key, state, obs, action) -> (feedback, regret)`. The environment holds the
ground truth, draws the observation and the feedback, and scores the step's regret term —
for RLHF the regret of the policy π^(t) that the learner's action reports deploying, for
bandits that of the chosen arm — so regret is computed in one place per family.

**One run, one sweep, one result type.** `protocol.pair(env, agent, horizon)` is one seed as
`init(key)`/`step(carry, key, t)`; step t's key `fold_in(key, t)` splits into an environment
key and an agent key, so neither side can see the other's randomness and a seed's trajectory
does not depend on its batch-mates. `sweep.sweep` (exported as `rbx.sweep`) runs
`build(**point) -> (env, agent)` over seeds × grid × steps with the chunked driver
(`driver`, `grid`, `record`, `progress`, `devices`): traced fields vmapped, static fields
looped over, seeds mapped in batches and sharded over devices and hosts. It is
`sweep.run(sweep.plan(...), seeds, sweep.RunOptions(...))`: the `Plan` — every grid point
checked, the seed batch chosen — is made once and read by the memory check, the run and a
TOML run's metadata (`rbx.runs.config.Config.plan`). TOML runs (`rbx.runs.experiment`), both
families' conveniences, benchmarks, notebooks and tests all call it, and it returns `results.Results` — the same type that `rbx run` saves and `rbx.load` reads
back.

**Family registries.** Each family declares its environments and agents once
(`registry.Family`: names, parameters with kind, static or traced, range). The Python sweep's
static fields, TOML validation and error messages, and `rbx run` read that declaration; this
package names no family. Family-specific analysis (the RLHF paper's regret exponent) is a hook
of the family's declaration, used by `plots` and `rbx.runs.report`.

Modules: `protocol`, `registry`, `sweep`, `driver`, `grid`, `record`, `progress`, `devices`,
`memory` (the estimate a sweep is checked against), `compile_cache` (the persistent
compilation cache every sweep turns on), `reproducibility` (what a seed's bits depend on, a
run's `bits`), `results`, `plots`. They import no module
above them — not the families (`rbx.rlhf`, `rbx.neural`, `rbx.data`), nor the run layer
(`rbx.runs`: configs, run directories, checkpoints, reports) or `rbx.cli`, which use them; a
config reaches them as plain values, its `build` a `registry.Build` (tests/test_floors.py
checks every import).
"""
from rbx.core.protocol import Agent, Environment, Run, Transition, pair, rollout  # noqa: F401
