"""The policy classes of the RLHF schemes, one module each, all implementing `PolicyClass`.

=============  ==================================  ==========================  ==================
class          the policy π^(t)                    the optimistic step         environments
=============  ==================================  ==========================  ==================
`tabular`      π_r per prompt and answer           exact per prompt            every one
`linear`       π_{θᵀφ}, one θ for all prompts      exact over θ                with features
`practical`    a parametric π_θ (`policies`)       optax steps, DPO-form loss  every one
`sequence`     an autoregressive π_θ               optax steps, DPO-form loss  token sequences
=============  ==================================  ==========================  ==================

Every class builds its agent of every row of the scheme table (`rbx.rlhf.schemes`); the
registry (`rbx.rlhf.registry`) names them "class/scheme". A new class is one module with a
`CLASS`, registered by `rbx.rlhf.registry.add_class`.
"""
from rbx.rlhf.learners import linear, policies, practical, sequence, tabular
from rbx.rlhf.learners.base import PolicyClass, agent_name

CLASSES: dict[str, PolicyClass] = {c.name: c for c in (tabular.CLASS, linear.CLASS,
                                                       practical.CLASS, sequence.CLASS)}
"""The classes by name; `rbx.rlhf.registry.add_class` adds one."""

__all__ = ["CLASSES", "PolicyClass", "agent_name", "linear", "policies", "practical", "sequence",
           "tabular"]
