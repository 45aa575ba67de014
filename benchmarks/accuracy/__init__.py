"""How close rbx's solves and numerics come to a reference, and what a setting costs in regret."""
