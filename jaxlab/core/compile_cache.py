"""JAX's persistent compilation cache for `jaxlab run`, and a clock of what compiling cost.

`enable()` points JAX at a cache folder (`$JAXLAB_COMPILE_CACHE`, else `$XDG_CACHE_HOME/jaxlab/xla`,
else `~/.cache/jaxlab/xla`; one subfolder per `host_key`) before the first compilation, so a second
run of a config, or a resumed one, loads its compiled programs instead of compiling them again; programs that compile
in under `MIN_COMPILE_S` are not written (they cost more to store than to redo). The cache holds
XLA's executables for the exact program, devices and compile options: a program loaded from it
is the one compiled, and results are bitwise those of compiling it again. It is a trusted folder
(JAX loads code from it): keep it private to the user.

`release()` drops the compiled programs this process holds in memory, so that a process which
compiles thousands of them (a test session, `jaxlab verify --all`) stays under the kernel's limit
on memory maps.

`Clock` listens to JAX's compile events and splits a run's wall time into tracing, lowering,
XLA compilation and cache loads, and the rest (running), for the one line `jaxlab run` prints.
"""

from __future__ import annotations

import collections
import gc
import hashlib
import importlib.util
import os
from pathlib import Path
from typing import Callable

import jax
from jax.experimental.compilation_cache import compilation_cache

from jaxlab.core import cpu_threads

MIN_COMPILE_S = 0.1
EVENTS = {"/jax/core/compile/jaxpr_trace_duration": "trace",
          "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
          "/jax/core/compile/backend_compile_duration": "compile",
          "/jax/compilation_cache/cache_retrieval_time_sec": "cache load"}


def default_dir() -> Path:
  if os.environ.get("JAXLAB_COMPILE_CACHE"):
    return Path(os.environ["JAXLAB_COMPILE_CACHE"])
  base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
  return base / "jaxlab" / "xla"


def host_key() -> str:
  """What the folder is split by: the CPU threads XLA runs with, XLA_FLAGS and the entries'
  compression. XLA's CPU code depends on its thread pool, which JAX's cache key does not hold, and
  a program's last bits on the code: one machine's runs with 8 forced devices (more threads) must
  not hand their programs to its one-device runs."""
  flags = os.environ.get("XLA_FLAGS", "")
  return f"threads{cpu_threads.pool_size()}-" + hashlib.sha256(flags.encode()).hexdigest()[:12] + f"-{_codec()}"


def _codec() -> str:
  """How JAX compresses the entries: zstd where it can import it (the `zstandard` dependency,
  about 8x faster to write than zlib), else zlib; one folder holds one kind, since an entry of the
  other kind fails to read and is compiled again with a warning."""
  for module in ("compression.zstd", "zstandard"):
    try:
      if importlib.util.find_spec(module):
        return "zstd"
    except ModuleNotFoundError:     # `compression` itself is missing before Python 3.14
      pass
  return "zlib"


def enable(path: Path | None = None, min_compile_s: float = MIN_COMPILE_S) -> Path:
  """Turns the persistent cache on (before anything compiles) in `path` (default: `default_dir()`
  / `host_key()`); returns the folder."""
  path = Path(path or default_dir() / host_key())
  path.mkdir(parents=True, exist_ok=True)
  compilation_cache.reset_cache()   # JAX opens its cache once per process: reopen it here
  jax.config.update("jax_enable_compilation_cache", True)
  jax.config.update("jax_compilation_cache_dir", str(path))
  jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_s))
  return path


def disable(previous: str | None = None, enabled: bool = True) -> None:
  """Turns the cache off, or back to the folder `previous` (and JAX's switch back to `enabled`)."""
  compilation_cache.reset_cache()
  jax.config.update("jax_compilation_cache_dir", previous)
  jax.config.update("jax_enable_compilation_cache", enabled)


_RELEASERS: list[Callable[[], None]] = []


def on_release(forget: Callable[[], None]) -> Callable[[], None]:
  """Registers what empties a module's own table of compiled executables, for `release`."""
  _RELEASERS.append(forget)
  return forget


def release() -> None:
  """Drops every compiled program this process holds: JAX's caches and the tables registered with
  `on_release`. A CPU executable keeps its machine code in memory maps of its own, and the kernel
  allows a process `vm.max_map_count` of them (65,530 by default); a process past it crashes XLA
  on its next compile or cache load (a segfault, no error). A program called after this compiles
  again, to the same code."""
  for forget in _RELEASERS:
    forget()
  jax.clear_caches()
  gc.collect()


class Clock:
  """Seconds spent per compile phase (`EVENTS`) since it was made, and cache hits and misses."""

  def __init__(self):
    self.seconds = collections.Counter()
    self.counts = collections.Counter()
    self._active = True
    jax.monitoring.register_event_duration_secs_listener(self._duration)
    jax.monitoring.register_event_listener(self._event)

  def _duration(self, event: str, seconds: float, **_):
    if self._active and event in EVENTS:
      self.seconds[EVENTS[event]] += seconds

  def _event(self, event: str, **_):
    if self._active and event in ("/jax/compilation_cache/cache_hits", "/jax/compilation_cache/cache_misses"):
      self.counts[event.rsplit("_", 1)[-1]] += 1

  def stop(self) -> None:
    self._active = False   # JAX has no public way to remove a listener

  def line(self, wall_s: float) -> str:
    compiling = sum(self.seconds.values())
    parts = ", ".join(f"{k} {self.seconds[k]:.1f} s" for k in ("trace", "lower", "compile", "cache load")
                      if self.seconds[k])
    cache = (f"; persistent cache: {self.counts['hits']} loaded, {self.counts['misses']} compiled"
             if self.counts else "")
    return (f"time: {wall_s:.1f} s, of which compiling {compiling:.1f} s ({parts or 'none'}) and running "
            f"{max(wall_s - compiling, 0.0):.1f} s{cache}")
