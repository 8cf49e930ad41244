"""Developmental physics (developmental-physics.md, issue 6, the learner): a world model that learns
intuitive physics by playing in MuJoCo scenes of four stages, surprise-driven curiosity, an adaptive
curriculum, held-out evaluation and violation-of-expectation probes.

batch.py pads every stage's transitions to one layout; world_model.py holds the world model and the
self-model (Flax NNX, optax); curiosity.py the action choice and the regimes; curriculum.py stage
advancement and mastery; learner.py the jitted act / learn / evaluate programs over a runs axis;
play.py the host loop with the physics (jaxlab.physics) and the Orbax checkpoints; evaluation.py
held-out scenes and probes; analysis.py, plots.py and experiment.py the results and report.
"""

from jaxlab.developmental.experiment import report, run, validate

__all__ = ["report", "run", "validate"]
