"""The strategy registry of evolution-harness-vs-brain.md: names -> strategy factories, prefixed
families of names (`evosax:ALGORITHM`), a user's modules that register more, and the resolution of
a regime name (`NAME[@GENOME]`) with its hyperparameters into a strategy object, a genome kind and
its params. The strategy interface is in the package docstring (`jaxlab.evolution.strategies`)."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
from typing import Any, Callable

import jax
import numpy as np

from jaxlab.evolution import controller
from jaxlab.evolution import genomes as genome_kinds

EVOSAX = "evosax:"


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
_FAMILIES: dict[str, tuple[Callable[[str], Entry], Callable[[], list[str]]]] = {}


def register(name: str, factory: Callable, *, genome: str = "table", genomes: tuple[str, ...] | None = None,
             params: dict | None = None, myopic: bool = False, replace: bool = False) -> None:
  """Adds the strategy `name`; `factory(population_size, genome, **options)` returns it.

  `genome` is the kind it evolves by default, `genomes` every kind it can (default: `genome`
  only), `params` fixed hyperparameter values over its defaults. Registering a taken name is an
  error unless `replace=True` (programs compiled for the old entry are never reused for the new).
  """
  if not re.fullmatch(r"[A-Za-z0-9_.:\-]+", name or "") or name.startswith(tuple(_FAMILIES) + (EVOSAX,)):
    raise ValueError(f"strategy name {name!r}: use letters, digits and _.:- (no '@'), not starting with "
                     f"{sorted(set(_FAMILIES) | {EVOSAX})}")
  kinds = tuple(genomes or (genome,))
  unknown = [k for k in (genome, *kinds) if k not in genome_kinds.KINDS]
  if unknown or genome not in kinds:
    raise ValueError(f"strategy {name!r}: genome kinds must be among {sorted(genome_kinds.KINDS)} and include "
                     f"the default {genome!r}, got {kinds}")
  if name in _REGISTRY and not replace:
    raise ValueError(f"strategy {name!r} is already registered; pass replace=True to replace it")
  _REGISTRY[name] = Entry(factory, genome, kinds, tuple(sorted((params or {}).items())), myopic)


def register_family(prefix: str, entry_of: Callable[[str], Entry], names_of: Callable[[], list[str]]) -> None:
  """A family of names `PREFIX` + rest: `entry_of(rest)` builds each entry on first use (e.g. every
  evosax algorithm as `evosax:NAME`), `names_of()` lists them."""
  _FAMILIES[prefix] = (entry_of, names_of)


def unregister(name: str) -> None:
  _REGISTRY.pop(name, None)


def names() -> list[str]:
  """Registered names (evosax algorithms are there too, as evosax:NAME; see `evosax_names`)."""
  return sorted(_REGISTRY)


def family_names(prefix: str) -> list[str]:
  """Every name of a registered family (`evosax:` gives every evosax algorithm)."""
  return sorted(prefix + n for n in _FAMILIES[prefix][1]())


def entry(name: str) -> Entry:
  for prefix, (entry_of, _) in _FAMILIES.items():
    if name.startswith(prefix):
      return entry_of(name[len(prefix):])
  if name not in _REGISTRY:
    raise RegimeError(name, None, f"no strategy {name!r}; registered: {names()}, or evosax:ALGORITHM "
                                  "(a module that registers more can be listed in `imports`)")
  return _REGISTRY[name]


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
