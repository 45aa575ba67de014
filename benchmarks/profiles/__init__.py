"""Where the time goes: traces and part-by-part timings behind the solvers' and drivers' choices."""
