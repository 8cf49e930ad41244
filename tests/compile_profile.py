"""Where a test session's time goes: `python -m pytest -p tests.compile_profile ...` (with or without
xdist workers) times each test file (its tests and fixtures) and, within it, the seconds JAX spent
tracing, lowering and compiling (`compile_cache.EVENTS`; a program loaded from the persistent cache
counts its load), and prints at the end the files and the jitted functions that took longest.
Subprocesses a test starts count in its file's time, not in its compile time. With
`JAXLAB_TEST_PROFILE_JSON=FILE` the whole record is also written there.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

FOLDER = "JAXLAB_TEST_PROFILE_DIR"   # where each process writes its record (made by the controller)
ROWS = 15
_record = {"files": collections.defaultdict(collections.Counter),
           "functions": collections.defaultdict(collections.Counter)}
_current = {"file": "(outside a test)", "worker": None}   # the xdist worker's id; None in the controller


def _listen(event: str, seconds: float, **kw) -> None:
  from jaxlab.core import compile_cache

  phase = compile_cache.EVENTS.get(event)
  if phase is None:
    return
  _record["files"][_current["file"]][phase] += seconds
  if phase == "compile":
    function = _record["functions"][kw.get("fun_name") or "?"]
    function["seconds"] += seconds
    function["programs"] += 1


def pytest_configure(config):
  import jax

  # Known from the config, not the environment: a test may start a pytest session of its own.
  _current["worker"] = getattr(config, "workerinput", {}).get("workerid")
  if _current["worker"] is None:
    os.environ[FOLDER] = tempfile.mkdtemp(prefix="jaxlab-test-profile-")   # workers start later and inherit it
  jax.monitoring.register_event_duration_secs_listener(_listen)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
  _current["file"] = item.nodeid.split("::")[0]
  start = time.perf_counter()
  yield
  _record["files"][_current["file"]]["test"] += time.perf_counter() - start
  _current["file"] = "(outside a test)"


def pytest_sessionfinish(session):
  name = _current["worker"] or "controller"
  data = {key: {k: dict(v) for k, v in table.items()} for key, table in _record.items()}
  (Path(os.environ[FOLDER]) / f"{name}.json").write_text(json.dumps(data))


def merged(folder: Path) -> dict:
  """Every process's record in `folder`, summed."""
  out = {"files": collections.defaultdict(collections.Counter),
         "functions": collections.defaultdict(collections.Counter)}
  for part in sorted(folder.glob("*.json")):
    for key, table in json.loads(part.read_text()).items():
      for name, counts in table.items():
        out[key][name].update(counts)
  return out


def pytest_terminal_summary(terminalreporter):
  if _current["worker"] is not None:
    return
  record = merged(Path(os.environ[FOLDER]))
  files, functions = record["files"], record["functions"]
  phases = ("trace", "lower", "compile", "cache load")
  total = collections.Counter()
  for counts in files.values():
    total.update(counts)
  write = terminalreporter.write_line
  terminalreporter.section("time per test file (seconds, summed over workers)", sep="-")
  write(f"all files: {total['test']:.0f} s in tests and fixtures, of which "
        + ", ".join(f"{p} {total[p]:.0f}" for p in phases))
  write(f"{'file':48s} {'tests':>7s} {'compile':>8s} {'trace+lower':>12s}")
  for name, counts in sorted(files.items(), key=lambda kv: -kv[1]["test"])[:ROWS]:
    write(f"{name:48s} {counts['test']:7.1f} {counts['compile'] + counts['cache load']:8.1f} "
          f"{counts['trace'] + counts['lower']:12.1f}")
  terminalreporter.section("XLA compile time per jitted function", sep="-")
  write(f"{'function':48s} {'seconds':>8s} {'programs':>9s}")
  for name, counts in sorted(functions.items(), key=lambda kv: -kv[1]["seconds"])[:ROWS]:
    write(f"{name[:48]:48s} {counts['seconds']:8.1f} {counts['programs']:9d}")
  if os.environ.get("JAXLAB_TEST_PROFILE_JSON"):
    Path(os.environ["JAXLAB_TEST_PROFILE_JSON"]).write_text(json.dumps(record, indent=1, sort_keys=True))


def pytest_unconfigure(config):
  if _current["worker"] is None and os.environ.get(FOLDER):
    shutil.rmtree(os.environ[FOLDER], ignore_errors=True)
