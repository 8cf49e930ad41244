"""Evolution strategies by name for evolution-harness-vs-brain.md: a registry of strategies with
evosax's interface (`registry.py`), the prototype-table GA behind the published regimes
(`prototype_ga.py`), and every evosax algorithm (`evosax_adapter.py`).

A strategy is an object with evosax 0.3's interface that MAXIMIZES fitness (everywhere in jaxlab):
  population_size, default_params   (a pytree of arrays: the hyperparameters)
  init(key, mean, params) -> state                  distribution-based: starts from a mean genome
  init(key, population, fitness, params) -> state   population-based: starts from an evaluated
                                                    first generation (the sweep draws and scores it)
  ask(key, state, params) -> (population, state)
  tell(key, population, fitness, state, params) -> (state, metrics)
and optionally `start(population, params)` (shapes a population-based strategy's random first
generation) and `param_errors(params)` (hyperparameters out of range, as (field, expected) pairs).

`register(name, factory, genome=..., params=..., myopic=...)` adds a named strategy;
`factory(population_size, genome, **options)` builds it for a genome kind (genomes.py), `params`
overrides its default hyperparameters, and `myopic` selects on the myopic twin of F. A regime is
`NAME` or `NAME@GENOME` (another kind than the entry's default). `evosax:ALGORITHM` is every evosax
algorithm, distribution- and population-based alike, behind `Evosax*`: evosax minimizes, so the
adapter hands it -fitness and flips its fitness metrics back; that is jaxlab's only sign flip.
A config sets hyperparameters per regime (`strategy_params.<regime>.<field>`): fields of the
strategy's params, `myopic`, or options of its factory (for evosax: `learning_rate` with
`optimizer` "sgd" or "adam", `std` for a constant std schedule, and plain constructor arguments).
"""

from jaxlab.evolution.strategies.registry import (EVOSAX, Entry, Regime, RegimeError, describe, entry, family_names,
                                                  names, population_based, register, register_family, resolve,
                                                  unregister)
from jaxlab.evolution.strategies.prototype_ga import N_UNIFORM, PUBLISHED, Params, PrototypeGA, State
from jaxlab.evolution.strategies.evosax_adapter import Evosax, evosax_strategy


def evosax_names() -> list[str]:
  """Every evosax algorithm's regime name (`evosax:NAME`)."""
  return family_names(EVOSAX)


__all__ = ["EVOSAX", "Entry", "Evosax", "N_UNIFORM", "PUBLISHED", "Params", "PrototypeGA", "Regime", "RegimeError",
           "State", "describe", "entry", "evosax_names", "evosax_strategy", "family_names", "names",
           "population_based", "register", "register_family", "resolve", "unregister"]
