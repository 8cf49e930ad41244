"""Where one family's jitted program spends its time: lowering, compiling, and two calls, at any
batch and block, with XLA's memory analysis of the compiled program.

  python benchmarks/phases.py hidden_gems --runs 262144 --block 0   # one block per device
  python benchmarks/phases.py org_forms --size cpu                  # the size's runs, the platform's block

The program is the one `jaxlab.core.mesh.map_runs` calls for the first rows of the sweep, lowered
and compiled ahead of time (`mesh.runs_program`), then called on the size's rows.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import common  # noqa: E402

FAMILIES = ("org_forms", "hidden_gems", "proactive_memory", "harness_vs_brain")


def phases(family: str, size: str, runs: int | None = None, block: int | None = None, log=print) -> dict:
  """Seconds of each phase (`lower`, `compile`, `call0`, `call1`) and XLA's temporary bytes."""
  import jax
  from jaxlab.core import mesh
  fam = importlib.import_module(f"benchmarks.{family}")
  n = runs or fam.SIZES[size]["runs"]
  fn, rows, _ = fam.jax_sweep(size, n)
  m = mesh.make_mesh()
  block = common.block_for_platform() if block is None else block
  program, abstract = mesh.runs_program(fn, rows, m, block)
  out, t0 = {}, time.perf_counter()

  def stamp(name):
    nonlocal t0
    out[name] = time.perf_counter() - t0
    log(f"{name:8s} {family} {n} runs, block {block}: {out[name]:.2f} s")
    t0 = time.perf_counter()

  lowered = program.lower(*abstract)
  stamp("lower")
  compiled = lowered.compile()
  stamp("compile")
  memory = compiled.memory_analysis()
  out["temp_bytes"] = getattr(memory, "temp_size_in_bytes", None)
  padded = jax.tree.leaves(abstract[0])[0].shape[0]
  args = mesh.shard_rows(mesh.pad_rows(rows, padded), m)
  blocks = 1 if block == 0 else padded // (m.size * block)
  count = mesh.shard_rows(np.full(m.size, blocks, np.int32), m)
  for i in range(2):
    jax.block_until_ready(compiled(args, count))
    stamp(f"call{i}")
  log(f"XLA temporaries: {out['temp_bytes'] / 1e9:.2f} GB" if out["temp_bytes"] is not None else "")
  return out


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("family", choices=FAMILIES)
  parser.add_argument("--size", choices=("tiny", "cpu", "gpu"), default="cpu")
  parser.add_argument("--runs", type=int, help="runs in the batch (default: the size's)")
  parser.add_argument("--block", type=int, help="rows a device computes at once; 0: all of its rows "
                      "(default: the platform's)")
  args = parser.parse_args(argv)
  phases(args.family, args.size, args.runs, args.block)


if __name__ == "__main__":
  main()
