"""Where a run came from and the machine kind it reproduces bitwise on.

`machine()` is the kind: backend, CPU architecture, the CPU's model and the vector extensions
XLA's CPU backend generates code for (capped by `--xla_cpu_max_isa`), or the accelerator model;
the XLA flags that change the code it emits (`codegen.flags`); jax and jaxlib versions.
`provenance()` adds the commit (and whether tracked code differed from it), the numeric
libraries' versions, the devices and the command line; `jaxlab run` writes it to the workdir
(`write`), and receipts compare it (`jaxlab/core/receipts.py`).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

from jaxlab.core import codegen, config as config_lib, cpu_threads
from jaxlab.core import report

REPO = config_lib.REPO
PROVENANCE = "provenance.json"
# x86 vector extensions that change what XLA's CPU backend emits (and so the last bits), in the
# order of `--xla_cpu_max_isa`'s levels: a cap drops every extension above it.
_ISA = ("avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "amx_tile")
_ISA_CAPS = {"SSE4_2": 0, "AVX": 1, "AVX2": 3, "AVX512": 8, "AVX512_VNNI": 8, "AVX512_BF16": 8, "AMX": 9}
VERSIONS = ("jaxlab", "jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "mujoco", "mujoco-mjx", "evosax", "numpy")


def max_isa() -> str | None:
  """The `--xla_cpu_max_isa` cap in XLA_FLAGS, if any (the last one given wins, as in XLA)."""
  found = re.findall(r"--xla_cpu_max_isa=(\S+)", os.environ.get("XLA_FLAGS", ""))
  return found[-1].upper() if found else None


def _cpuinfo() -> dict[str, str]:
  """The first processor's fields in /proc/cpuinfo ({} where it cannot be read)."""
  try:
    text = Path("/proc/cpuinfo").read_text()
  except OSError:
    return {}
  fields = {}
  for line in text.splitlines():
    key, sep, value = line.partition(":")
    if sep:
      fields.setdefault(key.strip(), value.strip())
  return fields


def _cpu_flags() -> list[str]:
  return _cpuinfo().get("flags", "").split()


def cpu_model() -> str:
  return _cpuinfo().get("model name") or platform.processor()


def cpu_isa() -> list[str]:
  """The vector extensions XLA's CPU backend generates code for: the CPU's, capped by
  `--xla_cpu_max_isa` when XLA_FLAGS sets it."""
  flags = set(_cpu_flags())
  found = [f for f in _ISA if f in flags]
  cap = max_isa()
  if cap in _ISA_CAPS:
    found = [f for f in found if _ISA.index(f) < _ISA_CAPS[cap]]
  return found


def cpu_kind() -> str | None:
  """The CPU's vendor, family and model (/proc/cpuinfo), or None where it cannot be read. Two
  CPUs with the same vector extensions can still round differently (another microarchitecture:
  LLVM's tuning for it, the cache sizes a library blocks a product by), so a bitwise receipt
  holds on its own CPU model only."""
  fields = _cpuinfo()
  parts = [fields.get("vendor_id"), fields.get("cpu family"), fields.get("model")]
  return None if None in parts else f"{parts[0]} family {parts[1]} model {parts[2]}"


HARDWARE = ("backend", "arch", "cpu_kind", "cpu_features", "xla_cpu_max_isa", "xla_codegen", "device_kind")


def kind_differences(recorded: dict, here: dict, recorded_cpu: str | None = None) -> list[str]:
  """The fields in which machine kind `here` differs from `recorded`. A CPU kind recorded before
  the CPU's model was part of it is compared by the CPU's name in its provenance (`recorded_cpu`)."""
  recorded = dict(recorded)
  if recorded.get("backend") == "cpu" and "cpu_kind" not in recorded:
    recorded["cpu_kind"] = here.get("cpu_kind") if recorded_cpu == cpu_model() else recorded_cpu
  return sorted(k for k in set(recorded) | set(here) if recorded.get(k) != here.get(k))


def machine(made: dict | None = None) -> dict:
  """The machine kind a deterministic run reproduces bitwise on: this machine's, with the XLA flags
  that change code that the run's provenance `made` recorded (this process's where it recorded none)."""
  import jax
  import jaxlib

  device = jax.devices()[0]
  kind = {"backend": jax.default_backend(), "arch": platform.machine(), "jax": jax.__version__,
          "jaxlib": jaxlib.__version__}
  if device.platform == "cpu":
    kind["cpu_kind"] = cpu_kind()
    kind["cpu_features"] = cpu_isa()
    if max_isa():
      kind["xla_cpu_max_isa"] = max_isa()
  else:
    kind["device_kind"] = device.device_kind
  code_flags = (made or {}).get("xla_codegen")
  code_flags = codegen.flags() if code_flags is None else code_flags
  flags = sorted({f for f in code_flags if not f.startswith("--xla_cpu_max_isa")})
  if flags:   # absent as in the receipts made before it was part of the kind: XLA's default code
    kind["xla_codegen"] = flags
  return kind


def git(*args) -> str | None:
  try:
    out = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=30)
  except (OSError, subprocess.SubprocessError):
    return None
  return out.stdout.strip() if out.returncode == 0 else None


def _version(name: str) -> str | None:
  try:
    return importlib.metadata.version(name)
  except importlib.metadata.PackageNotFoundError:
    return None


def provenance(argv=None) -> dict:
  """Where a run came from: commit (and whether tracked code differed from it), package versions,
  device, CPU and the instruction set XLA used, and the command line."""
  import jax

  commit = git("rev-parse", "HEAD")
  # Dirty: a tracked file that can change a result differs from the commit (receipts and docs cannot).
  status = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results", ":(exclude)docs",
               ":(exclude)*.md")
  device = jax.devices()[0]
  return {"commit": commit, "dirty": None if status is None else bool(status),
          "versions": {name: _version(name) for name in VERSIONS},
          "python": platform.python_version(), "device": f"{device.platform}: {device.device_kind}",
          "devices": jax.device_count(), "processes": jax.process_count(), "cpu": cpu_model(),
          "cpu_isa": cpu_isa(), "xla_cpu_max_isa": max_isa(), "xla_codegen": codegen.flags(),
          "cpu_threads": cpu_threads.pool_size(),
          "command": " ".join(["jaxlab", *(sys.argv[1:] if argv is None else argv)])}


def write(workdir, argv=None) -> None:
  report.write_json(Path(workdir) / PROVENANCE, provenance(argv))


def read(workdir) -> dict | None:
  """The provenance `jaxlab run` wrote to `workdir`, or None where it wrote none."""
  path = Path(workdir) / PROVENANCE
  return json.loads(path.read_text()) if path.is_file() else None
