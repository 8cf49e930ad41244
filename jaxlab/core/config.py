"""Load an experiment config: `path/to/config.py:variant` plus `--config.a.b=value` overrides.

Config files are ml_collections files with `get_config(arg)` (big_vision style). The loaded
config is locked, so a misspelt field is an error, and ConfigDict's type safety rejects a value
of the wrong type. Each experiment then checks values with `require`, before any compute. Every
error is a `ConfigError` that names the field and where its value came from: the override on the
command line, or the file and line that set it.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import difflib
import importlib
import importlib.util
import json
import re
from pathlib import Path
from typing import Any, Callable, Sequence

import ml_collections


class ConfigError(ValueError):
  """A config field has a wrong name, type or value. The message says which and where."""

  def __init__(self, field: str, message: str, where: str | None = None):
    self.field, self.where = field, where
    super().__init__(f"{where + ': ' if where else ''}config.{field}: {message}")


def select(arg: str, variants: dict[str, Callable[[], ml_collections.ConfigDict]]):
  """Builds the named variant; `get_config(arg)` in a config file returns `select(arg, {...})`."""
  name = arg or next(iter(variants))
  if name not in variants:
    raise ConfigError("variant", f"unknown variant {name!r}; choose one of {sorted(variants)}")
  config = variants[name]()
  config.variant = name
  return config


# The checkout this jaxlab runs from: relative paths in a config (shipped models, data folders,
# shared caches) name places in it, whatever the working directory of the command.
REPO = Path(__file__).resolve().parents[2]


def repo_path(value: str | Path) -> Path:
  """A config's path: absolute as given, relative against the repository (not the working directory)."""
  path = Path(value).expanduser()
  return path if path.is_absolute() else REPO / path


def get(config: ml_collections.ConfigDict, field: str) -> Any:
  node = config
  for part in field.split("."):
    node = node[part]
  return node


def derive(config: ml_collections.ConfigDict, changes: dict[str, Any]) -> ml_collections.ConfigDict:
  """A copy of `config` with each dotted field of `changes` set: how a study makes the config of
  one of its runs (the run's own config.json then says exactly what it ran). The original is left
  as it was; a field the config does not have is a ConfigError, as an override's would be."""
  derived = copy.deepcopy(config)
  for field, value in changes.items():
    *path, leaf = field.split(".")
    node = derived
    for part in path:
      node = node[part] if part in node else None
      if not isinstance(node, ml_collections.ConfigDict):
        raise ConfigError(field, "no such field to derive a run's config from")
    if leaf not in node:
      raise ConfigError(field, "no such field to derive a run's config from")
    try:
      node[leaf] = tuple(value) if isinstance(value, list) else value
    except (TypeError, ValueError) as e:
      raise ConfigError(field, f"expected {type(node[leaf]).__name__}, got {value!r} ({e})") from None
  return derived


def import_modules(config, field: str = "imports") -> None:
  """Imports the modules a config's `field` names (a tuple of module names): a user's module that
  registers more of what a registry holds (strategies, page encoders) before the config is checked."""
  require(config, field, lambda v: isinstance(v, (tuple, list)) and all(isinstance(m, str) for m in v),
          "a tuple of module names")
  for module in get(config, field):
    try:
      importlib.import_module(module)
    except ImportError as e:
      raise ConfigError(field, f"cannot import {e.name or module}: {e}") from None


# Small predicates for `require`, so experiments do not each keep their own copy.
def is_number(v) -> bool:
  """A real number (booleans are not numbers here)."""
  return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_positive(v) -> bool:
  return is_number(v) and v > 0


def is_non_negative(v) -> bool:
  return is_number(v) and v >= 0


def is_probability(v) -> bool:
  """A number in [0, 1] (a probability, a share, a correlation level)."""
  return is_number(v) and 0 <= v <= 1


def int_at_least(minimum: int) -> Callable[[Any], bool]:
  """The predicate behind `require_int`, for use inside other checks."""
  return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= minimum


def tuple_of(n: int | None, ok: Callable[[Any], bool]) -> Callable[[Any], bool]:
  """A tuple or list of `n` items (any non-zero length when n is None), each passing `ok`."""
  return lambda v: (isinstance(v, (tuple, list)) and (len(v) == n if n is not None else len(v) > 0)
                    and all(map(ok, v)))


def require(config, field: str, ok: Callable[[Any], bool], expected: str) -> Any:
  """Raises ConfigError unless `ok(value)`; `expected` says what a valid value is."""
  value = get(config, field)
  try:
    good = bool(ok(value))
  except (TypeError, ValueError):
    good = False
  if not good:
    raise ConfigError(field, f"must be {expected}, got {value!r}")
  return value


def require_int(config, field: str, minimum: int, why: str = "") -> int:
  """An integer field of at least `minimum` (booleans are not integers here)."""
  return require(config, field, int_at_least(minimum), f"an integer >= {minimum}{f' ({why})' if why else ''}")


def dataclass_from(cls, section, **given):
  """`cls(**given, **{field: section[field]})` for the dataclass's other fields, lists as tuples,
  so the result is hashable and can key a compiled program."""
  names = {f.name for f in dataclasses.fields(cls)} - set(given)
  values = {n: tuple(section[n]) if isinstance(section[n], (list, tuple)) else section[n] for n in names}
  return cls(**given, **values)


def _parse_value(text: str) -> Any:
  try:
    return ast.literal_eval(text)
  except (ValueError, SyntaxError):
    return text  # a bare word is a string: --config.name=foo


def _apply_override(config, field: str, text: str, where: str) -> None:
  parts = field.split(".")
  node = config
  for i, part in enumerate(parts):
    keys = list(node.keys()) if isinstance(node, ml_collections.ConfigDict) else []
    if part not in keys:
      close = difflib.get_close_matches(part, keys, n=1)
      hint = f" (did you mean {'.'.join(parts[:i] + close)!r}?)" if close else ""
      raise ConfigError(field, f"no such field{hint}", where)
    if i < len(parts) - 1:
      node = node[part]
  value, old = _parse_value(text), node[parts[-1]]
  if isinstance(old, tuple) and isinstance(value, list):
    value = tuple(value)
  if isinstance(old, float) and isinstance(value, int) and not isinstance(value, bool):
    value = float(value)
  try:
    node[parts[-1]] = value
  except (TypeError, ValueError) as e:
    raise ConfigError(field, f"expected {type(old).__name__}, got {value!r} ({e})", where) from None


def _parse_overrides(overrides: Sequence[str]) -> list[tuple[str, str]]:
  parsed = []
  for item in overrides:
    # ':' and '@' occur in keys named after things (strategy_params.evosax:CMA_ES.std_init).
    m = re.fullmatch(r"(?:--)?config\.([A-Za-z0-9_.:@\-]+)=(.*)", item, re.S)
    if not m:
      raise ConfigError("?", f"cannot read override {item!r}; write --config.FIELD=VALUE")
    parsed.append((m.group(1), m.group(2)))
  return parsed


def _line_of(path: Path, field: str, variant: str) -> str:
  """`file:line` of the line that most likely set the field: the last assignment of its leaf name
  inside the variant's function, else the last one in the file."""
  leaf = field.split(".")[-1]
  pattern = re.compile(rf"(\.{leaf}\s*=[^=]|\b{leaf}\s*=[^=]|['\"]{leaf}['\"]\s*:)")
  text = path.read_text()
  lines = text.splitlines()
  hits = [i for i, line in enumerate(lines, 1) if pattern.search(line)]
  for node in ast.parse(text).body:
    if isinstance(node, ast.FunctionDef) and node.name == variant:
      inside = [i for i in hits if node.lineno <= i <= node.end_lineno]
      hits = inside or hits
  return f"{path}:{hits[-1]}" if hits else str(path)


def load(spec: str, overrides: Sequence[str] = (), validate: Callable | None = None):
  """Loads `file.py[:variant]`, applies overrides, runs `validate(config)`; returns a locked config."""
  path_text, _, arg = spec.partition(":")
  path = Path(path_text)
  if not path.is_file():
    raise ConfigError("file", f"no config file at {path_text!r}")
  module_spec = importlib.util.spec_from_file_location(f"jaxlab_config_{path.stem}", path)
  module = importlib.util.module_from_spec(module_spec)
  module_spec.loader.exec_module(module)
  if not hasattr(module, "get_config"):
    raise ConfigError("get_config", "the config file defines no get_config(arg)", str(path))
  try:
    config = module.get_config(arg)
  except ConfigError as e:
    raise ConfigError(e.field, str(e).split(": ", 1)[-1], str(path)) from None
  config.lock()
  origins = {}
  for field, text in _parse_overrides(overrides):
    where = f"--config.{field}={text}"
    _apply_override(config, field, text, where)
    origins[field] = where
  if validate is not None:
    try:
      validate(config)
    except ConfigError as e:
      # An error inside a block set whole by an override (--config.block='{...}') points at it.
      set_by = [f for f in origins if e.field == f or e.field.startswith(f + ".")]
      where = origins[max(set_by, key=len)] if set_by else _line_of(path, e.field, config.get("variant", arg))
      raise ConfigError(e.field, str(e).split(f"config.{e.field}: ", 1)[-1], where) from None
  return config


def fields(tree, prefix: str = "") -> dict:
  """{"a.b": value} for every leaf field of a config or its dict (lists and tuples are values)."""
  tree = to_dict(tree) if hasattr(tree, "to_dict") else tree
  if not isinstance(tree, dict):
    return {prefix[:-1]: tree}
  return {k: v for key, sub in tree.items() for k, v in fields(sub, f"{prefix}{key}.").items()}


def differences(a, b) -> list[str]:
  """The dotted fields where two configs (or their dicts, e.g. from config.json) differ. A field
  one of them lacks and the other holds empty (an extension point such as `imports`, added after
  the other was written, and unused) is no difference."""
  fa, fb = fields(a), fields(b)
  norm = lambda v: json.loads(json.dumps(v))   # as config.json holds it: tuples read back as lists
  unused = lambda f: (f not in fa or f not in fb) and norm(fa.get(f, fb.get(f))) in ([], "", {})
  return [f for f in sorted(set(fa) | set(fb)) if norm(fa.get(f)) != norm(fb.get(f)) and not unused(f)]


def to_dict(config) -> dict:
  return config.to_dict() if hasattr(config, "to_dict") else dict(config)


def from_dict(data: dict) -> ml_collections.ConfigDict:
  config = ml_collections.ConfigDict(data)
  config.lock()
  return config
