"""Hidden gems and the wisdom of crowds (swarm-hidden-gems.md): gems.py is the public score API
(q, m, c, delta, g), model.py the pure simulation core, grid.py the runs table, analysis.py and
plots.py turn results into the report, experiment.py ties them to `jaxlab run`."""

from jaxlab.swarm.hidden_gems.experiment import report, run, validate
from jaxlab.swarm.hidden_gems.gems import ScoreInputError, c, delta, g, m, q, unpredictability

__all__ = ["ScoreInputError", "c", "delta", "g", "m", "q", "report", "run", "unpredictability", "validate"]
