"""Organization forms (swarm-org-forms.md): model.py is the pure core, grid.py the runs table,
analysis.py and plots.py turn results into the report, experiment.py ties them to `jaxlab run`."""

from jaxlab.swarm.org_forms.experiment import report, run, validate

__all__ = ["report", "run", "validate"]
