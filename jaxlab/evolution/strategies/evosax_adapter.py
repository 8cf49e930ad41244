"""Every evosax algorithm as a strategy, `evosax:ALGORITHM`, distribution- and population-based
alike. evosax minimizes: the adapter hands it -fitness and flips its fitness metrics back, jaxlab's
only sign flip."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Any

from jaxlab.evolution import genomes as genome_kinds
from jaxlab.evolution.strategies.registry import EVOSAX, Entry, RegimeError, _fields, register, register_family

@dataclasses.dataclass(frozen=True)
class Evosax:
  """An evosax algorithm, maximizing. evosax minimizes: `tell` (and a population-based `init`)
  hands it -fitness and the fitness-valued metrics are flipped back. Its state keeps evosax's
  own (minimizing) `best_fitness`."""
  algorithm: Any

  @property
  def population_size(self) -> int:
    return self.algorithm.population_size

  @property
  def default_params(self):
    return self.algorithm.default_params

  def ask(self, key, state, params):
    return self.algorithm.ask(key, state, params)

  def tell(self, key, population, fitness, state, params):
    state, metrics = self.algorithm.tell(key, population, -fitness, state, params)
    return state, {m: -v if "fitness" in m else v for m, v in metrics.items()}


@dataclasses.dataclass(frozen=True)
class EvosaxDistribution(Evosax):
  def init(self, key, mean, params):
    return self.algorithm.init(key, mean, params)


@dataclasses.dataclass(frozen=True)
class EvosaxPopulation(Evosax):
  def init(self, key, population, fitness, params):
    return self.algorithm.init(key, population, -fitness, params)


_RESERVED = ("self", "population_size", "solution", "fitness_shaping_fn", "metrics_fn", "optimizer", "std_schedule")


def evosax_strategy(algorithm: str, population_size: int, genome, *, learning_rate: float | None = None,
                    optimizer: str = "sgd", std: float | None = None, **options) -> Evosax:
  """evosax's `algorithm` on a continuous genome kind. `learning_rate` (and `optimizer`, "sgd" or
  "adam") set the optax optimizer, `std` a constant std schedule, where the algorithm takes them;
  other options go to its constructor as they are."""
  import optax
  from evosax.algorithms import algorithms
  from evosax.algorithms.population_based.base import PopulationBasedAlgorithm

  name = EVOSAX + algorithm
  if not genome.continuous:
    raise RegimeError(name, None, f"evosax algorithms need a real-valued genome; {genome.name!r} is not "
                                  f"(use one of {list(genome_kinds.CONTINUOUS)})")
  cls = algorithms[algorithm]
  accepted = inspect.signature(cls.__init__).parameters
  kwargs = {}
  if learning_rate is not None or optimizer != "sgd":
    if "optimizer" not in accepted:
      raise RegimeError(name, "learning_rate", f"{algorithm} takes no optimizer")
    if optimizer not in ("sgd", "adam"):
      raise RegimeError(name, "optimizer", f"must be 'sgd' or 'adam', got {optimizer!r}")
    if learning_rate is None:
      raise RegimeError(name, "learning_rate", "must be given with `optimizer`")
    kwargs["optimizer"] = getattr(optax, optimizer)(learning_rate=learning_rate)
  if std is not None:
    if "std_schedule" not in accepted:
      raise RegimeError(name, "std", f"{algorithm} takes no std schedule (its params may have std_init)")
    kwargs["std_schedule"] = optax.constant_schedule(std)
  for option, value in options.items():
    if option not in accepted or option in _RESERVED:
      valid = [p for p in accepted if p not in _RESERVED]
      raise RegimeError(name, option, f"not a hyperparameter of {algorithm}; its params: "
                                      f"{_fields(cls(population_size, genome.mean()).default_params)}, options: "
                                      f"learning_rate, optimizer, std (where it takes them), {valid}, or myopic")
    kwargs[option] = value
  algo = cls(population_size=population_size, solution=genome.mean(), **kwargs)
  return (EvosaxPopulation if issubclass(cls, PopulationBasedAlgorithm) else EvosaxDistribution)(algo)


@functools.lru_cache(maxsize=None)
def _evosax_entry(algorithm: str) -> Entry:
  from evosax.algorithms import algorithms
  if algorithm not in algorithms:
    raise RegimeError(EVOSAX + algorithm, None, f"evosax has no algorithm {algorithm!r}; it has {sorted(algorithms)}")
  return Entry(functools.partial(evosax_strategy, algorithm), "mlp", genome_kinds.CONTINUOUS)


def _algorithms() -> list[str]:
  from evosax.algorithms import algorithms
  return list(algorithms)


register_family(EVOSAX, _evosax_entry, _algorithms)
# The MLP brain on the field kit, evolved by SNES: the sixth regime of the recorded run.
register("mlp_evosax", functools.partial(evosax_strategy, "SNES"), genome="mlp", genomes=genome_kinds.CONTINUOUS)
