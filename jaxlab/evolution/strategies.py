"""Evolution strategies by name for evolution-harness-vs-brain.md: a registry of strategies with
evosax's interface, the prototype-table GA behind the published regimes, and every evosax algorithm.

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

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import re
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxlab.evolution import controller, world
from jaxlab.evolution import genomes as genome_kinds

EVOSAX = "evosax:"
PUBLISHED = ("model_first", "harness_first", "coevolution", "brain_directed", "conservative")


class RegimeError(ValueError):
  """A regime name or hyperparameter that cannot be used; `field` is the hyperparameter or None."""

  def __init__(self, regime: str, field: str | None, message: str):
    self.regime, self.field = regime, field
    super().__init__(message)


@dataclasses.dataclass(frozen=True)
class Entry:
  """A registered strategy (hashable: with the options it keys the built strategy objects)."""
  factory: Callable
  genome: str                    # the kind it evolves when a regime names none
  genomes: tuple[str, ...]       # the kinds it can evolve
  params: tuple = ()             # (field, value) pairs over the strategy's default params
  myopic: bool = False           # selection on the myopic twin of F


_REGISTRY: dict[str, Entry] = {}


def register(name: str, factory: Callable, *, genome: str = "table", genomes: tuple[str, ...] | None = None,
             params: dict | None = None, myopic: bool = False, replace: bool = False) -> None:
  """Adds the strategy `name`; `factory(population_size, genome, **options)` returns it.

  `genome` is the kind it evolves by default, `genomes` every kind it can (default: `genome`
  only), `params` fixed hyperparameter values over its defaults. Registering a taken name is an
  error unless `replace=True` (programs compiled for the old entry are never reused for the new).
  """
  if not re.fullmatch(r"[A-Za-z0-9_.:\-]+", name or "") or name.startswith(EVOSAX):
    raise ValueError(f"strategy name {name!r}: use letters, digits and _.:- (no '@'), not starting with {EVOSAX!r}")
  kinds = tuple(genomes or (genome,))
  unknown = [k for k in (genome, *kinds) if k not in genome_kinds.KINDS]
  if unknown or genome not in kinds:
    raise ValueError(f"strategy {name!r}: genome kinds must be among {sorted(genome_kinds.KINDS)} and include "
                     f"the default {genome!r}, got {kinds}")
  if name in _REGISTRY and not replace:
    raise ValueError(f"strategy {name!r} is already registered; pass replace=True to replace it")
  _REGISTRY[name] = Entry(factory, genome, kinds, tuple(sorted((params or {}).items())), myopic)


def unregister(name: str) -> None:
  _REGISTRY.pop(name, None)


def names() -> list[str]:
  """Registered names (evosax algorithms are there too, as evosax:NAME; see `evosax_names`)."""
  return sorted(_REGISTRY)


def evosax_names() -> list[str]:
  from evosax.algorithms import algorithms
  return sorted(EVOSAX + n for n in algorithms)


def entry(name: str) -> Entry:
  if name.startswith(EVOSAX):
    return _evosax_entry(name[len(EVOSAX):])
  if name not in _REGISTRY:
    raise RegimeError(name, None, f"no strategy {name!r}; registered: {names()}, or evosax:ALGORITHM "
                                  "(a module that registers more can be listed in `imports`)")
  return _REGISTRY[name]


def import_modules(modules) -> None:
  """Imports modules that register strategies (a config's `imports`)."""
  for module in modules:
    importlib.import_module(module)


# --- resolving a regime name into a strategy, a genome kind and its params ---

@dataclasses.dataclass(frozen=True, eq=False)
class Regime:
  name: str
  strategy: Any
  genome: Any
  params: Any                    # NumPy leaves, canonical dtypes (one row's worth)
  myopic: bool
  options: tuple = ()            # (name, value) pairs the factory was built with

  @property
  def population_based(self) -> bool:
    return population_based(self.strategy)


def population_based(strategy) -> bool:
  """Whether `init` takes an evaluated population (evosax's population-based signature)."""
  return "fitness" in inspect.signature(strategy.init).parameters


@functools.lru_cache(maxsize=None)
def _build(e: Entry, population_size: int, genome, options: tuple):
  # Cached so one regime gives one strategy object: the object keys the compiled programs.
  return e.factory(population_size, genome, **dict(options))


def _fields(params) -> list[str]:
  if dataclasses.is_dataclass(params):
    return [f.name for f in dataclasses.fields(params)]
  return list(params) if isinstance(params, dict) else []


def _canonical(x):
  x = np.asarray(x)
  return x.astype(jax.dtypes.canonicalize_dtype(x.dtype))


def _with(params, values: dict, name: str):
  """`params` with `values` cast to each field's dtype (scalars stay scalars)."""
  current = {f: getattr(params, f) if dataclasses.is_dataclass(params) else params[f] for f in _fields(params)}
  for field, value in values.items():
    old = _canonical(current[field])
    try:
      new = np.asarray(value).astype(old.dtype)
      exact = old.dtype.kind not in "biu" or bool(np.all(new == np.asarray(value)))   # no silent 2.7 -> 2
    except (TypeError, ValueError):
      exact = False
    if not exact:
      raise RegimeError(name, field, f"must be a {old.dtype} value, got {value!r}")
    if new.shape != old.shape:
      raise RegimeError(name, field, f"must have shape {old.shape}, got {value!r}")
    current[field] = new
  current = {f: _canonical(v) for f, v in current.items()}
  if dataclasses.is_dataclass(params):
    return params.replace(**current)
  return jax.tree.map(_canonical, params) if not current else type(params)(current)


def resolve(name: str, population_size: int, hidden: int = controller.KMAX, overrides: dict | None = None) -> Regime:
  """The regime `NAME[@GENOME]` with its hyperparameters: the entry's, then `overrides` (a config's
  strategy_params.<name>). Raises RegimeError naming the regime and, where it is one, the field."""
  base, _, kind = name.partition("@")
  e = entry(base)
  kind = kind or e.genome
  if kind not in e.genomes:
    raise RegimeError(name, None, f"{base!r} evolves the genome kinds {list(e.genomes)}, not {kind!r}")
  genome = genome_kinds.make(kind, hidden)
  overrides = dict(overrides or {})
  myopic = bool(overrides.pop("myopic", e.myopic))
  try:
    plain = _build(e, population_size, genome, ())
  except RegimeError as err:
    raise RegimeError(name, err.field, str(err)) from None
  except Exception as err:  # a factory's own complaint (e.g. evosax's assertions), said plainly
    raise RegimeError(name, None, f"cannot build {base!r} for population {population_size}: {err}") from None
  fields = _fields(plain.default_params)
  # Lists become tuples: options key the cache of built strategies.
  options = {f: tuple(v) if isinstance(v, list) else v for f, v in overrides.items() if f not in fields}
  try:
    strategy = _build(e, population_size, genome, tuple(sorted(options.items()))) if options else plain
  except RegimeError as err:
    raise RegimeError(name, err.field, str(err)) from None
  except TypeError as err:
    raise RegimeError(name, next(iter(options)), f"not a hyperparameter of {base!r} (its params: {fields}, "
                                                 f"or `myopic`): {err}") from None
  params = _with(strategy.default_params, {**dict(e.params), **{f: overrides[f] for f in overrides if f in fields}},
                 name)
  errors = getattr(strategy, "param_errors", lambda p: [])(params)
  if errors:
    field, expected = errors[0]
    raise RegimeError(name, field, f"must be {expected}, got {np.asarray(getattr(params, field)).tolist()!r}")
  return Regime(name, strategy, genome, params, myopic, tuple(sorted(options.items())))


def describe(regime: Regime) -> dict:
  """What a regime is, for reports: strategy, genome kind, scalar hyperparameters, selection."""
  params = regime.params
  scalars = {f: np.asarray(getattr(params, f) if dataclasses.is_dataclass(params) else params[f]).tolist()
             for f in _fields(params)}
  # float32 hyperparameters as they were written (0.06, not 0.05999999865889549).
  scalars = {f: float(f"{v:.7g}") if isinstance(v, float) else v for f, v in scalars.items() if not isinstance(v, list)}
  inner = getattr(regime.strategy, "algorithm", regime.strategy)
  return {"strategy": type(inner).__name__, "genome": regime.genome.name, "params": {**scalars, **dict(regime.options)},
          "selection": "myopic F" if regime.myopic else "F"}


# --- the prototype-table GA: the published regimes ---

@struct.dataclass
class Params:
  n_elite: jax.Array          # copied unchanged into the next generation
  n_parents: jax.Array        # truncation selection: parents come from this many of the best
  proto_rate: jax.Array       # chance a slot's prototype moves (Gaussian, proto_sigma)
  proto_sigma: jax.Array
  tool_rate: jax.Array        # chance a slot's preferred tool is redrawn
  harness_rate: jax.Array     # chance each tool bit and each sensor bit flips
  edit_rate: jax.Array        # brain-directed: chance a child gets one directed limb edit
  evolve_controller: jax.Array
  evolve_harness: jax.Array
  directed: jax.Array         # tools are edited by the brain's myopic value, not flipped blindly


@struct.dataclass
class State:
  population: controller.Genome   # leading axis: population
  fitness: jax.Array              # selection fitness of `population`
  generation: jax.Array


# Uniforms one child's mutation reads: prototype moves (KMAX) and their Gaussian steps (KMAX x F),
# tool redraws and their values (2 KMAX), tool-bit flips, sensor-bit flips, the edit coin and the
# tool an edit adds. All come from one draw per generation (each PRNG call costs seconds of CPU
# compile time).
N_UNIFORM = (controller.KMAX * (3 + world.N_FEATURES) + world.N_TOOLS + world.N_FEATURES + 1
             + world.N_TOOLS)


def _mutate(u, g: controller.Genome, p: Params) -> controller.Genome:
  kmax, nf, nt = controller.KMAX, world.N_FEATURES, world.N_TOOLS
  sizes = np.cumsum([kmax, kmax * nf, kmax, kmax, nt, nf, 1])
  u_move, u_step, u_redraw, u_tool, u_flip, u_sensor, u_edit, u_new = jnp.split(u, sizes)
  move = (u_move < p.proto_rate)[:, None] & p.evolve_controller
  step = jax.scipy.special.ndtri(jnp.clip(u_step, 1e-7, 1 - 1e-7)).reshape(kmax, nf)
  protos = jnp.clip(g.protos + move * p.proto_sigma * step, 0.0, 1.0)
  redraw = (u_redraw < p.tool_rate) & p.evolve_controller
  tools = jnp.where(redraw, controller.uniform_int(u_tool, 1, nt), g.tools)
  blind = p.evolve_harness & ~p.directed
  flip = (u_flip < p.harness_rate) & blind
  tool_mask = (g.tool_mask ^ flip).at[world.BARE].set(True)
  # The brain-directed editor: it edits the installed limb it values least on the common slice.
  # A limb it thinks costs more than it earns (an unused one is pure cost: dead weight) is
  # dropped; when every limb seems to pay, it tries a random tool it does not have yet.
  value = g.tool_value
  worst = jnp.argmin(value)
  absent = ~tool_mask.at[world.BARE].set(True)
  new = jnp.argmax(jnp.where(absent, u_new, -1.0))
  edit = p.directed & (u_edit[0] < p.edit_rate)
  drop = edit & jnp.isfinite(value[worst]) & (value[worst] < 0)
  add = edit & ~drop & absent.any()
  tool_mask = jnp.where(drop, tool_mask.at[worst].set(False), tool_mask)
  tool_mask = jnp.where(add, tool_mask.at[new].set(True), tool_mask)
  sflip = (u_sensor < p.harness_rate) & p.evolve_harness
  return g.replace(protos=protos, tools=tools, tool_mask=tool_mask, sensor_mask=g.sensor_mask ^ sflip)


@dataclasses.dataclass(frozen=True)
class PrototypeGA:
  """Elitist truncation GA over K-slot prototype controllers and their harnesses (population-based).

  Per generation: rank the last generation on its selection fitness, copy `n_elite` elites, fill
  the rest with mutated children of parents drawn uniformly from the top `n_parents`. Its params
  say what mutates, so the published regimes are rows of one Params table and share one program.
  """
  population_size: int

  @property
  def default_params(self) -> Params:
    # Shared GA settings (docs/harness_vs_brain.md); each published regime changes only what the
    # spec says it changes (see the registrations below).
    f32 = lambda v: np.float32(v)
    return Params(n_elite=np.int32(2), n_parents=np.int32(8), proto_rate=f32(0.3), proto_sigma=f32(0.2),
                  tool_rate=f32(0.15), harness_rate=f32(0.06), edit_rate=f32(0.5), evolve_controller=np.bool_(True),
                  evolve_harness=np.bool_(True), directed=np.bool_(False))

  def param_errors(self, p: Params) -> list[tuple[str, str]]:
    n, out = self.population_size, []
    if not 0 <= int(p.n_elite) < n:
      out.append(("n_elite", f"an integer in [0, population) = [0, {n})"))
    if not 1 <= int(p.n_parents) <= n:
      out.append(("n_parents", f"an integer in [1, population] = [1, {n}]"))
    for field in ("proto_rate", "tool_rate", "harness_rate", "edit_rate"):
      if not 0 <= float(getattr(p, field)) <= 1:
        out.append((field, "a probability"))
    if not float(p.proto_sigma) >= 0:
      out.append(("proto_sigma", "non-negative"))
    return out

  def start(self, population: controller.Genome, p: Params) -> controller.Genome:
    """Model-first freezes the complete field kit; harness-first freezes one random controller
    (individual 0's) for the whole population."""
    n = self.population_size
    kit_tools, kit_sensors = controller.field_kit()
    return population.replace(
        protos=jnp.where(p.evolve_controller, population.protos, population.protos[:1]),
        tools=jnp.where(p.evolve_controller, population.tools, population.tools[:1]),
        tool_mask=jnp.where(p.evolve_harness, population.tool_mask, jnp.broadcast_to(kit_tools, (n, world.N_TOOLS))),
        sensor_mask=jnp.where(p.evolve_harness, population.sensor_mask,
                              jnp.broadcast_to(kit_sensors, (n, world.N_FEATURES))))

  def init(self, key, population: controller.Genome, fitness, params: Params) -> State:
    del key, params
    return State(population, fitness, jnp.int32(1))

  def ask(self, key, state: State, params: Params):
    n = self.population_size
    order = jnp.argsort(-state.fitness, stable=True)
    u = jax.random.uniform(key, (n, 1 + N_UNIFORM))
    rank = jnp.minimum(jnp.floor(u[:, 0] * params.n_parents).astype(jnp.int32), params.n_parents - 1)
    elite = jnp.arange(n) < params.n_elite
    parents = jax.tree.map(lambda x: x[order[jnp.where(elite, jnp.arange(n), rank)]], state.population)
    children = jax.vmap(_mutate, (0, 0, None))(u[:, 1:], parents, params)
    pick = lambda a, b: jnp.where(elite.reshape((n,) + (1,) * (a.ndim - 1)), a, b)
    return jax.tree.map(pick, parents, children), state

  def tell(self, key, population, fitness, state: State, params: Params):
    del key, params
    return State(population, fitness, state.generation + 1), {"best_fitness": fitness.max()}


def _prototype_ga(population_size: int, genome) -> PrototypeGA:
  return PrototypeGA(population_size)


register("coevolution", _prototype_ga)
register("model_first", _prototype_ga, params=dict(evolve_harness=False, harness_rate=0.0))
register("harness_first", _prototype_ga, params=dict(evolve_controller=False))
register("brain_directed", _prototype_ga, params=dict(directed=True), myopic=True)
register("conservative", _prototype_ga, params=dict(harness_rate=0.02, n_elite=6))


# --- evosax ---

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


# The MLP brain on the field kit, evolved by SNES: the sixth regime of the recorded run.
register("mlp_evosax", functools.partial(evosax_strategy, "SNES"), genome="mlp", genomes=genome_kinds.CONTINUOUS)
