"""Evolutionary simulations as a library: world.py (niches, tools, tasks), controller.py (prototype
table and MLP brains), genomes.py (what a regime evolves), strategies/ (the registry: published
regimes, evosax:NAME, your own), evaluation.py (the key convention and the public fitness API),
and one package per experiment.

  jaxlab.evolution.fitness(genomes, seed, config, k)         # table genomes on a seed's tasks
  jaxlab.evolution.mlp_fitness(params, seed, config, width)  # MLP brains, same tasks
  jaxlab.evolution.task_key(config, seed)                    # the key the sweep draws them from
  jaxlab.evolution.register(name, factory, ...)              # a strategy, usable by name in the sweep
"""

from jaxlab.evolution.evaluation import fitness, frozen_brain, mlp_fitness, task_key, tasks
from jaxlab.evolution.strategies import register, resolve

__all__ = ["fitness", "frozen_brain", "mlp_fitness", "register", "resolve", "task_key", "tasks"]
