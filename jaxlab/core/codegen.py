"""XLA flags that change the code XLA emits, and `FAST`, the set that compiles faster.

Imports no JAX: flags must be in XLA_FLAGS before JAX starts its backend.
"""

from __future__ import annotations

import os
import sys

# LLVM at -O1 instead of its default, and XLA's loop emitters instead of its MLIR fusion emitters:
# the test suite's programs compile in about 40% of the time (docs/benchmarks.md). Results differ
# from the default code's in their last bits, so a run under them is another machine kind.
FAST = ("--xla_backend_optimization_level=1", "--xla_cpu_use_fusion_emitters=false")
# XLA_FLAGS entries that leave the emitted code as it is: how many CPU devices to force (a run's
# device count is recorded apart), how long a collective may wait, where to dump programs.
_INERT = ("--xla_force_host_platform_device_count", "--xla_cpu_collective", "--xla_dump")


def flags(env=None) -> list[str]:
  """The XLA_FLAGS entries of `env` (default: this process's) that can change the code XLA emits,
  and so a result's last bits: an instruction-set cap, an optimisation level, other emitters
  (every flag not known to be inert), in the order given."""
  env = os.environ if env is None else env
  return [f for f in env.get("XLA_FLAGS", "").split() if not f.startswith(_INERT)]


def for_process(devices: int | None = None) -> str:
  """XLA_FLAGS for a process that should compile as this one does (its code flags), on `devices`
  forced CPU devices (None: as many as XLA finds)."""
  count = [] if devices is None else [f"--xla_force_host_platform_device_count={devices}"]
  return " ".join([*flags(), *count])


class Started(RuntimeError):
  """JAX's backend has started in this process, so XLA_FLAGS set now would not be read."""


def use_fast(env=None) -> None:
  """Adds `FAST` to the XLA_FLAGS of `env` (default: this process's, before JAX starts its
  backend), each flag where not there."""
  if env is None and "jax" in sys.modules:
    from jax._src import xla_bridge   # private: JAX has no public test of whether its backend started

    if xla_bridge.backends_are_initialized():
      raise Started("XLA reads its flags once, when JAX starts its backend, and it has started in this process")
  env = os.environ if env is None else env
  given = env.get("XLA_FLAGS", "").split()
  env["XLA_FLAGS"] = " ".join([*given, *(f for f in FAST if f not in given)])
