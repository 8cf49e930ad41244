"""The developmental `gpu` variant on an H200, estimated before any run on one: the work of its fused
MJX chunk program against the chip's roofline.

  python benchmarks/developmental_estimate.py --json out.json   # the gpu variant (compiles 2-4 min on 2 cores)
  python benchmarks/developmental_estimate.py --size tiny       # the MJX smoke run's size (about 4 min)

The program is the one `benchmarks/export.py` lowers for cuda and tpu (developmental/fused.py, the whole
population, one chunk of play and learning), compiled here for this CPU. Its work is XLA's cost
analysis with every loop body weighted by its trip count (roofline.loop_weighted_cost). MJX's solver
loops run until their contacts converge, a count XLA does not know: the lower bound counts each once,
the upper bound at the solver's iteration limit (physics.mjx_iterations; a line search inside a
Newton step at that limit too). The roofline time is max(FLOPs / peak, bytes / bandwidth) at the
H200's float32 rate without tensor cores and its HBM bandwidth (NVIDIA's H200 SXM datasheet); XLA
charges every fused op's operands and result as memory traffic, and a GPU fuses differently, so the
bytes are this CPU program's. A roofline time is the least time the work can take: real MJX runs
slower (many small kernels, a batched solver that waits for its slowest env). This CPU's own
roofline for the same work (docs/roofline.json's 2-core figures) is printed beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

H200 = {"name": "NVIDIA H200 SXM", "peak_gflop_s": 67_000.0, "bandwidth_gb_s": 4_800.0}
SIZES = {"gpu": ("gpu", []), "tiny": ("smoke", ["--config.backend=mjx"])}
ROOFLINE_JSON = Path(__file__).resolve().parents[1] / "docs" / "roofline.json"


def this_cpu() -> dict | None:
  """The all-cores machine figures of docs/roofline.json (None when it is missing)."""
  if not ROOFLINE_JSON.exists():
    return None
  found = json.loads(ROOFLINE_JSON.read_text())
  setting = max(found["settings"], key=lambda s: s["cores"])
  return {"name": f"{found['machine']['cpu']}, {setting['label']} (docs/roofline.json)",
          "peak_gflop_s": setting["machine"]["peak_gflop_s"], "bandwidth_gb_s": setting["machine"]["bandwidth_gb_s"]}


def roofline_seconds(flops: float, nbytes: float, chip: dict) -> float:
  return max(flops / (chip["peak_gflop_s"] * 1e9), nbytes / (chip["bandwidth_gb_s"] * 1e9))


def estimate(size: str) -> dict:
  """Work per chunk and per interaction of the variant's fused program, and its roofline times."""
  import jax
  from benchmarks import export, roofline
  from jaxlab.core import config as config_lib
  from jaxlab.developmental import experiment

  variant, overrides = SIZES[size]
  config = config_lib.load(f"configs/developmental.py:{variant}", overrides, experiment.validate)
  t0 = time.perf_counter()
  fn, args, _, _ = export.developmental_program(size, (variant, overrides))
  compiled = fn.lower(*args).compile()
  compile_s = time.perf_counter() - t0
  devices = jax.device_count()
  limit = experiment.physics_config(config).mjx_iterations
  low, high = roofline.loop_weighted_cost(compiled), roofline.loop_weighted_cost(compiled, inner_trips=limit)
  p = config.play
  runs = len(experiment.runs_table(config)["seed"])
  per_chunk = p.episodes_per_chunk * p.episode_rounds * p.envs * runs
  total = p.episodes * p.episode_rounds * p.envs * runs
  out = {"variant": variant, "overrides": overrides, "runs": runs, "envs": p.envs, "devices": devices,
         "interactions_per_chunk": per_chunk, "interactions": total, "compile_s": round(compile_s, 1),
         "solver_limit": limit, "uncounted_loops": low["uncounted_loops"], "chips": {}}
  for bound, cost in (("low", low), ("high", high)):
    # cost analysis is per device; every device runs the same program on its share of the runs
    out[f"flops_{bound}"] = cost["flops"] * devices
    out[f"bytes_{bound}"] = cost["bytes accessed"] * devices
  for chip in filter(None, (H200, this_cpu())):
    row = {}
    for bound in ("low", "high"):
      chunk = roofline_seconds(out[f"flops_{bound}"], out[f"bytes_{bound}"], chip)
      row[f"us_per_interaction_{bound}"] = 1e6 * chunk / per_chunk
      row[f"run_s_{bound}"] = chunk * total / per_chunk
    out["chips"][chip["name"]] = {**chip, **row}
  return out


def text(r: dict) -> str:
  lines = [f"developmental:{r['variant']} {' '.join(r['overrides'])}: {r['runs']} runs x {r['envs']:,} envs, "
           f"{r['interactions']:,} interactions; fused chunk program compiled for {r['devices']} CPU device(s) "
           f"in {r['compile_s']} s; {r['uncounted_loops']} loops without a known trip count "
           f"(counted once, and at the solver's limit of {r['solver_limit']})",
           f"work per interaction: {r['flops_low'] / r['interactions_per_chunk']:,.0f}-"
           f"{r['flops_high'] / r['interactions_per_chunk']:,.0f} FLOPs, "
           f"{r['bytes_low'] / r['interactions_per_chunk']:,.0f}-"
           f"{r['bytes_high'] / r['interactions_per_chunk']:,.0f} bytes"]
  for name, c in r["chips"].items():
    lines.append(f"{name} ({c['peak_gflop_s']:,.0f} GFLOP/s, {c['bandwidth_gb_s']:,.0f} GB/s): at least "
                 f"{c['us_per_interaction_low']:.3g}-{c['us_per_interaction_high']:.3g} us per interaction, "
                 f"{c['run_s_low']:.3g}-{c['run_s_high']:.3g} s for the run")
  return "\n".join(lines)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--size", choices=sorted(SIZES), default="gpu")
  parser.add_argument("--json", help="also write the figures here")
  args = parser.parse_args(argv)
  os.environ.setdefault("JAX_PLATFORMS", "cpu")
  result = estimate(args.size)
  print(text(result))
  if args.json:
    Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
  main()
