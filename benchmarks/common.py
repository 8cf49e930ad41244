"""What every benchmark shares: its command line, device setup, timing and the printed ratio.

`start` must run before JAX is imported: on a CPU it forces one device per core, so the runs axis
is sharded over every core the way it is over the GPUs of a cluster.
"""

from __future__ import annotations

import argparse
import os
import time


def start(doc: str, sizes, add_arguments=None) -> argparse.Namespace:
  parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
  parser.add_argument("--size", choices=sorted(sizes), default="cpu")
  parser.add_argument("--cpu-devices", type=int, default=os.cpu_count(),
                      help="CPU devices to force (one per core shards the runs over all cores)")
  if add_arguments:
    add_arguments(parser)
  args = parser.parse_args()
  os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                             + f" --xla_force_host_platform_device_count={args.cpu_devices}")
  return args


def block_for_platform() -> int:
  """Rows a device vectorizes at once: CPUs like small blocks, accelerators take all their rows."""
  import jax
  return 32 if jax.devices()[0].platform == "cpu" else 0


def timed_twice(fn):
  """(result, seconds of the first call (compilation included), seconds of the second)."""
  t0 = time.perf_counter()
  fn()
  first = time.perf_counter() - t0
  t0 = time.perf_counter()
  out = fn()
  return out, first, time.perf_counter() - t0


def report(unit: str, jax_n: int, jax_s: float, compile_s: float | None, base_n: int, base_s: float,
           base: str = "numpy") -> None:
  """Prints both rates and their ratio; `base` names what jaxlab is measured against."""
  jax_rate, base_rate = jax_n / jax_s, base_n / base_s
  compiled = f"  (compile + first call {compile_s:.1f} s)" if compile_s is not None else ""
  print(f"{'jax':12s}: {jax_n:8d} {unit} in {jax_s:7.3f} s = {jax_rate:10.1f} {unit}/s{compiled}")
  print(f"{base:12s}: {base_n:8d} {unit} in {base_s:7.3f} s = {base_rate:10.1f} {unit}/s")
  print(f"{'ratio':12s}: {jax_rate / base_rate:.1f}x {unit} per second")
