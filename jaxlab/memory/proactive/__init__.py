"""Proactive memory value (proactive-memory-value.md) as a jaxlab experiment.

records.py holds the memory pytree, the planted day and random days; value.py the value function
V = I*D + U + C + N - F; sim.py the Schmitt-trigger policy, the scripted user and the metrics, as a
pure scan over ticks vmapped over runs; learn.py the smooth relaxation and the optax learner of
oscillation per tag class; grid.py the runs table; analysis.py, plots.py and experiment.py turn
results into the report.
"""

from jaxlab.memory.proactive.experiment import report, run, validate

__all__ = ["report", "run", "validate"]
