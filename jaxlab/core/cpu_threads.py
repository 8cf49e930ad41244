"""Threads for forced CPU devices (`--xla_force_host_platform_device_count`), without importing JAX.

Every forced CPU device of a process runs its programs on one shared pool of threads, sized by
the `NPROC` environment variable (default: the core count, or the device count when larger). A
collective blocks its thread until every device of its group arrives, and XLA may start several
independent collectives of one device at once (a layer scan's all-reduce beside an all-gather). On
a machine with fewer cores than forced devices, those blocked collectives can take every thread of
the pool, so the device that would complete them never runs: the program deadlocks, and XLA
aborts the process when its collective timeout runs out. Eight threads per forced device keep a
free thread for every device; idle threads cost nothing.
"""

from __future__ import annotations

import os

THREADS_PER_DEVICE = 8


def pool_size() -> int:
  """The size of XLA's CPU thread pool in this process: NPROC, or the cores it may run on (a
  trained model's last bits can depend on it, through how a large reduction is split over threads)."""
  return int(os.environ.get("NPROC") or len(os.sched_getaffinity(0)))


def forced_devices(xla_flags: str) -> int:
  """The device count `--xla_force_host_platform_device_count` asks for (the last copy wins), or 1."""
  count = 1
  for flag in xla_flags.split():
    if flag.startswith("--xla_force_host_platform_device_count="):
      count = int(flag.split("=", 1)[1])
  return count


def ensure(env=None) -> None:
  """Sizes the pool for the forced devices in `env`'s XLA_FLAGS (default: this process's
  environment) unless NPROC is already set. Call it before JAX creates its CPU client."""
  env = os.environ if env is None else env
  devices = forced_devices(env.get("XLA_FLAGS", ""))
  if devices > 1 and "NPROC" not in env:
    env["NPROC"] = str(max(os.cpu_count() or 1, THREADS_PER_DEVICE * devices))
