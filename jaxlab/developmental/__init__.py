"""Developmental physics (developmental-physics.md): a world model that learns intuitive physics by
playing in MuJoCo scenes of four stages, curiosity by expected surprise or by learning progress, an
adaptive curriculum, held-out evaluation and violation-of-expectation probes.

batch.py pads every stage's transitions to one layout; world_model.py holds the world model (an
interaction network) and the self-model (Flax NNX, optax); curiosity.py the action choice, learning
progress and the regimes; curriculum.py stage advancement and mastery; learner.py one run's pure
functions (init, act, learn, evaluate); keys.py where every random draw comes from; population.py
and play.py the C backend's host loop over the whole population; fused.py the MJX backend's one
jitted program per chunk; evaluation.py held-out scenes and probes; analysis.py, plots.py and
experiment.py the chunk loop, the results and the report.
"""

from jaxlab.developmental.experiment import report, run, validate

__all__ = ["report", "run", "validate"]
