"""Which files a receipt's results depend on: an experiment's modules and every jaxlab module they
import, its config file and the model folders it reads (`jaxlab receipts` lists the commits since
a receipt that touched them)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

from jaxlab import experiments
from jaxlab.core import config as config_lib

REPO = config_lib.REPO


def _module_file(name: str) -> Path | None:
  path = REPO / Path(*name.split("."))
  if path.with_suffix(".py").is_file():
    return path.with_suffix(".py")
  return path / "__init__.py" if (path / "__init__.py").is_file() else None


def imported(file: Path, name: str) -> set[str]:
  """The jaxlab modules `file` (module `name`) imports anywhere in its body, functions included."""
  package = name if file.name == "__init__.py" else name.rpartition(".")[0]
  found = set()
  for node in ast.walk(ast.parse(file.read_text())):
    if isinstance(node, ast.Import):
      found |= {a.name for a in node.names}
    elif isinstance(node, ast.ImportFrom):
      base = node.module or ""
      if node.level:
        parts = package.split(".")[:len(package.split(".")) - node.level + 1]
        base = ".".join(parts + ([node.module] if node.module else []))
      found |= {base} | {f"{base}.{a.name}" for a in node.names}
  return {n for n in found if n == "jaxlab" or n.startswith("jaxlab.")}


def _models(config: dict) -> set[str]:
  """The model folders a run's config names (weights it reads), as repository paths."""
  values = config_lib.fields(config).values()
  names = {v for x in values for v in (x if isinstance(x, (list, tuple)) else [x]) if isinstance(v, str)}
  return {m.rstrip("/") for m in names if m.startswith("models/") and (REPO / m).exists()}


def _config_changed(experiment: str, config: dict) -> bool:
  """Whether the variant a receipt ran (its config.json) reads differently from the config file now
  (a variant gone or failing to load counts as changed)."""
  try:
    now = config_lib.load(f"configs/{experiment}.py:{config['variant']}")
  except Exception:   # any failure to build the variant today is a change to it
    return True
  return bool(config_lib.differences(config, now))


def code_paths(experiment: str, config: dict | None = None) -> list[str]:
  """The files an experiment's results depend on, relative to the repository: every module of its
  package and every jaxlab module they import, transitively (parent packages' __init__ included);
  its config file; the model folders the config names (weights it reads); and the CPU thread
  settings every run starts with (`core/cpu_threads.py`: a trained model's last bits depend on
  them). Tools that only read runs (this module, provenance, export) are not among them, so
  changing them leaves receipts current. Given one run's `config` (a receipt's config.json), only
  the model folders it names count, and the config file only if that variant reads differently now
  (a new variant beside it changes nothing the receipt ran)."""
  module = importlib.import_module(experiments.EXPERIMENTS[experiment])
  package = Path(module.__file__).parent
  todo = [".".join(f.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
          for f in sorted(package.rglob("*.py"))]
  files = {}
  while todo:
    name = todo.pop()
    file = None if name in files else _module_file(name)
    if file is None:
      continue
    files[name] = file
    parts = name.split(".")
    todo += [".".join(parts[:i]) for i in range(1, len(parts))] + sorted(imported(file, name))
  paths = {str(f.relative_to(REPO)) for f in files.values()} | {"jaxlab/core/cpu_threads.py"}
  file = REPO / "configs" / f"{experiment}.py"
  if config is not None:
    paths |= _models(config) | ({str(file.relative_to(REPO))} if _config_changed(experiment, config) else set())
  elif file.is_file():
    paths.add(str(file.relative_to(REPO)))
    paths |= {m for m in re.findall(r"[\"'](models/[\w.-]+)", file.read_text()) if (REPO / m).exists()}
  return sorted(paths)
