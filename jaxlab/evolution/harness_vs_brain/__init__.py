"""Harness versus brain (evolution-harness-vs-brain.md): sweep.py is the pure core, grid.py the runs
table, analysis.py and plots.py turn results into the report, experiment.py ties them to `jaxlab run`."""

from jaxlab.evolution.harness_vs_brain.experiment import report, run, validate

__all__ = ["report", "run", "validate"]
